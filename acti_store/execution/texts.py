"""The texts of ``execute_created_agent``: each template defined once, here.

The success, degraded, missing-tool, timeout and execution-error texts are the contract's, word for
word. The MCP connection/timeout and model texts are ours, written in the contract's style. What a
text tells the reader to do next is a ``RunCalls``: tool calls for the model (``TOOL_RUN_CALLS``,
the contract's words), ``acti-store`` commands for a person (``CLI_RUN_CALLS``, ``acti-store run``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..models import TIMEOUT_MAX
from .results import ExecutionResult, ToolCallRecord, Unavailable


@dataclass(frozen=True)
class RunCalls:
    """What a run's error texts tell the reader to do next, in the reader's terms.

    ``longer_timeout`` takes ``{name}`` and ``{longer}``; ``review`` and ``other_model`` take
    ``{name}``; the others are whole sentences (``tool_status``) or steps.
    """

    longer_timeout: str
    review: str
    other_model: str
    tool_status: str
    server_health: str
    skip: str

    def fill(self, name: str, longer: float) -> dict[str, str]:
        """The fields, filled in for the agent ``name`` and the ``longer`` timeout proposed."""
        return {
            "longer_timeout": self.longer_timeout.format(name=name, longer=longer),
            "review": self.review.format(name=name),
            "other_model": self.other_model.format(name=name),
            "tool_status": self.tool_status,
            "server_health": self.server_health,
            "skip": self.skip,
        }


#: The model's terms: the contract's tool calls.
TOOL_RUN_CALLS: Final = RunCalls(
    longer_timeout="execute_created_agent(..., timeout={longer:.1f})",
    review="get_agent_config('{name}')",
    other_model="update_agent_config('{name}', model='provider:model')",
    tool_status="Use list_available_tools() to check current tool status.",
    server_health="Check MCP server health with /tools command",
    skip="Or use skip_unavailable_tools=True to run with available tools only",
)
#: A person's terms: ``acti-store`` commands and options (names are snake_case: no quoting).
CLI_RUN_CALLS: Final = RunCalls(
    longer_timeout='acti-store run {name} "TASK" --timeout {longer:.1f}',
    review="acti-store show {name}",
    other_model="acti-store update {name} --model PROVIDER:MODEL",
    tool_status="Check the MCP catalog (--mcp-config FILE, else $ACTI_STORE_MCP_CONFIG) for the "
    "categories' servers.",
    server_health="Check that the agent's MCP servers start (their commands are in the MCP "
    "catalog)",
    skip="Or leave out --no-skip-unavailable to run with the available tools only",
)

RULE: Final = "=" * 80
#: How much of a tool's result or error one trace line shows.
TRACE_RESULT_MAX: Final = 120

RESPONSE_BLOCK: Final = """\
Task: {task}

Agent Response:
{rule}
{response}
{rule}
"""

SUCCESS_HEADER: Final = "EXECUTION SUCCESS: Agent '{name}' completed task.\n\n"
DEGRADED_HEADER: Final = """\
WARNING: Some MCP tools unavailable, proceeding with available tools.

Unavailable tools:
{unavailable}
EXECUTION SUCCESS: Agent '{name}' completed task (degraded mode).

"""

DETAILS_HEADER: Final = "\nExecution Details:\n  Duration: {duration:.1f}s\n"
TOOL_CALLS_LINE: Final = "  Tool Calls: {count}\n"
NO_TOOL_CALLS_LINE: Final = "  Tool Calls: 0 (agent used internal knowledge)\n"
NO_TOOL_CALLS_DEGRADED_LINE: Final = "  Tool Calls: 0 ({unavailable} unavailable)\n"
TRACE_LINE: Final = "    {index}. {call}\n"
DEGRADED_TOOLS: Final = """\
  Tools Requested: {requested}
  Tools Available: {available}
  Tools Unavailable: {unavailable}
