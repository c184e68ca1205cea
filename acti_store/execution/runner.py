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
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import Any, Final, TextIO, cast

from deepagents import create_deep_agent
from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.sessions import Connection, create_session
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from ..errors import AgentStoreError
from ..models import (
    DEFAULT_MODEL,
    TASK_MAX_LENGTH,
    TASK_MIN_LENGTH,
    TIMEOUT_DEFAULT,
    TIMEOUT_MAX,
    TIMEOUT_MIN,
    Agent,
    ExecutionRecord,
)
from ..repository import AgentRepository
from . import texts
from .catalog import CategorySpec, McpCatalog
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
    ToolCallRecord,
    Unavailable,
)

logger = logging.getLogger(__name__)

ModelFactory = Callable[[str], BaseChatModel]

#: By default connecting the servers may use this share of the run's timeout, and at most
#: CONNECT_TIMEOUT_MAX seconds, so that a hanging server still leaves time to run in degraded mode.
CONNECT_TIMEOUT_SHARE: Final = 0.5
CONNECT_TIMEOUT_MAX: Final = 30.0
#: How long stopping the servers may take before their tasks are cancelled.
SHUTDOWN_GRACE: Final = 5.0
#: Secret values shorter than this are not scrubbed: they would mangle ordinary text.
SECRET_MIN_LENGTH: Final = 6
REDACTED: Final = "[redacted]"
#: How many characters of a server's stderr an MCP error text quotes.
STDERR_TAIL: Final = 300
#: How much of a tool's result the structured trace keeps.
TOOL_RESULT_MAX: Final = 2000

#: Provider (the part of the model string before ``:``) -> the API key variable(s) it reads;
#: one of them must be set. Providers not listed (local or cloud-credential ones) are not checked.
MODEL_API_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "azure_openai": ("AZURE_OPENAI_API_KEY",),
    "google_genai": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistralai": ("MISTRAL_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "perplexity": ("PPLX_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "nvidia": ("NVIDIA_API_KEY",),
}


# --------------------------------------------------------------------------------------------------
# Secrets
# --------------------------------------------------------------------------------------------------


class Scrubber:
    """Replaces known secret values in text (and in strings nested in lists and dicts)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {s for s in secrets if len(s) >= SECRET_MIN_LENGTH}
        self._secrets = sorted(unique, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        return value


def _describe(exc: BaseException) -> str:
    """The message of ``exc``, looking through exception groups to the first real error."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc).strip() or type(exc).__name__


# --------------------------------------------------------------------------------------------------
# MCP servers: one session each, held by its own task for the whole run
# --------------------------------------------------------------------------------------------------


class ServerFailed(Exception):
    """An MCP server could not be connected to; the message says why (scrub before showing)."""


@asynccontextmanager
async def _open_session(connection: Mapping[str, Any], errlog: TextIO) -> AsyncIterator[Any]:
    """An initialised MCP ``ClientSession``. A stdio server's stderr goes to ``errlog``."""
    if connection["transport"] == "stdio":
        params = StdioServerParameters(
            command=connection["command"],
            args=list(connection.get("args", [])),
            env=connection.get("env"),
            cwd=connection.get("cwd"),
            encoding=connection.get("encoding", "utf-8"),
            encoding_error_handler=connection.get("encoding_error_handler", "strict"),
        )
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, **(connection.get("session_kwargs") or {})) as session,
        ):
            await session.initialize()
            yield session
    else:
        async with create_session(cast(Connection, dict(connection))) as session:
            await session.initialize()
            yield session


def _stderr_tail(errlog: TextIO) -> str:
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    tail = " | ".join(lines[-5:])
    return tail if len(tail) <= STDERR_TAIL else "..." + tail[-STDERR_TAIL:]


class ServerPool:
    """Starts MCP servers in parallel; each session lives in its own task until ``close``."""

    def __init__(self) -> None:
        self._closing = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> ServerPool:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(
        self, connections: Mapping[str, Mapping[str, Any]], timeout: float
    ) -> tuple[dict[str, list[BaseTool]], dict[str, BaseException]]:
        """Connect to every server within ``timeout`` seconds.

        Returns the tools of each server that answered, and for the others the error:
        ``ServerFailed`` (it failed to start) or ``TimeoutError`` (it did not answer in time).
        """
        if self._tasks:
            raise RuntimeError("a ServerPool starts its servers once")
        loop = asyncio.get_running_loop()
        ready: dict[str, asyncio.Future[list[BaseTool]]] = {}
        for name, connection in connections.items():
            ready[name] = loop.create_future()
            self._tasks.append(asyncio.create_task(self._hold(name, connection, ready[name])))
        if ready:
            await asyncio.wait(ready.values(), timeout=timeout)
        tools: dict[str, list[BaseTool]] = {}
        errors: dict[str, BaseException] = {}
        for (name, future), task in zip(ready.items(), self._tasks, strict=True):
            if not future.done():
                future.cancel()
                task.cancel()  # stuck connecting: stop it now, not at close
                errors[name] = TimeoutError(f"no answer within {timeout:.1f}s")
            elif (error := future.exception()) is not None:
                errors[name] = error
            else:
                tools[name] = future.result()
        return tools, errors

    async def _hold(
        self, name: str, connection: Mapping[str, Any], ready: asyncio.Future[list[BaseTool]]
    ) -> None:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                async with _open_session(connection, errlog) as session:
                    ready.set_result(await load_mcp_tools(session, server_name=name))
                    await self._closing.wait()
            except Exception as exc:
                message = _describe(exc)
                tail = _stderr_tail(errlog)
                if tail:
                    message = f"{message} - {tail}"
                if not ready.done():
                    ready.set_exception(ServerFailed(message))
                else:
                    logger.debug("MCP server %r stopped with an error", name)

    async def close(self) -> None:
        """Stop every server: close the sessions, then cancel what did not stop in time."""
        self._closing.set()
        if not self._tasks:
            return
        _, pending = await asyncio.wait(self._tasks, timeout=SHUTDOWN_GRACE)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


