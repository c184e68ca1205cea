"""The ten builder tools: thin LangChain adapters over the repository.

Each tool checks its arguments with the domain models (``acti_store.models``), makes one or two
repository calls and renders the contract's text (``render``). It never raises to the model:
every refusal and every store error becomes an ``ERROR: ...`` text, and every outcome comes with a
dict artifact for programs (``{"status": "success" | "error", ...}``).

``make_builder_tools(repo)`` binds the tools to a repository. ``BUILDER_TOOLS`` and
``ASYNC_TOOLS`` are bound to the default store (``open_repository()``), opened on first use.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, Final, NamedTuple, ParamSpec, TypeVar

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ..bootstrap import open_repository
from ..documents import agent_document, history_document
from ..errors import (
    AgentExistsError,
    AgentNotFoundError,
    AgentStoreError,
    NoChangesError,
    VersionConflictError,
)
from ..models import (
    DEFAULT_MODEL,
    HISTORY_LIMIT_DEFAULT,
    HISTORY_MAX_RECORDS,
    SEARCH_LIMIT_DEFAULT,
    STRATA,
    TASK_MAX_LENGTH,
    TASK_MIN_LENGTH,
    TIMEOUT_DEFAULT,
    TIMEOUT_MAX,
    TIMEOUT_MIN,
    TOOL_CATEGORIES,
    Agent,
    AgentConfig,
    AgentUpdate,
    Description,
    SearchQuery,
    Stratum,
    TagList,
    is_valid_name,
)
from ..repository import AgentRepository
from . import render, schemas, texts
from .render import FieldError

if TYPE_CHECKING:
    from ..execution import AgentRunner

Result = tuple[str, dict[str, Any]]
"""What every tool returns: the text for the model and the artifact for programs."""

P = ParamSpec("P")
M = TypeVar("M", bound=BaseModel)


# --------------------------------------------------------------------------------------------------
# Results and refusals
# --------------------------------------------------------------------------------------------------


def _success(text: str, **data: Any) -> Result:
    return text, {"status": "success", **data}


def _error(text: str, error: str, **data: Any) -> Result:
    return text, {"status": "error", "error": error, **data}


class _Refused(Exception):
    """Raised inside a tool to return an ERROR result at once (caught by ``_tool``)."""

    def __init__(self, result: Result) -> None:
        super().__init__(result[0])
        self.result = result


def _refused(text: str, error: str, **data: Any) -> _Refused:
    return _Refused(_error(text, error, **data))


def _store_error(error: AgentStoreError) -> Result:
    return _error(render.store_error(error), "store_error", message=str(error))


def _tool(
    method: Callable[Concatenate[BuilderTools, P], Result],
) -> Callable[Concatenate[BuilderTools, P], Result]:
    """The boundary of a tool: refusals and store errors become ERROR results, never raises."""

    def run(self: BuilderTools, /, *args: P.args, **kwargs: P.kwargs) -> Result:
        try:
            _refuse_unencodable(method.__name__, {"input": args, **kwargs})
            return method(self, *args, **kwargs)
        except _Refused as refusal:
            return refusal.result
        except AgentStoreError as exc:
            return _store_error(exc)

    functools.update_wrapper(run, method)
    return run


def _unencodable(value: object) -> bool:
    """True when ``value`` holds text no store can keep: a lone surrogate (invalid UTF-8)."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list | tuple):
        return any(_unencodable(item) for item in value)
    if isinstance(value, dict):
        return any(_unencodable(k) or _unencodable(v) for k, v in value.items())
    return False


def _refuse_unencodable(tool: str, arguments: Mapping[str, object]) -> None:
    """Refuse text that is not valid Unicode before anything (pydantic included) renders it."""
    errors = [FieldError(k, texts.NOT_UNICODE) for k, v in arguments.items() if _unencodable(v)]
    if errors:
        raise _invalid_fields(render.invalid_arguments(tool, errors), errors)


def _given(arguments: Mapping[str, object]) -> dict[str, object]:
    """The arguments that were given: ``None`` means "not given" (the model's default applies)."""
    return {key: value for key, value in arguments.items() if value is not None}


