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

This module holds ``AgentRunner``: its options, ``run`` and ``run_sync``, and the run's steps in
order. Beside it: ``pinning`` (what a run runs: step 1), ``chat_model`` (step 2's model),
``availability`` (steps 2-4: the categories a run can use, the reports when it cannot go on),
``invocation`` (steps 5-6: the deep agent built and run), ``redaction`` (``Scrubber``),
``servers`` (``ServerPool``), ``stdio``, ``pool`` (warm sessions, the runner's closing),
``gate`` (``ToolGate``), ``background`` (the runs' loop), ``outcome`` (the run's state and
report), ``texts`` and ``results``.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace

from deepagents import create_deep_agent
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from ..errors import AgentStoreError, ReadOnlyStoreError
from ..models import TIMEOUT_DEFAULT, Agent, AgentConfig, ExecutionRequest
from ..repository import AgentRepository
from ..versioning import AgentVersion
from . import pinning, texts
from .availability import check_categories, mcp_error, missing_tools, server_failure
from .background import compute, in_background, wait_in_background
from .catalog import McpCatalog
from .chat_model import ModelFactory, resolve_model
from .gate import ToolGate
from .invocation import execute
from .outcome import CONNECT_TIMEOUT_MAX, CONNECT_TIMEOUT_SHARE, Outcome, RunState, finish
from .pool import KeepsServers, WarmPool
from .redaction import MODEL_API_KEYS, REDACTED, Scrubber, model_key_values
from .results import RunReport, describe_error
from .servers import ServerPool, started

logger = logging.getLogger(__name__)


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
        request = pinning.request(task, timeout, skip_unavailable_tools)
        self._require_recordable()
        chosen, pinned = pinning.pinned(self._repo, agent, version, label, key)
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
        request = pinning.request(task, timeout, skip_unavailable_tools)
        self._require_recordable()
        if pinning.reads_nothing(agent, version, label, key):
            chosen, pinned = pinning.pinned(self._repo, agent, version, label, key)
        else:  # the store's reads, through its async API
            chosen, pinned = await self._repo.acall(
                lambda repo: pinning.pinned(repo, agent, version, label, key)
            )
        return await in_background(self._perform(chosen, request, pinned))

    def _require_recordable(self) -> None:
        """Refuse a run its store could not record (opened read-only), before it starts."""
        if self._repo.read_only:
            raise ReadOnlyStoreError.opened_read_only(self._repo.location)

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
        check_categories(state)
        if state.unavailable and not skip_unavailable_tools:
            return missing_tools(state, self._calls)

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
            failures = [server_failure(state, c, errors[c]) for c in connections if c in errors]
            if failures and not skip_unavailable_tools:
                return mcp_error(state, failures, self._calls)
            state.unavailable.extend(failures)
            return await self._execute(state, model, tools_by_category)

    # -- steps: this module's ``init_chat_model`` and ``create_deep_agent``, looked up at each
    # run, so that tests and benchmarks/warm_runs.py can replace them here ---------------------

    def _resolve_model(self, state: RunState) -> BaseChatModel | Outcome:
        """The chat model for this run, or the report saying why there is none (not a run)."""
        return resolve_model(state, self._model, self._calls, init_chat_model)

    async def _execute(
        self,
        state: RunState,
        model: BaseChatModel,
        tools_by_category: Mapping[str, Sequence[BaseTool]],
    ) -> Outcome:
        """The deep agent built with ``tools_by_category`` and run (``invocation``)."""
        return await execute(state, model, tools_by_category, self._calls, create_deep_agent)


# The scrubber, the server pool, the tool gate and the model factory's type stay importable from
# here, where they lived.
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
