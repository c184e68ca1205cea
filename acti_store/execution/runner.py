"""``AgentRunner``: run a stored agent with its MCP tools, report and record the run.

The flow is the contract's ("Behavior Flow" of ``execute_created_agent``):

1. the caller loads the agent (and handles "not found");
2. the model is set up (its API key checked first), and each tool category of the agent is checked
   against the MCP catalog: a category whose variables are unset is unavailable;
3. unavailable categories either fail the run (``skip_unavailable_tools=False``) or degrade it;
4. the servers of the available categories are started, in parallel, and ONE session per server is
   held for the whole run (each by its own task, so the MCP SDK's cancel scopes stay in the task
   that opened them); a server that fails to start or does not answer is an MCP error, or one more
   unavailable category in degraded mode;
5. a deep agent is built with only those tools; a tool call to anything else is refused;
6. the task runs within what is left of the timeout; the servers are stopped whatever happens.

Every run that gets past step 3 is recorded in the agent's history, which moves its counters.
Credentials reach only their own category's server, and their values are scrubbed from every text,
artifact, history record and log line.

The parts a run uses live beside this module: ``redaction`` (the ``Scrubber``), ``servers`` (the
``ServerPool``), ``gate`` (the ``ToolGate`` middleware), ``texts`` and ``results``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from deepagents import create_deep_agent
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool

from ..errors import AgentStoreError
from ..models import DEFAULT_MODEL, TIMEOUT_DEFAULT, Agent, ExecutionRecord, ExecutionRequest
from ..repository import AgentRepository
from . import texts
from .catalog import CategorySpec, McpCatalog
from .gate import ToolGate
from .redaction import MODEL_API_KEYS, REDACTED, Scrubber, model_key_values
from .results import (
    EXECUTION_ERROR,
    EXECUTION_ERROR_NAME,
    EXECUTION_TIMEOUT,
    MCP_CONNECTION_ERROR,
    MCP_ERROR,
    MCP_TIMEOUT_ERROR,
    MODEL_ERROR,
    TIMEOUT,
    ExecutionResult,
    RunReport,
    Unavailable,
    describe_error,
)
from .servers import ServerPool

logger = logging.getLogger(__name__)

ModelFactory = Callable[[str], BaseChatModel]

#: By default connecting the servers may use this share of the run's timeout, and at most
#: CONNECT_TIMEOUT_MAX seconds, so that a hanging server still leaves time to run in degraded mode.
CONNECT_TIMEOUT_SHARE: Final = 0.5
CONNECT_TIMEOUT_MAX: Final = 30.0


@dataclass
class _Run:
    """What one run has learnt so far, for the texts and the record."""

    agent: Agent
    task: str
    timeout: float
    scrub: Scrubber
    environ: Mapping[str, str]
    catalog: McpCatalog
    timestamp: datetime
    connect_limit: float | None = None
    started: float = field(default_factory=time.perf_counter)
    unavailable: list[Unavailable] = field(default_factory=list)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def connect_timeout(self) -> float:
        if self.connect_limit is not None:
            return min(self.connect_limit, self.timeout)
        return min(self.timeout * CONNECT_TIMEOUT_SHARE, CONNECT_TIMEOUT_MAX)

    def spec(self, category: str) -> CategorySpec | None:
        return self.catalog.get(category)

    @property
    def providers(self) -> dict[str, str]:
        return {c: s.provider for c in self.agent.tools if (s := self.spec(c)) is not None}

    @property
    def commands(self) -> dict[str, str]:
        return {c: s.describe() for c in self.agent.tools if (s := self.spec(c)) is not None}

    def result(self, **fields: Any) -> ExecutionResult:
        fields.setdefault("duration_seconds", round(self.elapsed, 3))
        fields.setdefault("tools_unavailable", [u.category for u in self.unavailable])
        return ExecutionResult(agent_name=self.agent.name, task=self.task, **fields)


class AgentRunner:
    """Runs stored agents with their MCP tools, and records each run in the agent's history.

    ``model``: a chat model used for every run, or a callable taking the agent's model string and
    returning one; by default the agent's model string goes to ``init_chat_model`` after its
    provider's API key is checked. ``catalog``: an ``McpCatalog``, a path to a TOML catalog, or
    ``None`` (``$ACTI_STORE_MCP_CONFIG``, else the default public servers). ``connect_timeout``:
    how long the servers may take to start, within the run's timeout (default: half of it, at
    most 30 s); a server that takes longer is an MCPTimeoutError, or unavailable in degraded mode.
    """

    def __init__(
        self,
        repo: AgentRepository,
        *,
        model: BaseChatModel | ModelFactory | None = None,
        catalog: McpCatalog | str | os.PathLike[str] | None = None,
        connect_timeout: float | None = None,
    ) -> None:
        if connect_timeout is not None and connect_timeout <= 0:
            raise ValueError("connect_timeout must be positive")
        self._repo = repo
        self._model = model
        self._catalog = McpCatalog.load(catalog)
        self._connect_timeout = connect_timeout

    @property
    def catalog(self) -> McpCatalog:
        return self._catalog

    def run_sync(
        self,
        agent: Agent,
        task: str,
        *,
        timeout: float | None = TIMEOUT_DEFAULT,
        skip_unavailable_tools: bool = True,
    ) -> RunReport:
        """``run``, from synchronous code; in a worker thread when this thread runs a loop."""

        def run() -> RunReport:
            return asyncio.run(
                self.run(
                    agent, task, timeout=timeout, skip_unavailable_tools=skip_unavailable_tools
                )
            )

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return run()
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(run).result()

    async def run(
        self,
        agent: Agent,
        task: str,
        *,
        timeout: float | None = TIMEOUT_DEFAULT,
        skip_unavailable_tools: bool = True,
    ) -> RunReport:
        """Run ``task`` with ``agent`` and its MCP tools; return the contract's report.

        Raises ``ValueError`` (pydantic's ``ValidationError``) only for arguments outside the
        contract's ranges, checked by ``ExecutionRequest`` (callers validate those first); every
        other problem is a report with ``success`` false.
        """
        request = ExecutionRequest(
            task=task,
            timeout=TIMEOUT_DEFAULT if timeout is None else timeout,
            skip_unavailable_tools=skip_unavailable_tools,
        )
        environ = dict(os.environ)
        state = _Run(
            agent=agent,
            task=request.task,
            timeout=request.timeout,
            scrub=Scrubber([*self._catalog.secret_values(environ), *model_key_values(environ)]),
            environ=environ,
            catalog=self._catalog,
            timestamp=self._repo.now(),
            connect_limit=self._connect_timeout,
        )
        report = await self._run(state, request.skip_unavailable_tools)
        if report.record is not None:
            try:
                await asyncio.to_thread(self._repo.record_execution, agent.name, report.record)
            except AgentStoreError as exc:
                logger.error(
                    "run of agent %r not recorded: %s", agent.name, state.scrub(describe_error(exc))
                )
                return replace(report, record=None)
        return report

    async def _run(self, state: _Run, skip_unavailable_tools: bool) -> RunReport:
        agent = state.agent
        model = self._resolve_model(state)
        if isinstance(model, RunReport):
            return model
        self._check_categories(state)
        if state.unavailable and not skip_unavailable_tools:
            result = state.result(
                success=False,
                error="required tools unavailable: "
                + ", ".join(u.category for u in state.unavailable),
                error_type=MCP_ERROR,
            )
            unavailable, commands = list(state.unavailable), state.commands
            return self._finish(
                state,
                result,
                lambda _: texts.render_missing_tools(agent.name, unavailable, commands),
                recorded=False,
            )

        async with ServerPool() as pool:
            skipped = {u.category for u in state.unavailable}
            connections = {
                category: spec.connection_for(state.environ)
                for category in agent.tools
                if category not in skipped and (spec := state.spec(category)) is not None
            }
            tools_by_category, errors = await pool.start(connections, state.connect_timeout)
            failures = [self._failure(state, c, errors[c]) for c in connections if c in errors]
            if failures and not skip_unavailable_tools:
                return self._mcp_error(state, failures)
            state.unavailable.extend(failures)
            return await self._execute(state, model, tools_by_category)

    # -- steps -------------------------------------------------------------------------------------

    def _resolve_model(self, state: _Run) -> BaseChatModel | RunReport:
        """The chat model for this run, or the report saying why there is none (not a run)."""
        agent = state.agent
        try:
            if isinstance(self._model, BaseChatModel):
                return self._model
            if self._model is not None:
                return self._model(agent.model)
            provider = agent.model.split(":", 1)[0]
            keys = MODEL_API_KEYS.get(provider, ())
            if keys and not any(state.environ.get(k) for k in keys):
                problem = texts.MODEL_MISSING_KEY.format(variables=" or ".join(keys))
                fix = texts.MODEL_FIX_KEY.format(variable=keys[0])
                return self._model_error(state, problem, fix)
            return init_chat_model(agent.model)
        except ImportError as exc:
            return self._model_error(state, describe_error(exc), texts.MODEL_FIX_INSTALL)
        except Exception as exc:
            fix = texts.MODEL_FIX_NAME.format(example=DEFAULT_MODEL)
            return self._model_error(state, describe_error(exc), fix)

    def _model_error(self, state: _Run, problem: str, fix: str) -> RunReport:
        agent = state.agent
        result = state.result(success=False, error=problem, error_type=MODEL_ERROR)
        return self._finish(
            state,
            result,
            lambda r: texts.render_model_unavailable(agent.name, agent.model, r.error or "", fix),
            recorded=False,
        )

    def _check_categories(self, state: _Run) -> None:
        for category in state.agent.tools:
            spec = state.spec(category)
            if spec is None:
                logger.warning(
                    "agent %r asks for tool category %r, which the MCP catalog does not know: "
                    "skipped",
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

    def _failure(self, state: _Run, category: str, error: BaseException) -> Unavailable:
        if isinstance(error, TimeoutError):
            reason = texts.REASON_TIMEOUT.format(seconds=state.connect_timeout)
            failure = Unavailable(category, "timeout", reason)
        else:
            reason = texts.REASON_CONNECTION.format(error=state.scrub(describe_error(error)))
            failure = Unavailable(category, "connection", reason)
        logger.warning(
            "MCP server of %r (agent %r): %s", category, state.agent.name, failure.reason
        )
        return failure

    def _mcp_error(self, state: _Run, failures: list[Unavailable]) -> RunReport:
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
            )

        name = MCP_TIMEOUT_ERROR if timed_out else MCP_CONNECTION_ERROR
        return self._finish(state, result, render, error_name=name)

    async def _execute(
        self,
        state: _Run,
        model: BaseChatModel,
        tools_by_category: Mapping[str, Sequence[BaseTool]],
    ) -> RunReport:
        tools: list[BaseTool] = []
        categories: dict[str, str] = {}
        for category, server_tools in tools_by_category.items():
            for tool in server_tools:
                if tool.name in categories:
                    logger.warning(
                        "tool %r of %r is also offered by %r: the first one is kept",
                        tool.name,
                        category,
                        categories[tool.name],
                    )
                    continue
                categories[tool.name] = category
                tools.append(tool)
        gate = ToolGate(state.agent.name, categories, state.scrub)
        degraded = bool(state.unavailable)
        remaining = max(state.timeout - state.elapsed, 0.0)
        deadline = asyncio.timeout(remaining)
        try:
            async with deadline:
                graph = create_deep_agent(
                    model=model,
                    tools=tools,
                    system_prompt=state.agent.system_prompt,
                    middleware=[gate],
                )
                final = await graph.ainvoke({"messages": [HumanMessage(state.task)]})
        except TimeoutError as exc:
            if not deadline.expired():
                return self._execution_error(state, gate, exc)
            result = state.result(
                success=False,
                tool_calls=gate.calls,
                tools_used=gate.used,
                degraded_mode=degraded,
                error=f"Agent execution timed out after {state.timeout:.1f} seconds",
                error_type=TIMEOUT,
            )
            return self._finish(
                state,
                result,
                lambda r: texts.render_timeout(r, state.timeout),
                error_name=EXECUTION_TIMEOUT,
            )
        except Exception as exc:
            return self._execution_error(state, gate, exc)
        messages = final.get("messages", [])
        last = messages[-1] if messages else None
        result = state.result(
            success=True,
            response=last.text if isinstance(last, AIMessage) else "",
            tool_calls=gate.calls,
            tools_used=gate.used,
            degraded_mode=degraded,
        )
        requested, unavailable, providers = (
            list(state.agent.tools),
            state.unavailable,
            state.providers,
        )
        return self._finish(
            state,
            result,
            lambda r: texts.render_success(
                r, requested=requested, unavailable=unavailable, providers=providers
            ),
        )

    def _execution_error(self, state: _Run, gate: ToolGate, exc: BaseException) -> RunReport:
        result = state.result(
            success=False,
            tool_calls=gate.calls,
            tools_used=gate.used,
            degraded_mode=bool(state.unavailable),
            error=describe_error(exc),
            error_type=EXECUTION_ERROR,
        )
        return self._finish(
            state, result, texts.render_execution_error, error_name=EXECUTION_ERROR_NAME
        )

    # -- reporting ---------------------------------------------------------------------------------

    @staticmethod
    def _scrubbed(state: _Run, result: ExecutionResult) -> ExecutionResult:
        scrub = state.scrub
        return replace(
            result,
            task=scrub(result.task),
            response=None if result.response is None else scrub(result.response),
            error=None if result.error is None else scrub(result.error),
            tool_calls=[
                replace(
                    call,
                    arguments=scrub.value(call.arguments),
                    result=None if call.result is None else scrub(call.result),
                    error=None if call.error is None else scrub(call.error),
                )
                for call in result.tool_calls
            ],
        )

    def _finish(
        self,
        state: _Run,
        result: ExecutionResult,
        render: Callable[[ExecutionResult], str],
        *,
        error_name: str | None = None,
        recorded: bool = True,
    ) -> RunReport:
        """The report: ``result`` scrubbed, then rendered, with its history record if
        ``recorded`` (a run that started). Scrubbing before rendering matters: a trace line cut
        short could otherwise keep part of a secret."""
        result = self._scrubbed(state, result)
        text = state.scrub(render(result)).rstrip("\n")
        record = None
        if recorded:
            summary = result.response if result.success else result.error
            record = ExecutionRecord(
                timestamp=state.timestamp,
                task=result.task,
                result_summary=" ".join((summary or "").split()),
                success=result.success,
                duration_seconds=result.duration_seconds,
                tool_calls_count=len(result.tool_calls),
                error_type=error_name,
            )
        if result.success:
            logger.info(
                "agent %r ran in %.2fs with %d tool call(s)",
                state.agent.name,
                result.duration_seconds,
                len(result.tool_calls),
            )
        elif recorded:
            logger.warning("agent %r failed: %s", state.agent.name, result.error)
        else:
            logger.info("agent %r not run: %s", state.agent.name, result.error)
        return RunReport(text=text, result=result, record=record)


# The scrubber, the server pool and the tool gate stay importable from here, where they lived.
__all__ = [
    "CONNECT_TIMEOUT_MAX",
    "CONNECT_TIMEOUT_SHARE",
    "MODEL_API_KEYS",
    "REDACTED",
    "AgentRunner",
    "ModelFactory",
    "Scrubber",
    "ServerPool",
    "ToolGate",
]