"""
TOOLS_USED: Final = "\nMCP Tools Used: {used}\n"
TOOLS_AVAILABLE_UNUSED: Final = "\nMCP Tools Available: {available} (not needed for this task)\n"
NO_TOOLS_CONFIGURED: Final = "\nMCP Tools Available: none (the agent has no tool categories)\n"
DEGRADED_NOTE: Final = "\nNote: Agent ran in degraded mode. {fix} to enable full functionality.\n"

UNAVAILABLE_LINE: Final = "  - {category}: {reason}\n"
REASON_CREDENTIALS: Final = "Missing credentials ({variables} not set)"
REASON_NOT_CONFIGURED: Final = "No MCP server configured for this category"
REASON_CONNECTION: Final = "MCP server failed to start ({error})"
REASON_TIMEOUT: Final = "MCP server did not respond within {seconds:.1f}s"

MISSING_TOOLS: Final = """\
ERROR: Cannot execute agent '{name}' - required tools unavailable.

Missing tools:
{unavailable}
To fix this:
{steps}
{tool_status}
"""
STEP_SET_VARIABLE: Final = "Set the required environment variable: {variables}"
STEP_SET_VARIABLES: Final = "Set the required environment variables: {variables}"
STEP_CONFIGURE: Final = (
    "Configure an MCP server for {categories} in the MCP catalog (ACTI_STORE_MCP_CONFIG)"
)
STEP_CHECK_SERVER: Final = "Check that the MCP server starts: {command}"
STEP_LINE: Final = "  {index}. {step}\n"

TIMEOUT_ERROR: Final = """\
ERROR: Agent execution timed out after {timeout:.1f} seconds.

Task: {task}

The agent did not complete within the specified timeout. This may happen for:
  - Complex tasks requiring multiple tool calls
  - Slow network connections to MCP servers
  - Large data processing operations

Suggestions:
  1. Increase timeout: {longer_timeout}
  2. Simplify the task into smaller sub-tasks
  3. {server_health}
"""

EXECUTION_ERROR: Final = """\
ERROR: Agent '{name}' encountered an error during execution.

Task: {task}

Error: {error}

Partial execution details:
  Duration before error: {duration:.1f}s
  Tool Calls Attempted: {count}
{trace}
The agent configuration may need adjustment, or the task input was malformed.
Use {review} to review the agent's configuration.
"""

MCP_CONNECTION_ERROR: Final = """\
ERROR: Cannot execute agent '{name}' - MCP server connection failed.

Task: {task}

Failed servers:
{failures}
Error type: MCPConnectionError

To fix this:
{steps}
{tool_status}
"""

MCP_TIMEOUT_ERROR: Final = """\
ERROR: Cannot execute agent '{name}' - MCP server connection timed out after {seconds:.1f} \
seconds.

Task: {task}

Unresponsive servers:
{failures}
Error type: MCPTimeoutError

To fix this:
{steps}
{tool_status}
"""
STEP_LONGER_TIMEOUT: Final = (
    "Increase timeout: {longer_timeout}; the first start of an npx or uvx server downloads its "
    "package"
)

MODEL_UNAVAILABLE: Final = """\
ERROR: Cannot execute agent '{name}' - model unavailable.

Model: {model}
Problem: {problem}

To fix this:
  1. {fix}
  2. Or choose another model: {other_model}
