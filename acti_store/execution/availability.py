"""Which of an agent's tool categories a run can use, and the reports when it cannot run without.

A category is unavailable when the MCP catalog does not know it, when its variables are unset
(``check_categories``, before any server starts), or when its server fails to start or to answer
(``server_failure``). A run that may not go on without one ends with ``missing_tools`` (before
any server starts: not a run) or ``mcp_error`` (a server failed: a run, recorded).
"""

from __future__ import annotations

import logging

from . import texts
from .outcome import Outcome, RunState
from .results import (
    MCP_CONNECTION_ERROR,
    MCP_ERROR,
    MCP_TIMEOUT_ERROR,
    ExecutionResult,
    Unavailable,
    describe_error,
)

# The run's log lines keep the runner's name (where logging setups look for them).
logger = logging.getLogger("acti_store.execution.runner")


def check_categories(state: RunState) -> None:
    """Add to ``state.unavailable`` each category of the agent the catalog does not know, or
    whose variables are unset in the run's environment."""
    for category in state.agent.tools:
        spec = state.spec(category)
        if spec is None:
            logger.warning(
                "agent %r asks for tool category %r, which the MCP catalog does not know: skipped",
                state.agent.name,
                category,
            )
            state.unavailable.append(
                Unavailable(category, "not_configured", texts.REASON_NOT_CONFIGURED)
            )
        elif missing := spec.missing_env(state.environ):
            state.unavailable.append(
                Unavailable(
                    category, "credentials", texts.reason_credentials(missing), tuple(missing)
                )
            )


def missing_tools(state: RunState, calls: texts.RunCalls) -> Outcome:
    """The report of a run refused because categories it requires are unavailable (not a run)."""
    result = state.result(
        success=False,
        error="required tools unavailable: " + ", ".join(u.category for u in state.unavailable),
        error_type=MCP_ERROR,
    )
    name, unavailable, commands = state.agent.name, list(state.unavailable), state.commands
    return Outcome(
        result,
        lambda _: texts.render_missing_tools(name, unavailable, commands, calls),
        recorded=False,
    )


def server_failure(state: RunState, category: str, error: BaseException) -> Unavailable:
    """``category`` unavailable because its server did not start or answer in time (``error``)."""
    if isinstance(error, TimeoutError):
        reason = texts.REASON_TIMEOUT.format(seconds=state.connect_timeout)
        failure = Unavailable(category, "timeout", reason)
    else:
        reason = texts.REASON_CONNECTION.format(error=state.scrub(describe_error(error)))
        failure = Unavailable(category, "connection", reason)
    logger.warning("MCP server of %r (agent %r): %s", category, state.agent.name, failure.reason)
    return failure


def mcp_error(state: RunState, failures: list[Unavailable], calls: texts.RunCalls) -> Outcome:
    """The report of a run ended because servers it requires failed (``failures``)."""
    timed_out = any(f.kind == "timeout" for f in failures)
    result = state.result(
        success=False,
        tools_unavailable=[f.category for f in [*state.unavailable, *failures]],
        error="; ".join(f"{f.category}: {f.reason}" for f in failures),
        error_type=MCP_ERROR,
    )
    providers, commands = state.providers, state.commands

    def render(r: ExecutionResult) -> str:
        return texts.render_mcp_error(
            r,
            failures,
            providers=providers,
            commands=commands,
            connect_timeout=state.connect_timeout,
            timeout=state.timeout,
            calls=calls,
        )

    name = MCP_TIMEOUT_ERROR if timed_out else MCP_CONNECTION_ERROR
    return Outcome(result, render, error_name=name)
