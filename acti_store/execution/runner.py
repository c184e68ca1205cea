"""``AgentRunner``: run a stored agent with its MCP tools, report and record the run.

The flow is the contract's ("Behavior Flow" of ``execute_created_agent``):

1. the caller loads the agent (and handles "not found");
2. the model is set up (its API key checked first), and each tool category of the agent is checked
   against the MCP catalog: a category whose variables are unset is unavailable;
3. unavailable categories either fail the run (``skip_unavailable_tools=False``) or degrade it;
4. the servers of the available categories are started, in parallel, and ONE session per server is
   held for the whole run (each by its own task, so the MCP SDK's cancel scopes stay in the task
   that opened them); a server that fails to start or does not answer is an MCP error, or one more
   unavailable category in degraded mode. A runner with ``keep_servers`` takes warm sessions from
   its ``pool`` instead, shared with other runs, and starts only the servers it lacks;
5. a deep agent is built with only those tools; a tool call to anything else is refused;
6. the task runs within what is left of the timeout; the servers are stopped whatever happens
   (a warm runner's are let go of, and stopped once idle for ``keep_servers`` seconds).

Every run that gets past step 3 is recorded in the agent's history, which moves its counters; so a
store opened read-only refuses a run before step 1 (``ReadOnlyStoreError``): it could not record it.

An async caller's event loop is never held by a run: ``run`` executes it on the runners' own loop
in a background thread (``background``), where the graph's steps happen. There too, what takes
long without waiting for I/O runs in a worker thread, so that runs at once keep answering each
other's servers and model calls: setting up the model (``init_chat_model`` imports its provider's
package), building the graph (``create_deep_agent`` compiles it), starting stdio servers
(``stdio``), and scrubbing, rendering and recording the result.
Credentials reach only their own category's server, and their values are scrubbed from every text,
artifact, history record and log line.

Beside this module: ``redaction`` (``Scrubber``), ``servers`` (``ServerPool``), ``stdio``,
``pool`` (warm sessions), ``gate`` (``ToolGate``), ``background`` (the runs' loop), ``outcome``
(the run's state and report), ``texts`` and ``results``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from deepagents import create_deep_agent
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from ..errors import AgentStoreError, InvalidInputError, ReadOnlyStoreError
from ..models import DEFAULT_MODEL, TIMEOUT_DEFAULT, Agent, AgentConfig, ExecutionRequest
from ..repository import AgentRepository
from ..validation import ARGUMENT
from ..versioning import AgentVersion
from . import texts
from .background import compute, in_background, wait_in_background
from .catalog import McpCatalog
from .gate import ToolGate
from .outcome import CONNECT_TIMEOUT_MAX, CONNECT_TIMEOUT_SHARE, Outcome, RunState, finish
from .pool import KeepsServers, WarmPool
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
from .servers import ServerPool, started

logger = logging.getLogger(__name__)

ModelFactory = Callable[[str], BaseChatModel]


def _request(task: str, timeout: float | None, skip_unavailable_tools: bool) -> ExecutionRequest:
    return ExecutionRequest(
        task=task,
        timeout=TIMEOUT_DEFAULT if timeout is None else timeout,
        skip_unavailable_tools=skip_unavailable_tools,
    )


class AgentRunner(KeepsServers):
    """Runs stored agents with their MCP tools, and records each run in the agent's history.

    ``model``: a chat model used for every run, or a callable taking the agent's model string and
    returning one; by default the agent's model string goes to ``init_chat_model`` after its
    provider's API key is checked. ``catalog``: an ``McpCatalog``, a path to a TOML catalog, or
    ``None`` (``$ACTI_STORE_MCP_CONFIG``, else the default public servers). ``connect_timeout``:
    how long the servers may take to start, within the run's timeout (default: half of it, at
    most 30 s); a server that takes longer is an MCPTimeoutError, or unavailable in degraded mode.

    ``keep_servers``: seconds an MCP server stays up after the last run that used it (``None``,
    the default: each run starts its servers and stops them when it ends). Such a runner shares
    its servers between runs, concurrent ones too (``pool``); close it (``async with``,
    ``aclose()`` or ``close()``) to stop them. ``calls``: how the error reports name what to do
    next: tool calls (``texts.TOOL_RUN_CALLS``, default) or commands (``texts.CLI_RUN_CALLS``).
    """

    def __init__(
        self,
        repo: AgentRepository,
        *,
        model: BaseChatModel | ModelFactory | None = None,
        catalog: McpCatalog | str | os.PathLike[str] | None = None,
        connect_timeout: float | None = None,
        keep_servers: float | None = None,
        calls: texts.RunCalls = texts.TOOL_RUN_CALLS,
    ) -> None:
        if connect_timeout is not None and connect_timeout <= 0:
            raise ValueError("connect_timeout must be positive")
        if keep_servers is not None and not (math.isfinite(keep_servers) and keep_servers >= 0):
            raise ValueError("keep_servers must be a number of seconds, 0 or more")
        self._repo = repo
        self._model = model
        self._catalog = McpCatalog.load(catalog)
        self._connect_timeout = connect_timeout
        self._calls = calls
        super().__init__(None if keep_servers is None else WarmPool(keep_servers))

    @property
    def catalog(self) -> McpCatalog:
        return self._catalog

    @property
    def repo(self) -> AgentRepository:
        return self._repo

    def run_sync(
        self,
        agent: Agent | AgentVersion | str,
        task: str,
        *,
        timeout: float | None = TIMEOUT_DEFAULT,
        skip_unavailable_tools: bool = True,
        version: int | None = None,
        label: str | None = None,
        key: str | None = None,
    ) -> RunReport:
        """``run``, from synchronous code: on the runs' own loop (``background``), as ``run``
        runs it, this thread waiting (also when it runs a loop of its own)."""
        request = _request(task, timeout, skip_unavailable_tools)
        self._require_recordable()
        chosen, pinned = self._pinned(self._repo, agent, version, label, key)
        return wait_in_background(self._perform(chosen, request, pinned))

    async def run(
        self,
        agent: Agent | AgentVersion | str,
        task: str,
        *,
        timeout: float | None = TIMEOUT_DEFAULT,
        skip_unavailable_tools: bool = True,
        version: int | None = None,
        label: str | None = None,
        key: str | None = None,
    ) -> RunReport:
        """Run ``task`` with ``agent`` and its MCP tools; return the contract's report.

        Raises ``ValueError`` (pydantic's ``ValidationError``) only for arguments outside the
        contract's ranges (``ExecutionRequest``); every other problem is a report with
        ``success`` false. The run goes on the runners' own event loop, in a background thread
        (``background``): the caller's loop stays free however many runs go on. Cancelling this
        coroutine cancels the run (its servers are stopped before it returns).

        ``agent`` is the agent or its name; ``version`` pins the run to that saved version's
        configuration (``get_version``), ``label`` to the version the label sends ``key`` to
        (``resolve``: sticky per key on a split label, a draw by weight without a key), and the
        run is counted for that version. An ``AgentVersion`` (from ``ConfigCache.get`` or
        ``resolve``) runs that version, counted for it, with no read of the store. Raises what
        ``get`` / ``get_version`` / ``resolve`` raise for a name, version or label not found.

        On a store opened read-only, raises ``ReadOnlyStoreError`` before anything runs: a run
        is recorded in its agent's history, and its model calls and tool side effects cannot
        be taken back once that record cannot be written.
        """
        request = _request(task, timeout, skip_unavailable_tools)
        self._require_recordable()
        unpinned = version is None and label is None and key is None
        if isinstance(agent, AgentVersion) or (isinstance(agent, Agent) and unpinned):
            chosen, pinned = self._pinned(self._repo, agent, version, label, key)  # no read
        else:  # the store's reads, through its async API
            chosen, pinned = await self._repo.acall(
                lambda repo: self._pinned(repo, agent, version, label, key)
            )
        return await in_background(self._perform(chosen, request, pinned))

    def _require_recordable(self) -> None:
        """Refuse a run its store could not record (opened read-only), before it starts."""
        if self._repo.read_only:
            raise ReadOnlyStoreError.opened_read_only(self._repo.location)

    @staticmethod
    def _pinned(
        repo: AgentRepository,
        agent: Agent | AgentVersion | str,
        version: int | None,
        label: str | None,
        key: str | None,
    ) -> tuple[AgentConfig, int | None]:
        """The agent to run (with the pinned version's configuration) and the version pinned,
        read from ``repo`` (the store, or the twin ``acall`` hands over)."""
        if isinstance(agent, AgentVersion):
            if version is not None or label is not None or key is not None:
                why = "is already pinned by the AgentVersion given as the agent"
                raise InvalidInputError(ARGUMENT, [("version, label or key", why)])
            return agent.config, agent.version
        if version is None and label is None and key is None:
            return (agent if isinstance(agent, Agent) else repo.get(agent)), None
        name = agent if isinstance(agent, str) else agent.name
        if version is not None and key is not None:
            raise InvalidInputError(ARGUMENT, [("key", "routes by a label, not a version")])
        pinned = repo.resolve(name, label, key) if version is None else None
        saved = pinned or repo.get_version(name, version, label=label)
        return saved.config, saved.version

    async def _perform(
        self, agent: AgentConfig, request: ExecutionRequest, pinned: int | None = None
    ) -> RunReport:
        environ = dict(os.environ)
        state = RunState(
            agent=agent,
            task=request.task,
            timeout=request.timeout,
            scrub=Scrubber([*self._catalog.secret_values(environ), *model_key_values(environ)]),
            environ=environ,
            catalog=self._catalog,
            timestamp=self._repo.now(),
            connect_limit=self._connect_timeout,
        )
        outcome = await self._run(state, request.skip_unavailable_tools)
        # Scrubbing and rendering compute: on the store's threads, the record written as the
        # store's coroutines write (``acall_in_thread``).
        return await self._repo.acall_in_thread(
            lambda repo: self._conclude(repo, state, outcome, pinned)
        )

    @staticmethod
    def _conclude(
        repo: AgentRepository, state: RunState, outcome: Outcome, pinned: int | None = None
    ) -> RunReport:
        """The report of ``outcome``, recorded in ``repo``'s history if the run counts, for the
        ``pinned`` version (default: the current one)."""
        report = finish(state, outcome)
        if report.record is not None:
            try:
                repo.record_execution(state.agent.name, report.record, version=pinned)
            except AgentStoreError as exc:
                logger.error(
                    "run of agent %r not recorded: %s",
                    state.agent.name,
                    state.scrub(describe_error(exc)),
                )
                return replace(report, record=None)
        return report

    async def _run(self, state: RunState, skip_unavailable_tools: bool) -> Outcome:
        agent = state.agent
        if isinstance(self._model, BaseChatModel):
            model: BaseChatModel | Outcome = self._model
        else:  # a factory, or init_chat_model: imports, reads files, builds clients
            model = await compute(self._resolve_model, state)
        if isinstance(model, Outcome):
            return model
        self._check_categories(state)
        if state.unavailable and not skip_unavailable_tools:
            result = state.result(
                success=False,
                error="required tools unavailable: "
                + ", ".join(u.category for u in state.unavailable),
                error_type=MCP_ERROR,
            )
            unavailable, commands, calls = list(state.unavailable), state.commands, self._calls
            return Outcome(
                result,
                lambda _: texts.render_missing_tools(agent.name, unavailable, commands, calls),
                recorded=False,
            )

        skipped = {u.category for u in state.unavailable}
        specs = {
            category: spec
            for category in agent.tools
            if category not in skipped and (spec := state.spec(category)) is not None
        }
        connections = {c: spec.connection_for(state.environ) for c, spec in specs.items()}
        if self._warm is None:
            servers = started(connections, state.connect_timeout)
        else:  # shared only by runs whose server would start exactly alike (see ``pool``)
            variables = {c: {n: state.environ.get(n, "") for n in s.env} for c, s in specs.items()}
            servers = self._warm.lease(connections, state.connect_timeout, variables=variables)
        async with servers as (tools_by_category, errors):
            failures = [self._failure(state, c, errors[c]) for c in connections if c in errors]
            if failures and not skip_unavailable_tools:
                return self._mcp_error(state, failures)
            state.unavailable.extend(failures)
            return await self._execute(state, model, tools_by_category)

    # -- steps -------------------------------------------------------------------------------------

    def _resolve_model(self, state: RunState) -> BaseChatModel | Outcome:
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

    def _model_error(self, state: RunState, problem: str, fix: str) -> Outcome:
        agent, calls = state.agent, self._calls
        result = state.result(success=False, error=problem, error_type=MODEL_ERROR)
        return Outcome(
            result,
            lambda r: texts.render_model_unavailable(
                agent.name, agent.model, r.error or "", fix, calls
            ),
            recorded=False,
        )

    def _check_categories(self, state: RunState) -> None:
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

    def _failure(self, state: RunState, category: str, error: BaseException) -> Unavailable:
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

    def _mcp_error(self, state: RunState, failures: list[Unavailable]) -> Outcome:
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
                calls=self._calls,
            )

        name = MCP_TIMEOUT_ERROR if timed_out else MCP_CONNECTION_ERROR
        return Outcome(result, render, error_name=name)

    async def _execute(
        self,
        state: RunState,
        model: BaseChatModel,
        tools_by_category: Mapping[str, Sequence[BaseTool]],
    ) -> Outcome:
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
                graph: CompiledStateGraph[Any, Any, Any, Any] = await compute(
                    create_deep_agent,
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
            return Outcome(
                result,
                lambda r: texts.render_timeout(r, state.timeout, self._calls),
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
        return Outcome(
            result,
            lambda r: texts.render_success(
                r, requested=requested, unavailable=unavailable, providers=providers
            ),
        )

    def _execution_error(self, state: RunState, gate: ToolGate, exc: BaseException) -> Outcome:
        result = state.result(
            success=False,
            tool_calls=gate.calls,
            tools_used=gate.used,
            degraded_mode=bool(state.unavailable),
            error=describe_error(exc),
            error_type=EXECUTION_ERROR,
        )
        calls = self._calls
        return Outcome(
            result,
            lambda r: texts.render_execution_error(r, calls),
            error_name=EXECUTION_ERROR_NAME,
        )


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