"""
MODEL_MISSING_KEY: Final = "Missing credentials ({variables} not set)"
MODEL_FIX_KEY: Final = "Set the required environment variable: {variable}"
MODEL_FIX_INSTALL: Final = (
    "Install the provider's LangChain integration package (e.g. pip install langchain-openai)"
)
MODEL_FIX_NAME: Final = "Check the model identifier: it must be provider:model, e.g. '{example}'"

TOOL_NOT_ENABLED: Final = (
    "Error: tool '{tool}' is not enabled for agent '{name}'. Enabled tools: {enabled}."
)
TOOL_FAILED: Final = "Error: tool '{tool}' failed: {error}"


# --------------------------------------------------------------------------------------------------
# Pieces
# --------------------------------------------------------------------------------------------------


def _one_line(text: str, limit: int = TRACE_RESULT_MAX) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def format_arguments(arguments: Mapping[str, Any]) -> str:
    """``company="Acme Corp", limit=5``: each value as JSON."""
    return ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
        for key, value in arguments.items()
    )


def format_call(call: ToolCallRecord) -> str:
    """``name(args) -> result`` or ``name(args) -> ERROR: ...``."""
    head = f"{call.tool_name}({format_arguments(call.arguments)})"
    if call.error is not None:
        return f"{head} -> ERROR: {_one_line(call.error)}"
    if call.result:
        return f"{head} -> {_one_line(call.result)}"
    return head


def _trace(calls: Sequence[ToolCallRecord]) -> str:
    return "".join(
        TRACE_LINE.format(index=index, call=format_call(call))
        for index, call in enumerate(calls, start=1)
    )


def _unavailable_lines(unavailable: Sequence[Unavailable]) -> str:
    return "".join(
        UNAVAILABLE_LINE.format(category=u.category, reason=u.reason) for u in unavailable
    )


def _steps(steps: Sequence[str]) -> str:
    return "".join(STEP_LINE.format(index=i, step=step) for i, step in enumerate(steps, start=1))


def _missing_variables(unavailable: Sequence[Unavailable]) -> list[str]:
    return list(dict.fromkeys(name for u in unavailable for name in u.missing_env))


def longer_timeout(timeout: float) -> float:
    """The timeout a suggestion proposes: twice as long, within the contract's limit."""
    return min(timeout * 2, TIMEOUT_MAX)


def reason_credentials(variables: Sequence[str]) -> str:
    return REASON_CREDENTIALS.format(variables=", ".join(variables))


# --------------------------------------------------------------------------------------------------
# Whole texts
# --------------------------------------------------------------------------------------------------


def render_success(
    result: ExecutionResult,
    *,
    requested: Sequence[str],
    unavailable: Sequence[Unavailable],
    providers: Mapping[str, str],
) -> str:
    """Success with or without tool calls, in full or degraded mode."""
    available = [c for c in requested if c not in {u.category for u in unavailable}]
    calls = result.tool_calls
    text = (
        DEGRADED_HEADER.format(name=result.agent_name, unavailable=_unavailable_lines(unavailable))
        if result.degraded_mode
        else SUCCESS_HEADER.format(name=result.agent_name)
    )
    text += RESPONSE_BLOCK.format(task=result.task, rule=RULE, response=result.response or "")
    text += DETAILS_HEADER.format(duration=result.duration_seconds)
    if calls:
        text += TOOL_CALLS_LINE.format(count=len(calls)) + _trace(calls)
    elif result.degraded_mode:
        text += NO_TOOL_CALLS_DEGRADED_LINE.format(unavailable=", ".join(result.tools_unavailable))
    else:
        text += NO_TOOL_CALLS_LINE
    used = ", ".join(f"{c} ({providers.get(c, c)})" for c in result.tools_used)
    if result.degraded_mode:
        text += DEGRADED_TOOLS.format(
            requested=", ".join(requested),
            available=", ".join(available) or "none",
            unavailable=", ".join(result.tools_unavailable),
        )
        if used:
            text += TOOLS_USED.format(used=used)
        return text + DEGRADED_NOTE.format(fix=_degraded_fix(unavailable))
    if used:
        return text + TOOLS_USED.format(used=used)
    if available:
        return text + TOOLS_AVAILABLE_UNUSED.format(available=", ".join(available) or "none")
    return text + NO_TOOLS_CONFIGURED