def _validated(
    model: type[M], arguments: Mapping[str, object], describe: Callable[[list[FieldError]], str]
) -> M:
    """``arguments`` as ``model``, or a refusal listing every problem at once."""
    try:
        return model.model_validate(_given(arguments))
    except ValidationError as exc:
        raise _invalid(exc, describe) from None


def _invalid(error: ValidationError, describe: Callable[[list[FieldError]], str]) -> _Refused:
    errors = render.field_errors(error)
    return _invalid_fields(describe(errors), errors)


def _invalid_fields(text: str, errors: list[FieldError]) -> _Refused:
    return _refused(text, "validation", errors=[e._asdict() for e in errors])


def _name(parameter: str, value: object) -> str:
    """``value`` if it is a valid agent name; else refuse before anything touches storage."""
    if not isinstance(value, str) or not is_valid_name(value):
        raise _refused(render.invalid_name(parameter, value), "invalid_name", parameter=parameter)
    return value


# --------------------------------------------------------------------------------------------------
# Parameters that are the tools' own (no domain model holds them)
# --------------------------------------------------------------------------------------------------

_STRATUM: Final = TypeAdapter(Stratum)


class _CloneOverrides(BaseModel):
    description: Description | None = None
    tags: TagList | None = None


class _DeleteParameters(BaseModel):
    delete_history: bool = True


class _HistoryParameters(BaseModel):
    limit: int = Field(default=HISTORY_LIMIT_DEFAULT, ge=1, le=HISTORY_MAX_RECORDS)
    include_errors_only: bool = False


class _ExecutionParameters(BaseModel):
    task: str = Field(min_length=TASK_MIN_LENGTH, max_length=TASK_MAX_LENGTH)
    timeout: float = Field(
        default=TIMEOUT_DEFAULT, ge=TIMEOUT_MIN, le=TIMEOUT_MAX, allow_inf_nan=False
    )
    skip_unavailable_tools: bool = True


# --------------------------------------------------------------------------------------------------
# The tools
# --------------------------------------------------------------------------------------------------


