"""The ten builder tools' logic: thin adapters over the repository, one method per tool.

Each method checks its arguments with the domain models (``acti_store.models``), makes one or two
repository calls and renders the contract's text (``render``). It never raises to the model:
every refusal and every store error becomes an ``ERROR: ...`` text, and every outcome comes with a
dict artifact for programs (``{"status": "success" | "error", ...}``; see ``outcomes``).

The LangChain tools, their async variants and the module exports are derived from these methods
by the declarations in ``specs``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..documents import agent_document, history_document
from ..errors import (
    AgentExistsError,
    AgentNotFoundError,
    AgentStoreError,
    InvalidAgentError,
    NoChangesError,
    VersionConflictError,
)
from ..models import (
    HISTORY_LIMIT_DEFAULT,
    SEARCH_LIMIT_DEFAULT,
    STRATA,
    TOOL_CATEGORIES,
    Agent,
    AgentConfig,
    AgentUpdate,
    ExecutionRequest,
    HistoryRequest,
    SearchQuery,
)
from ..repository import AgentRepository
from ..validation import FieldError
from . import listing, render, render_history, schemas, search_texts, texts
from .outcomes import (
    Refused,
    Result,
    invalid,
    refuse_unencodable,
    refused,
    settled,
    success,
    tool_boundary,
    valid_name,
    validated,
)
from .parameters import STRATUM, CloneOverrides, DeleteParameters, takes

if TYPE_CHECKING:
    from ..execution import AgentRunner


class BuilderTools:
    """The ten tools' logic, bound to one repository (asked for on first use).

    Each method takes the tool's arguments by keyword and returns ``(text, artifact)``, what every
    front end renders from; ``calls``: how texts name the next step (tool calls, or commands)."""

    def __init__(
        self,
        repository: Callable[[], AgentRepository],
        *,
        model: Any = None,
        mcp_catalog: Any = None,
        calls: texts.Calls = texts.TOOL_CALLS,
        runner: AgentRunner | None = None,
    ) -> None:
        self._repository = repository
        self._calls = calls
        self._model = model
        self._catalog = mcp_catalog
        self._runner: AgentRunner | None = runner
        self._runner_lock = threading.Lock()

    @property
    def repo(self) -> AgentRepository:
        return self._repository()

    async def arepo(self) -> AgentRepository:
        """The repository; one not open yet (the default store, migrated) opens in a thread."""
        opened = getattr(self._repository, "opened", None)
        repo = opened() if opened is not None else self._repository()
        return repo if repo is not None else await asyncio.to_thread(self._repository)

    def on(self, repo: AgentRepository) -> BuilderTools:
        """This tool set's logic on ``repo`` (the twin ``acall`` hands over), same options."""
        options = {"model": self._model, "mcp_catalog": self._catalog, "calls": self._calls}
        return self if repo is self.repo else BuilderTools(lambda: repo, **options)

    # -- shared steps ------------------------------------------------------------------------------

    def _available(self) -> tuple[list[str], int]:
        """The first agents' names (at most as many as a "not found" text lists) and the total."""
        repo = self.repo
        total = sum(repo.count_by_stratum().values())
        if not total:
            return [], 0
        first = repo.search(SearchQuery(sort_by="name", limit=texts.NOT_FOUND_NAMES_SHOWN))
        return [a.name for a in first], total

    def _not_found(self, name: str, closing: str, **options: str) -> Refused:
        names, total = self._available()
        text = render.not_found(name, names, closing, total=total, calls=self._calls, **options)
        return refused(
            text, "not_found", name=name, available=names, available_count=max(total, len(names))
        )

    def not_found(self, name: str, closing: str = texts.USE_NAMES) -> Result:
        """The "not found" result for ``name``: the first names in the store and their count."""
        return self._not_found(name, closing).result

    def _require(self, name: str, closing: str) -> None:
        """Refuse with the "not found" text when ``name`` is not in the store."""
        if not self.repo.exists(name):
            raise self._not_found(name, closing)

    def _get(self, name: str, closing: str, **options: str) -> Agent:
        try:
            return self.repo.get(name)
        except AgentNotFoundError:
            raise self._not_found(name, closing, **options) from None

    def _places(self, name: str) -> render.Places:
        repo = self.repo
        wording = texts.FILE_WORDING if repo.mirror is not None else texts.STORE_WORDING
        return render.Places(
            wording, repo.location_of(name), repo.history_location_of(name), repo.location
        )

    # -- CRUD --------------------------------------------------------------------------------------

    @takes(schemas.CreateAgentConfigArgs)
    @tool_boundary
    def create_agent_config(
        self, /, name: object, description: object, system_prompt: object, **fields: object
    ) -> Result:
        stratum = fields.get("stratum")
        if stratum is not None:
            try:
                STRATUM.validate_python(stratum)
            except ValidationError:
                raise refused(
                    render.invalid_stratum(stratum), "invalid_stratum", valid=list(STRATA)
                ) from None
        config = validated(
            AgentConfig,
            {"name": name, "description": description, "system_prompt": system_prompt, **fields},
            render.config_invalid,
        )
        try:
            agent = self.repo.create(config)
        except AgentExistsError:
            raise refused(
                render.already_exists(config.name, self._calls), "already_exists", name=config.name
            ) from None
        location = self.repo.location_of(agent.name)
        return success(
            render.created(agent, location, self._calls),
            agent=agent_document(agent),
            location=location,
        )

    @tool_boundary
    def get_agent_config(self, name: object) -> Result:
        agent = self._get(valid_name("name", name), texts.USE_NAMES_OR_CREATE)
        return success(render.agent_config(agent), agent=agent_document(agent))

    @takes(schemas.UpdateAgentConfigArgs)
    @tool_boundary
    def update_agent_config(
        self,
        /,
        name: object,
        *,
        message: str | None = None,
        expected: int | None = None,
        **fields: object,
    ) -> Result:
        agent_name = valid_name("name", name)

        def describe(errors: list[FieldError]) -> str:
            return render.update_invalid(agent_name, errors)

        try:
            changes = validated(AgentUpdate, fields, describe)
            # None (the model's calls): the latest, no conflict; a CLI tag edit expects its read.
            outcome = self.repo.update_returning_previous(agent_name, changes, expected, message)
        except Refused:
            self._require(agent_name, texts.USE_NAMES_OR_CREATE)  # a missing agent comes first
            raise
        except NoChangesError:
            self._require(agent_name, texts.USE_NAMES_OR_CREATE)
            raise refused(
                render.no_changes(agent_name, self._calls), "no_changes", name=agent_name
            ) from None
        except AgentNotFoundError:
            raise self._not_found(agent_name, texts.USE_NAMES_OR_CREATE) from None
        except VersionConflictError as exc:  # only with an expected version
            raise refused(render.store_error(exc), "conflict", name=agent_name) from None
        except InvalidAgentError as exc:
            # Our arguments passed the same rules above; the repository validates the merged
            # configuration, which fails when a stored value breaks a rule (a row written by an
            # older release or by hand). Say which field, so the model can replace it.
            raise invalid(exc, describe) from None
        old, new = outcome.previous, outcome.agent
        location = self.repo.location_of(agent_name)
        return success(
            render.updated(old, new, location),
            agent=agent_document(new),
            previous_version=old.metadata.version,
            changed=render.changed_fields(old, new),
            location=location,
        )

    @tool_boundary
    def delete_agent_config(
        self, name: object, confirm: object = False, delete_history: object = True
    ) -> Result:
        agent_name = valid_name("name", name)
        params = validated(
            DeleteParameters,
            {"delete_history": delete_history},
            lambda errors: render.invalid_parameters("delete", errors),
        )
        places = self._places(agent_name)
        try:
            if confirm is not True:  # anything but an explicit True is a dry run
                agent = self.repo.get(agent_name)
                kin = render.AgentKin(
                    [version.version for version in self.repo.versions(agent_name)],
                    self.repo.labels(agent_name),
                )
                text = render.delete_preview(
                    agent,
                    places,
                    delete_history=params.delete_history,
                    calls=self._calls,
                    kin=kin,
                )
                return success(
                    text,
                    deleted=False,
                    agent=agent_document(agent),
                    delete_history=params.delete_history,
                )
            agent = self.repo.delete(agent_name, delete_history=params.delete_history)
        except AgentNotFoundError:
            names, total = self._available()
            text = render.delete_not_found(agent_name, names, total, places, self._calls)
            raise refused(
                text,
                "not_found",
                name=agent_name,
                available=names,
                available_count=max(total, len(names)),
            ) from None
        return success(
            render.deleted(
                agent_name, places, delete_history=params.delete_history, calls=self._calls
            ),
            deleted=True,
            agent=agent_document(agent),
            delete_history=params.delete_history,
        )

    @tool_boundary
    def clone_agent_config(
        self,
        source_name: object,
        new_name: object,
        description: object = None,
        tags: object = None,
    ) -> Result:
        target = valid_name("new_name", new_name)
        source_key = valid_name("source_name", source_name)

        def describe(errors: list[FieldError]) -> str:
            return render.clone_invalid(source_key, target, errors)

        overrides = validated(CloneOverrides, {"description": description, "tags": tags}, describe)
        source = self._get(source_key, texts.USE_NAMES_AS_SOURCE, heading=texts.SOURCE_NOT_FOUND)
        try:
            clone = self.repo.clone(
                source_key, target, description=overrides.description, tags=overrides.tags
            )
        except AgentExistsError:
            raise refused(
                render.clone_target_exists(target, self._calls), "already_exists", name=target
            ) from None
        except AgentNotFoundError:  # deleted since we read it
            raise self._not_found(
                source_key, texts.USE_NAMES_AS_SOURCE, heading=texts.SOURCE_NOT_FOUND
            ) from None
        except InvalidAgentError as exc:  # a stored value of the source breaks a rule (see update)
            raise invalid(exc, describe) from None
        location = self.repo.location_of(target)
        return success(
            render.cloned(source, clone, location, self._calls),
            agent=agent_document(clone),
            source=source.name,
            source_version=source.metadata.version,
            location=location,
        )

    # -- discovery ---------------------------------------------------------------------------------

    @tool_boundary
    def list_available_tools(self) -> Result:
        return success(render.available_tools(), tools=list(TOOL_CATEGORIES), strata=list(STRATA))

    @tool_boundary
    def list_created_agents(self) -> Result:
        repo = self.repo
        counts = repo.count_by_stratum()
        groups = listing.list_groups(counts, repo.first_by_stratum(texts.LIST_AGENTS_PER_STRATUM))
        return success(
            listing.agent_list(groups, self._calls),
            total=sum(g.total for g in groups),
            groups={g.label: [a.name for a in g.agents] for g in groups},
            counts={g.label: g.total for g in groups},
        )

    @tool_boundary
    def search_agents(
        self,
        query: object = None,
        stratum: object = None,
        tools: object = None,
        tags: object = None,
        created_after: object = None,
        created_before: object = None,
        min_executions: object = None,
        sort_by: object = "name",
        limit: object = SEARCH_LIMIT_DEFAULT,
    ) -> Result:
        search = validated(
            SearchQuery,
            {
                "query": query,
                "stratum": stratum,
                "tools": tools,
                "tags": tags,
                "created_after": created_after,
                "created_before": created_before,
                "min_executions": min_executions,
                "sort_by": sort_by,
                "limit": limit,
            },
            lambda errors: render.invalid_parameters("search", errors),
        )
        agents = self.repo.search(search)
        if agents:
            text = search_texts.search_results(search, agents, self._calls)
        else:
            text = search_texts.no_search_results(search, self.repo.count_by_stratum(), self._calls)
        # Counted only when the limit may have cut the answer: a short page is the whole answer.
        total = self.repo.count(search) if len(agents) == search.limit else len(agents)
        return success(
            text,
            count=len(agents),
            total=total,
            names=[a.name for a in agents],
            query=search.model_dump(mode="json"),
        )

    # -- execution ---------------------------------------------------------------------------------

    @tool_boundary
    def get_agent_history(
        self,
        name: object,
        limit: object = HISTORY_LIMIT_DEFAULT,
        include_errors_only: object = False,
    ) -> Result:
        agent_name = valid_name("name", name)
        params = validated(
            HistoryRequest,
            {"limit": limit, "include_errors_only": include_errors_only},
            lambda errors: render.invalid_parameters("history", errors),
        )
        try:
            history = self.repo.get_history(
                agent_name, limit=params.limit, errors_only=params.include_errors_only
            )
            stats = self.repo.execution_stats(agent_name)
        except AgentNotFoundError:
            raise self._not_found(agent_name, texts.USE_NAMES) from None
        location = self.repo.history_location_of(agent_name)
        text = render_history.history(
            history, stats, location, errors_only=params.include_errors_only, calls=self._calls
        )
        return success(
            text,
            history=history_document(history),
            stats=stats.model_dump(mode="json"),
            location=location,
        )

    def _request(
        self, agent_name: object, task: object, timeout: object, skip_unavailable_tools: object
    ) -> tuple[Agent, ExecutionRequest]:
        """What a run needs from the store and the arguments, checked."""
        name = valid_name("agent_name", agent_name)
        params = validated(
            ExecutionRequest,
            {"task": task, "timeout": timeout, "skip_unavailable_tools": skip_unavailable_tools},
            lambda errors: render.invalid_parameters("execution", errors),
        )
        return self._get(name, texts.USE_NAMES_OR_CREATE), params

    def _agent_runner(self, agent_name: str) -> AgentRunner:
        """This tool set's runner, created on first use (the ``agents`` extra may be absent)."""
        with self._runner_lock:
            if self._runner is None:
                try:
                    from ..execution import AgentRunner
                except ImportError as exc:
                    raise refused(
                        render.agents_extra_missing(agent_name, exc), "agents_extra_missing"
                    ) from None
                self._runner = AgentRunner(self.repo, model=self._model, catalog=self._catalog)
            return self._runner

    @tool_boundary
    def execute_created_agent(
        self,
        agent_name: object,
        task: object,
        timeout: object = None,
        skip_unavailable_tools: object = True,
    ) -> Result:
        agent, params = self._request(agent_name, task, timeout, skip_unavailable_tools)
        runner = self._agent_runner(agent.name)
        report = runner.run_sync(
            agent,
            params.task,
            timeout=params.timeout,
            skip_unavailable_tools=params.skip_unavailable_tools,
        )
        return report.text, report.artifact

    async def aexecute_created_agent(
        self,
        agent_name: object,
        task: object,
        timeout: object = None,
        skip_unavailable_tools: object = True,
    ) -> Result:
        """``execute_created_agent`` for an event loop: the store read on its threads, the
        runner made in a thread the first time (importing the agent stack), the run awaited."""
        arguments = (agent_name, task, timeout, skip_unavailable_tools)
        try:
            refuse_unencodable(
                "execute_created_agent",
                {"agent_name": agent_name, "task": task, "timeout": timeout},
            )
            repo = await self.arepo()
            agent, params = await repo.acall_in_thread(lambda r: self.on(r)._request(*arguments))
            runner = self._runner
            if runner is None:  # imports the agent stack, no store work: a plain thread
                runner = await asyncio.to_thread(self._agent_runner, agent.name)
            report = await runner.run(
                agent,
                params.task,
                timeout=params.timeout,
                skip_unavailable_tools=params.skip_unavailable_tools,
            )
        except (Refused, AgentStoreError) as exc:
            return settled(exc)
        return report.text, report.artifact