# --------------------------------------------------------------------------------------------------
# The tool gate: only the agent's tools run, every call is traced
# --------------------------------------------------------------------------------------------------


def _tool_message(outcome: ToolMessage | Command[Any]) -> ToolMessage | None:
    if isinstance(outcome, ToolMessage):
        return outcome
    update = outcome.update if isinstance(outcome.update, dict) else {}
    messages = [m for m in update.get("messages", []) if isinstance(m, ToolMessage)]
    return messages[-1] if messages else None


class ToolGate(AgentMiddleware[Any, Any, Any]):
    """Refuses calls to tools the agent was not given, and records every call for the trace.

    Tool errors become error results the model can react to (never a crash of the run), and known
    secret values are scrubbed from what tools return before the model sees it.
    """

    def __init__(self, agent_name: str, categories: Mapping[str, str], scrub: Scrubber) -> None:
        super().__init__()
        self._agent_name = agent_name
        self._categories = categories
        self._scrub = scrub
        self.calls: list[ToolCallRecord] = []
        self.used: list[str] = []

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        call = request.tool_call
        name = call["name"]
        record = ToolCallRecord(tool_name=name, arguments=self._scrub.value(dict(call["args"])))
        self.calls.append(record)
        if request.tool is None:
            enabled = ", ".join(sorted(self._categories)) or "none"
            logger.warning(
                "refused call to tool %r: not enabled for agent %r (enabled: %s)",
                self._scrub(name),
                self._agent_name,
                enabled,
            )
            record.error = texts.TOOL_NOT_ENABLED.format(
                tool=name, name=self._agent_name, enabled=enabled
            )
            return ToolMessage(record.error, name=name, tool_call_id=call["id"], status="error")
        category = self._categories.get(name)
        if category is not None and category not in self.used:
            self.used.append(category)
        started = time.perf_counter()
        try:
            outcome = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            record.duration_ms = (time.perf_counter() - started) * 1000
            record.error = self._scrub(_describe(exc))
            return ToolMessage(
                texts.TOOL_FAILED.format(tool=name, error=record.error),
                name=name,
                tool_call_id=call["id"],
                status="error",
            )
        record.duration_ms = (time.perf_counter() - started) * 1000
        message = _tool_message(outcome)
        if message is None:
            return outcome
        text = self._scrub(message.text)[:TOOL_RESULT_MAX]
        if message.status == "error":
            record.error = text
        else:
            record.result = text
        if isinstance(outcome, ToolMessage):
            return outcome.model_copy(update={"content": self._scrub.value(outcome.content)})
        return outcome


# --------------------------------------------------------------------------------------------------
# The runner
# --------------------------------------------------------------------------------------------------


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

        Raises ``ValueError`` only for a task or timeout outside the contract's ranges (callers
        validate those first); every other problem is a report with ``success`` false.
        """
        timeout = TIMEOUT_DEFAULT if timeout is None else float(timeout)
        if not TIMEOUT_MIN <= timeout <= TIMEOUT_MAX:
            raise ValueError(f"timeout must be {TIMEOUT_MIN}-{TIMEOUT_MAX} seconds, not {timeout}")
        if not TASK_MIN_LENGTH <= len(task) <= TASK_MAX_LENGTH:
            raise ValueError(f"task must be {TASK_MIN_LENGTH}-{TASK_MAX_LENGTH} characters")
        environ = dict(os.environ)
        model_keys = [
            environ[n] for names in MODEL_API_KEYS.values() for n in names if n in environ
        ]
        state = _Run(
            agent=agent,
            task=task,
            timeout=timeout,
            scrub=Scrubber([*self._catalog.secret_values(environ), *model_keys]),
            environ=environ,
            catalog=self._catalog,
            timestamp=self._repo.now(),
            connect_limit=self._connect_timeout,
        )
        report = await self._run(state, skip_unavailable_tools)
        if report.record is not None:
            try:
                await asyncio.to_thread(self._repo.record_execution, agent.name, report.record)
            except AgentStoreError as exc:
                logger.error(
                    "run of agent %r not recorded: %s", agent.name, state.scrub(_describe(exc))
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
            return self._model_error(state, _describe(exc), texts.MODEL_FIX_INSTALL)
        except Exception as exc:
            fix = texts.MODEL_FIX_NAME.format(example=DEFAULT_MODEL)
            return self._model_error(state, _describe(exc), fix)

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
            reason = texts.REASON_CONNECTION.format(error=state.scrub(_describe(error)))
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
            error=_describe(exc),
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


__all__ = [
    "CONNECT_TIMEOUT_MAX",
    "CONNECT_TIMEOUT_SHARE",
    "MODEL_API_KEYS",
    "AgentRunner",
    "ModelFactory",
    "Scrubber",
    "ServerPool",
    "ToolGate",
]