def _degraded_fix(unavailable: Sequence[Unavailable]) -> str:
    parts = []
    variables = _missing_variables(unavailable)
    if variables:
        parts.append(f"set {', '.join(variables)}")
    unconfigured = [u.category for u in unavailable if u.kind == "not_configured"]
    if unconfigured:
        parts.append(f"configure an MCP server for {', '.join(unconfigured)}")
    failing = [u.category for u in unavailable if u.kind in ("connection", "timeout")]
    if failing:
        parts.append(f"check the MCP server for {', '.join(failing)}")
    fix = " and ".join(parts)
    return fix[:1].upper() + fix[1:]


def render_missing_tools(
    name: str,
    unavailable: Sequence[Unavailable],
    commands: Mapping[str, str],
    calls: RunCalls = TOOL_RUN_CALLS,
) -> str:
    """``skip_unavailable_tools=False`` and some category is unavailable."""
    steps = []
    variables = _missing_variables(unavailable)
    if variables:
        template = STEP_SET_VARIABLE if len(variables) == 1 else STEP_SET_VARIABLES
        steps.append(template.format(variables=", ".join(variables)))
    unconfigured = [u.category for u in unavailable if u.kind == "not_configured"]
    if unconfigured:
        steps.append(STEP_CONFIGURE.format(categories=", ".join(unconfigured)))
    for u in unavailable:
        if u.kind in ("connection", "timeout") and u.category in commands:
            steps.append(STEP_CHECK_SERVER.format(command=commands[u.category]))
    steps.append(calls.skip)
    return MISSING_TOOLS.format(
        name=name,
        unavailable=_unavailable_lines(unavailable),
        steps=_steps(steps),
        tool_status=calls.tool_status,
    )


def render_mcp_error(
    result: ExecutionResult,
    failures: Sequence[Unavailable],
    *,
    providers: Mapping[str, str],
    commands: Mapping[str, str],
    connect_timeout: float,
    timeout: float,
    calls: RunCalls = TOOL_RUN_CALLS,
) -> str:
    """A server failed to start (MCPConnectionError) or did not answer (MCPTimeoutError)."""
    filled = calls.fill(result.agent_name, longer_timeout(timeout))
    lines = "".join(
        UNAVAILABLE_LINE.format(
            category=f"{u.category} ({providers.get(u.category, u.category)})", reason=u.reason
        )
        for u in failures
    )
    steps = [
        STEP_CHECK_SERVER.format(command=commands[u.category])
        for u in failures
        if u.category in commands
    ]
    if any(u.kind == "timeout" for u in failures):
        steps.insert(0, STEP_LONGER_TIMEOUT.format(**filled))
        steps.append(calls.skip)
        return MCP_TIMEOUT_ERROR.format(
            name=result.agent_name,
            task=result.task,
            seconds=connect_timeout,
            failures=lines,
            steps=_steps(steps),
            tool_status=calls.tool_status,
        )
    steps.append(calls.skip)
    return MCP_CONNECTION_ERROR.format(
        name=result.agent_name,
        task=result.task,
        failures=lines,
        steps=_steps(steps),
        tool_status=calls.tool_status,
    )


def render_timeout(
    result: ExecutionResult, timeout: float, calls: RunCalls = TOOL_RUN_CALLS
) -> str:
    return TIMEOUT_ERROR.format(
        timeout=timeout,
        task=result.task,
        **calls.fill(result.agent_name, longer_timeout(timeout)),
    )


def render_execution_error(result: ExecutionResult, calls: RunCalls = TOOL_RUN_CALLS) -> str:
    return EXECUTION_ERROR.format(
        review=calls.review.format(name=result.agent_name),
        name=result.agent_name,
        task=result.task,
        error=result.error or "unknown error",
        duration=result.duration_seconds,
        count=len(result.tool_calls),
        trace=_trace(result.tool_calls),
    )


def render_model_unavailable(
    name: str, model: str, problem: str, fix: str, calls: RunCalls = TOOL_RUN_CALLS
) -> str:
    return MODEL_UNAVAILABLE.format(
        name=name,
        model=model,
        problem=problem,
        fix=fix,
        other_model=calls.other_model.format(name=name),
    )