class BuilderTools:
    """The ten tools' logic, bound to one repository (asked for on first use).

    Each method takes the tool's arguments by keyword and returns ``(text, artifact)``: what the
    LangChain tools, the CLI and other front ends all render from.
    """

    def __init__(
        self,
        repository: Callable[[], AgentRepository],
        *,
        model: Any = None,
        mcp_catalog: Any = None,
    ) -> None:
        self._repository = repository
        self._model = model
        self._catalog = mcp_catalog
        self._runner: AgentRunner | None = None
        self._runner_lock = threading.Lock()

    @property
    def repo(self) -> AgentRepository:
        return self._repository()

    # -- shared steps ------------------------------------------------------------------------------

    def _not_found(self, name: str, closing: str, **options: str) -> _Refused:
        names = self.repo.list_names()
        text = render.not_found(name, names, closing, **options)
        return _refused(text, "not_found", name=name, available=names)

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

    @_tool
    def create_agent_config(
        self,
        name: object,
        description: object,
        system_prompt: object,
        tools: object = None,
        model: object = DEFAULT_MODEL,
        stratum: object = None,
        tags: object = None,
    ) -> Result:
        if stratum is not None:
            try:
                _STRATUM.validate_python(stratum)
            except ValidationError:
                raise _refused(
                    render.invalid_stratum(stratum), "invalid_stratum", valid=list(STRATA)
                ) from None
        config = _validated(
            AgentConfig,
            {
                "name": name,
                "description": description,
                "system_prompt": system_prompt,
                "tools": tools,
                "model": model,
                "stratum": stratum,
                "tags": tags,
            },
            render.config_invalid,
        )
        try:
            agent = self.repo.create(config)
        except AgentExistsError:
            raise _refused(
                render.already_exists(config.name), "already_exists", name=config.name
            ) from None
        location = self.repo.location_of(agent.name)
        return _success(
            render.created(agent, location), agent=agent_document(agent), location=location
        )

    @_tool
    def get_agent_config(self, name: object) -> Result:
        agent = self._get(_name("name", name), texts.USE_NAMES_OR_CREATE)
        return _success(render.agent_config(agent), agent=agent_document(agent))

    @_tool
    def update_agent_config(
        self,
        name: object,
        description: object = None,
        system_prompt: object = None,
        tools: object = None,
        model: object = None,
        stratum: object = None,
        tags: object = None,
    ) -> Result:
        agent_name = _name("name", name)
        old = self._get(agent_name, texts.USE_NAMES_OR_CREATE)

        def describe(errors: list[FieldError]) -> str:
            return render.update_invalid(agent_name, errors)

        changes = _validated(
            AgentUpdate,
            {
                "description": description,
                "system_prompt": system_prompt,
                "tools": tools,
                "model": model,
                "stratum": stratum,
                "tags": tags,
            },
            describe,
        )
        try:
            new = self.repo.update(agent_name, changes, expected_version=old.metadata.version)
        except NoChangesError:
            raise _refused(render.no_changes(agent_name), "no_changes", name=agent_name) from None
        except VersionConflictError as exc:
            raise _refused(
                render.version_conflict(exc),
                "version_conflict",
                name=agent_name,
                expected_version=exc.expected,
                actual_version=exc.actual,
            ) from None
        except AgentNotFoundError:
            raise self._not_found(agent_name, texts.USE_NAMES_OR_CREATE) from None
        except ValidationError as exc:  # the merged configuration broke a rule
            raise _invalid(exc, describe) from None
        location = self.repo.location_of(agent_name)
        return _success(
            render.updated(old, new, location),
            agent=agent_document(new),
            previous_version=old.metadata.version,
            changed=render.changed_fields(old, new),
            location=location,
        )

    @_tool
    def delete_agent_config(
        self, name: object, confirm: object = False, delete_history: object = True
    ) -> Result:
        agent_name = _name("name", name)
        params = _validated(
            _DeleteParameters,
            {"delete_history": delete_history},
            lambda errors: render.invalid_parameters("delete", errors),
        )
        places = self._places(agent_name)
        try:
            if confirm is not True:  # anything but an explicit True is a dry run
                agent = self.repo.get(agent_name)
                text = render.delete_preview(agent, places, delete_history=params.delete_history)
                return _success(
                    text,
                    deleted=False,
                    agent=agent_document(agent),
                    delete_history=params.delete_history,
                )
            agent = self.repo.delete(agent_name, delete_history=params.delete_history)
        except AgentNotFoundError:
            names = self.repo.list_names()
            text = render.delete_not_found(agent_name, names, places)
            raise _refused(text, "not_found", name=agent_name, available=names) from None
        return _success(
            render.deleted(agent_name, places, delete_history=params.delete_history),
            deleted=True,
            agent=agent_document(agent),
            delete_history=params.delete_history,
        )

    @_tool
    def clone_agent_config(
        self,
        source_name: object,
        new_name: object,
        description: object = None,
        tags: object = None,
    ) -> Result:
        target = _name("new_name", new_name)
        source_key = _name("source_name", source_name)

        def describe(errors: list[FieldError]) -> str:
            return render.clone_invalid(source_key, target, errors)

        overrides = _validated(
            _CloneOverrides, {"description": description, "tags": tags}, describe
        )
        source = self._get(
            source_key,
            texts.USE_NAMES_AS_SOURCE,
            heading=texts.SOURCE_NOT_FOUND,
        )
        try:
            clone = self.repo.clone(
                source_key, target, description=overrides.description, tags=overrides.tags
            )
        except AgentExistsError:
            raise _refused(
                render.clone_target_exists(target), "already_exists", name=target
            ) from None
        except AgentNotFoundError:  # deleted since we read it
            raise self._not_found(
                source_key, texts.USE_NAMES_AS_SOURCE, heading=texts.SOURCE_NOT_FOUND
            ) from None
        except ValidationError as exc:
            raise _invalid(exc, describe) from None
        location = self.repo.location_of(target)
        return _success(
            render.cloned(source, clone, location),
            agent=agent_document(clone),
            source=source.name,
            source_version=source.metadata.version,
            location=location,
        )

    # -- discovery ---------------------------------------------------------------------------------

    @_tool
    def list_available_tools(self) -> Result:
        return _success(render.available_tools(), tools=list(TOOL_CATEGORIES), strata=list(STRATA))

    @_tool
    def list_created_agents(self) -> Result:
        agents = self.repo.list_agents()
        groups = {
            label: [a.name for a in members]
            for label, members in render.group_by_stratum(agents).items()
        }
        return _success(render.agent_list(agents), total=len(agents), groups=groups)

    @_tool
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
        search = _validated(
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
            text = render.search_results(search, agents)
        else:
            text = render.no_search_results(search, self.repo.count_by_stratum())
        return _success(
            text,
            count=len(agents),
            names=[a.name for a in agents],
            query=search.model_dump(mode="json"),
        )

    # -- execution ---------------------------------------------------------------------------------

    @_tool
    def get_agent_history(
        self,
        name: object,
        limit: object = HISTORY_LIMIT_DEFAULT,
        include_errors_only: object = False,
    ) -> Result:
        agent_name = _name("name", name)
        params = _validated(
            _HistoryParameters,
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
        text = render.history(history, stats, location, errors_only=params.include_errors_only)
        return _success(
            text,
            history=history_document(history),
            stats=stats.model_dump(mode="json"),
            location=location,
        )

    def _execution(
        self, agent_name: object, task: object, timeout: object, skip_unavailable_tools: object
    ) -> tuple[Agent, _ExecutionParameters, AgentRunner]:
        """Everything a run needs, checked: the agent, the parameters and the runner."""
        name = _name("agent_name", agent_name)
        params = _validated(
            _ExecutionParameters,
            {"task": task, "timeout": timeout, "skip_unavailable_tools": skip_unavailable_tools},
            lambda errors: render.invalid_parameters("execution", errors),
        )
        agent = self._get(name, texts.USE_NAMES_OR_CREATE)
        return agent, params, self._agent_runner(name)

    def _agent_runner(self, agent_name: str) -> AgentRunner:
        """This tool set's runner, created on first use (the ``agents`` extra may be absent)."""
        with self._runner_lock:
            if self._runner is None:
                try:
                    from ..execution import AgentRunner
                except ImportError as exc:
                    raise _refused(
                        render.agents_extra_missing(agent_name, exc), "agents_extra_missing"
                    ) from None
                self._runner = AgentRunner(self.repo, model=self._model, catalog=self._catalog)
            return self._runner

    @_tool
    def execute_created_agent(
        self,
        agent_name: object,
        task: object,
        timeout: object = None,
        skip_unavailable_tools: object = True,
    ) -> Result:
        agent, params, runner = self._execution(agent_name, task, timeout, skip_unavailable_tools)
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
        """``execute_created_agent`` for an event loop: store work in a thread, the run awaited."""
        try:
            _refuse_unencodable(
                "execute_created_agent",
                {"agent_name": agent_name, "task": task, "timeout": timeout},
            )
            agent, params, runner = await asyncio.to_thread(
                self._execution, agent_name, task, timeout, skip_unavailable_tools
            )
            report = await runner.run(
                agent,
                params.task,
                timeout=params.timeout,
                skip_unavailable_tools=params.skip_unavailable_tools,
            )
        except _Refused as refusal:
            return refusal.result
        except AgentStoreError as exc:
            return _store_error(exc)
        return report.text, report.artifact


def _in_thread(func: Callable[..., Result]) -> Callable[..., Awaitable[Result]]:
    """``func`` as a coroutine function that runs it in a worker thread (the loop stays free)."""

    async def run(*args: Any, **kwargs: Any) -> Result:
        return await asyncio.to_thread(func, *args, **kwargs)

    return run


class _Spec(NamedTuple):
    func: Callable[..., Result]
    coroutine: Callable[..., Awaitable[Result]]
    args_schema: type[BaseModel]
    description: str


def _tools(builder: BuilderTools) -> list[BaseTool]:
    """The ten tools of ``builder``, in the contract's order."""

    def spec(func: Callable[..., Result], args: type[BaseModel], description: str) -> _Spec:
        return _Spec(func, _in_thread(func), args, description)

    b = builder
    specs = [
        spec(b.create_agent_config, schemas.CreateAgentConfigArgs, schemas.CREATE_AGENT_CONFIG),
        spec(b.get_agent_config, schemas.AgentNameArgs, schemas.GET_AGENT_CONFIG),
        spec(b.update_agent_config, schemas.UpdateAgentConfigArgs, schemas.UPDATE_AGENT_CONFIG),
        spec(b.delete_agent_config, schemas.DeleteAgentConfigArgs, schemas.DELETE_AGENT_CONFIG),
        spec(b.clone_agent_config, schemas.CloneAgentConfigArgs, schemas.CLONE_AGENT_CONFIG),
        spec(b.list_available_tools, schemas.NoArgs, schemas.LIST_AVAILABLE_TOOLS),
        spec(b.list_created_agents, schemas.NoArgs, schemas.LIST_CREATED_AGENTS),
        spec(b.search_agents, schemas.SearchAgentsArgs, schemas.SEARCH_AGENTS),
        _Spec(
            b.execute_created_agent,
            b.aexecute_created_agent,
            schemas.ExecuteCreatedAgentArgs,
            schemas.EXECUTE_CREATED_AGENT,
        ),
        spec(b.get_agent_history, schemas.GetAgentHistoryArgs, schemas.GET_AGENT_HISTORY),
    ]
    return [
        StructuredTool.from_function(
            func=s.func,
            coroutine=s.coroutine,
            name=s.func.__name__,
            description=s.description,
            args_schema=s.args_schema,
            response_format="content_and_artifact",
            handle_validation_error=functools.partial(render.arguments_refused, s.func.__name__),
        )
        for s in specs
    ]


def make_builder_tools(
    repo: AgentRepository, *, model: Any = None, mcp_catalog: Any = None
) -> list[BaseTool]:
    """The ten builder tools bound to ``repo``, in the contract's order.

    ``model`` and ``mcp_catalog`` go to the runner of ``execute_created_agent`` (created on first
    use): the chat model to run agents with (default: each agent's configured model) and the MCP
    server catalog.
    """
    return _tools(BuilderTools(lambda: repo, model=model, mcp_catalog=mcp_catalog))


# --------------------------------------------------------------------------------------------------
# The module exports of the contract, bound to the default store
# --------------------------------------------------------------------------------------------------


class _LazyRepository:
    """``open_repository()`` on first use (importing this module opens nothing)."""

    def __init__(self) -> None:
        self._repo: AgentRepository | None = None
        self._lock = threading.Lock()

    def __call__(self) -> AgentRepository:
        with self._lock:
            if self._repo is None:
                self._repo = open_repository()
            return self._repo

    def close(self) -> None:
        """Close the default store; the next use opens it again (e.g. a new ACTI_STORE_URL)."""
        with self._lock:
            if self._repo is not None:
                self._repo.close()
                self._repo = None


default_repository: Final = _LazyRepository()
_DEFAULT: Final = BuilderTools(default_repository)

#: The ten tools of the builder agent, bound to the default store, in the contract's order.
BUILDER_TOOLS: Final[list[BaseTool]] = _tools(_DEFAULT)


async def _text(func: Callable[..., Result], **arguments: object) -> str:
    text, _ = await asyncio.to_thread(func, **arguments)
    return text


async def create_agent_config_async(
    name: str,
    description: str,
    system_prompt: str,
    tools: list[str] | None = None,
    model: str = DEFAULT_MODEL,
    stratum: str | None = None,
    tags: list[str] | None = None,
) -> str:
    """Async variant of ``create_agent_config`` (default store): the same text, loop kept free."""
    return await _text(
        _DEFAULT.create_agent_config,
        name=name,
        description=description,
        system_prompt=system_prompt,
        tools=tools,
        model=model,
        stratum=stratum,
        tags=tags,
    )


async def get_agent_config_async(name: str) -> str:
    """Async variant of ``get_agent_config`` (default store)."""
    return await _text(_DEFAULT.get_agent_config, name=name)


async def update_agent_config_async(
    name: str,
    description: str | None = None,
    system_prompt: str | None = None,
    tools: list[str] | None = None,
    model: str | None = None,
    stratum: str | None = None,
    tags: list[str] | None = None,
) -> str:
    """Async variant of ``update_agent_config`` (default store)."""
    return await _text(
        _DEFAULT.update_agent_config,
        name=name,
        description=description,
        system_prompt=system_prompt,
        tools=tools,
        model=model,
        stratum=stratum,
        tags=tags,
    )


async def delete_agent_config_async(
    name: str, confirm: bool = False, delete_history: bool = True
) -> str:
    """Async variant of ``delete_agent_config`` (default store)."""
    return await _text(
        _DEFAULT.delete_agent_config, name=name, confirm=confirm, delete_history=delete_history
    )


async def clone_agent_config_async(
    source_name: str,
    new_name: str,
    description: str | None = None,
    tags: list[str] | None = None,
) -> str:
    """Async variant of ``clone_agent_config`` (default store)."""
    return await _text(
        _DEFAULT.clone_agent_config,
        source_name=source_name,
        new_name=new_name,
        description=description,
        tags=tags,
    )


async def list_created_agents_async() -> str:
    """Async variant of ``list_created_agents`` (default store)."""
    return await _text(_DEFAULT.list_created_agents)


async def search_agents_async(
    query: str | None = None,
    stratum: str | None = None,
    tools: list[str] | None = None,
    tags: list[str] | None = None,
    created_after: str | None = None,
    created_before: str | None = None,
    min_executions: int | None = None,
    sort_by: str = "name",
    limit: int = SEARCH_LIMIT_DEFAULT,
) -> str:
    """Async variant of ``search_agents`` (default store)."""
    return await _text(
        _DEFAULT.search_agents,
        query=query,
        stratum=stratum,
        tools=tools,
        tags=tags,
        created_after=created_after,
        created_before=created_before,
        min_executions=min_executions,
        sort_by=sort_by,
        limit=limit,
    )


async def execute_created_agent_async(
    agent_name: str,
    task: str,
    timeout: float | None = None,
    skip_unavailable_tools: bool = True,
) -> str:
    """Async variant of ``execute_created_agent`` (default store): the run is awaited."""
    text, _ = await _DEFAULT.aexecute_created_agent(
        agent_name, task, timeout=timeout, skip_unavailable_tools=skip_unavailable_tools
    )
    return text


async def get_agent_history_async(
    name: str, limit: int = HISTORY_LIMIT_DEFAULT, include_errors_only: bool = False
) -> str:
    """Async variant of ``get_agent_history`` (default store)."""
    return await _text(
        _DEFAULT.get_agent_history,
        name=name,
        limit=limit,
        include_errors_only=include_errors_only,
    )


#: The contract's async variants (for FastAPI), bound to the default store.
ASYNC_TOOLS: Final[dict[str, Callable[..., Awaitable[str]]]] = {
    "create_agent_config": create_agent_config_async,
    "get_agent_config": get_agent_config_async,
    "update_agent_config": update_agent_config_async,
    "delete_agent_config": delete_agent_config_async,
    "clone_agent_config": clone_agent_config_async,
    "list_created_agents": list_created_agents_async,
    "search_agents": search_agents_async,
    "execute_created_agent": execute_created_agent_async,
    "get_agent_history": get_agent_history_async,
}

__all__ = [
    "ASYNC_TOOLS",
    "BUILDER_TOOLS",
    "Result",
    "clone_agent_config_async",
    "create_agent_config_async",
    "default_repository",
    "delete_agent_config_async",
    "execute_created_agent_async",
    "get_agent_config_async",
    "get_agent_history_async",
    "list_created_agents_async",
    "make_builder_tools",
    "search_agents_async",
    "update_agent_config_async",
]
