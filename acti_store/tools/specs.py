"""The ten tools, each declared once: its ``BuilderTools`` method, args schema and description.

Everything else is derived from ``TOOL_SPECS``: the LangChain tools (``make_builder_tools``: the
method as the sync function, the method on the store's threads, or its native
``a``-prefixed twin, as the coroutine), the contract's text-only async variants
(``async_variants``, whose signatures are their args schemas'), and the tool list of the builder
agent's prompt. Front ends (the CLI's
option help) read the same declarations.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import operator
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import GenericAlias, MethodType
from typing import TYPE_CHECKING, Any, Final, Protocol

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ValidationError

from ..errors import AgentStoreError
from ..repository import AgentRepository
from . import schemas, version_schemas
from .builder import BuilderTools
from .outcomes import Result, arguments_refused, settled
from .version_tools import VersionTools

if TYPE_CHECKING:
    from ..execution import AgentRunner

#: What LangChain imports on the first call of any tool (its tracing callbacks): imported with the
#: tools, so that the first ``ainvoke`` does not spend tens of ms importing on the event loop.
FIRST_CALL_IMPORTS: Final = (
    "langchain_core.tracers.context",
    "langchain_core.tracers.langchain",
    "langchain_core.tracers.run_collector",
    "langchain_core.tracers.stdout",
    "langsmith.run_helpers",
    "tenacity.asyncio",
)
for _module in FIRST_CALL_IMPORTS:
    with contextlib.suppress(ImportError):  # private modules of a dependency may move
        importlib.import_module(_module)

AsyncVariant = Callable[..., Awaitable[str]]
"""A tool as the contract's ``*_async`` function: the tool's text, the event loop kept free."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what the model sees of it and the ``BuilderTools`` method that does the work."""

    #: The ``BuilderTools`` (or ``VersionTools``) method, unbound; the tool is named after it.
    method: Callable[..., Result]
    #: The arguments, each with its description and JSON schema, in the signature's order.
    args_schema: type[BaseModel]
    #: What the model learns the tool from.
    description: str
    #: An async twin of ``method`` (unbound) that awaits its work; else ``method`` in a thread.
    native_coroutine: Callable[..., Awaitable[Result]] | None = None
    #: Whether the contract's ``ASYNC_TOOLS`` has it (it leaves ``list_available_tools`` out).
    async_export: bool = True
    #: Whether the tool only reads the store (served by a read-only front end, e.g. ``serve-mcp
    #: --read-only``); a tool that may write leaves it False.
    reads_only: bool = False

    @property
    def name(self) -> str:
        return self.method.__name__

    @property
    def parameters(self) -> tuple[str, ...]:
        """The argument names, in the signature's order."""
        return tuple(self.args_schema.model_fields)

    @property
    def required(self) -> tuple[str, ...]:
        """The arguments without a default."""
        return tuple(n for n, f in self.args_schema.model_fields.items() if f.is_required())


#: The ten tools of the builder agent, in the contract's order.
TOOL_SPECS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        BuilderTools.create_agent_config,
        schemas.CreateAgentConfigArgs,
        schemas.CREATE_AGENT_CONFIG,
    ),
    ToolSpec(
        BuilderTools.get_agent_config,
        schemas.AgentNameArgs,
        schemas.GET_AGENT_CONFIG,
        reads_only=True,
    ),
    ToolSpec(
        BuilderTools.update_agent_config,
        schemas.UpdateAgentConfigArgs,
        schemas.UPDATE_AGENT_CONFIG,
    ),
    ToolSpec(
        BuilderTools.delete_agent_config,
        schemas.DeleteAgentConfigArgs,
        schemas.DELETE_AGENT_CONFIG,
    ),
    ToolSpec(
        BuilderTools.clone_agent_config, schemas.CloneAgentConfigArgs, schemas.CLONE_AGENT_CONFIG
    ),
    ToolSpec(
        BuilderTools.list_available_tools,
        schemas.NoArgs,
        schemas.LIST_AVAILABLE_TOOLS,
        async_export=False,
        reads_only=True,
    ),
    ToolSpec(
        BuilderTools.list_created_agents,
        schemas.NoArgs,
        schemas.LIST_CREATED_AGENTS,
        reads_only=True,
    ),
    ToolSpec(
        BuilderTools.search_agents,
        schemas.SearchAgentsArgs,
        schemas.SEARCH_AGENTS,
        reads_only=True,
    ),
    ToolSpec(
        BuilderTools.execute_created_agent,
        schemas.ExecuteCreatedAgentArgs,
        schemas.EXECUTE_CREATED_AGENT,
        native_coroutine=BuilderTools.aexecute_created_agent,
    ),
    ToolSpec(
        BuilderTools.get_agent_history,
        schemas.GetAgentHistoryArgs,
        schemas.GET_AGENT_HISTORY,
        reads_only=True,
    ),
)

#: The six version tools (``make_version_tools``), whose methods are ``VersionTools``'.
VERSION_TOOL_SPECS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        VersionTools.list_agent_versions,
        version_schemas.ListAgentVersionsArgs,
        version_schemas.LIST_AGENT_VERSIONS,
        reads_only=True,
    ),
    ToolSpec(
        VersionTools.diff_agent_versions,
        version_schemas.DiffAgentVersionsArgs,
        version_schemas.DIFF_AGENT_VERSIONS,
        reads_only=True,
    ),
    ToolSpec(
        VersionTools.rollback_agent_config,
        version_schemas.RollbackAgentConfigArgs,
        version_schemas.ROLLBACK_AGENT_CONFIG,
    ),
    ToolSpec(
        VersionTools.set_agent_label,
        version_schemas.SetAgentLabelArgs,
        version_schemas.SET_AGENT_LABEL,
    ),
    ToolSpec(
        VersionTools.rollback_agent_label,
        version_schemas.RollbackAgentLabelArgs,
        version_schemas.ROLLBACK_AGENT_LABEL,
    ),
    ToolSpec(
        VersionTools.compare_agent_versions,
        version_schemas.CompareAgentVersionsArgs,
        version_schemas.COMPARE_AGENT_VERSIONS,
        reads_only=True,
    ),
)

#: Each declaration by tool name (the ten, then the version tools).
SPECS_BY_NAME: Final[Mapping[str, ToolSpec]] = {
    spec.name: spec for spec in (*TOOL_SPECS, *VERSION_TOOL_SPECS)
}


# --------------------------------------------------------------------------------------------------
# The LangChain tools
# --------------------------------------------------------------------------------------------------


class StoreBound(Protocol):
    """What a tool's logic offers its coroutine: its store, and itself on another store."""

    async def arepo(self) -> AgentRepository: ...

    def on(self, repo: AgentRepository) -> object: ...


def tool_coroutine(builder: StoreBound, spec: ToolSpec) -> Callable[..., Awaitable[Result]]:
    """The tool's work for an event loop: its native twin, else the whole method on the store's
    own threads (``acall_in_thread``): validating and rendering stay off the loop, and on
    PostgreSQL each repository call is the store's coroutine twin, awaited on the loop. What
    LangChain's ``ainvoke`` runs, and the MCP server's tools and resources too."""
    if spec.native_coroutine is not None:
        return MethodType(spec.native_coroutine, builder)
    method = spec.method

    async def on_store(*args: Any, **kwargs: Any) -> Result:
        try:
            repo = await builder.arepo()
            return await repo.acall_in_thread(
                lambda store: method(builder.on(store), *args, **kwargs)
            )
        except AgentStoreError as exc:  # the async side itself failed (e.g. no greenlet)
            return settled(exc)

    return on_store


#: Keyword arguments ``BuilderTool`` passes from parsing to running, next to the tool's own (no
#: tool argument can have these names: they are not identifiers).
_REFUSAL: Final = "<refusal>"
_CALL_ID: Final = "<tool_call_id>"


class BuilderTool(StructuredTool):
    """A structured tool whose every answer is ``(text, artifact)``, refusals included.

    Arguments the args schema refuses (a required one missing, no mapping at all) are answered by
    the tool, not by LangChain's ``handle_validation_error``: the same ERROR text, with its
    artifact. Invoked with a tool call, an ERROR answer is a ``ToolMessage`` with
    ``status="error"`` (what LangGraph's ``ToolNode`` and agents read); invoked with plain
    arguments, the text as before.
    """

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        try:
            args, kwargs = super()._to_args_and_kwargs(tool_input, tool_call_id)
        except ValidationError as exc:
            args, kwargs = (), {_REFUSAL: arguments_refused(self.name, exc)}
        return args, {**kwargs, _CALL_ID: tool_call_id}

    def _answer(self, result: Result, call_id: str | None) -> tuple[Any, dict[str, Any]]:
        """``result``, its text as an error ``ToolMessage`` when it refuses a tool call."""
        text, artifact = result
        if call_id is None or artifact.get("status") != "error":
            return result
        message = ToolMessage(
            text, artifact=artifact, tool_call_id=call_id, name=self.name, status="error"
        )
        return message, artifact

    def _run(
        self,
        *args: Any,
        config: RunnableConfig,
        run_manager: CallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> Any:
        call_id = kwargs.pop(_CALL_ID, None)
        result = kwargs.pop(_REFUSAL, None) or super()._run(
            *args, config=config, run_manager=run_manager, **kwargs
        )
        return self._answer(result, call_id)

    async def _arun(
        self,
        *args: Any,
        config: RunnableConfig,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> Any:
        call_id = kwargs.pop(_CALL_ID, None)
        result = kwargs.pop(_REFUSAL, None) or await super()._arun(
            *args, config=config, run_manager=run_manager, **kwargs
        )
        return self._answer(result, call_id)


def builder_tools(builder: BuilderTools) -> list[BaseTool]:
    """The ten tools of ``builder``, in the contract's order."""
    return _structured_tools(builder, TOOL_SPECS)


def _structured_tools(owner: StoreBound, specs: tuple[ToolSpec, ...]) -> list[BaseTool]:
    """The LangChain tools of ``specs``, their methods bound to ``owner``."""
    return [
        BuilderTool.from_function(
            func=MethodType(spec.method, owner),
            coroutine=tool_coroutine(owner, spec),
            name=spec.name,
            description=spec.description,
            args_schema=spec.args_schema,
            response_format="content_and_artifact",
        )
        for spec in specs
    ]


def make_builder_tools(
    repo: AgentRepository,
    *,
    model: Any = None,
    mcp_catalog: Any = None,
    runner: AgentRunner | None = None,
) -> list[BaseTool]:
    """The ten builder tools bound to ``repo``, in the contract's order.

    ``model`` and ``mcp_catalog`` go to the runner of ``execute_created_agent`` (created on first
    use): the chat model to run agents with (default: each agent's configured model) and the MCP
    server catalog. Or ``runner``: an ``AgentRunner`` of ``repo`` that runs the agents, e.g. one
    keeping MCP servers warm (``keep_servers``; its owner closes it); it has its own model and
    catalog, so it comes without ``model`` and ``mcp_catalog``.
    """
    if runner is not None:
        if model is not None or mcp_catalog is not None:
            raise ValueError("give model and mcp_catalog to the runner, not with it")
        if runner.repo is not repo:
            raise ValueError("the runner records runs in another repository than repo")
    return builder_tools(
        BuilderTools(lambda: repo, model=model, mcp_catalog=mcp_catalog, runner=runner)
    )


def make_version_tools(repo: AgentRepository) -> list[BaseTool]:
    """The six version tools bound to ``repo``: ``list_agent_versions``,
    ``diff_agent_versions``, ``rollback_agent_config``, ``set_agent_label`` (a version, or a
    weighted split), ``rollback_agent_label`` and ``compare_agent_versions``."""
    return version_tools(BuilderTools(lambda: repo))


def version_tools(builder: BuilderTools) -> list[BaseTool]:
    """The six version tools over the repository of ``builder``."""
    return _structured_tools(VersionTools(builder), VERSION_TOOL_SPECS)


# --------------------------------------------------------------------------------------------------
# The contract's async variants
# --------------------------------------------------------------------------------------------------

_JSON_TYPES: Final[Mapping[str, type]] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
}


def _python_type(schema: Mapping[str, Any]) -> Any:
    """The Python type of an argument's JSON schema (``list[str] | None`` for a nullable list)."""
    if "anyOf" in schema:
        return functools.reduce(operator.or_, map(_python_type, schema["anyOf"]))
    if schema["type"] == "array":
        return GenericAlias(list, (_python_type(schema["items"]),))
    return _JSON_TYPES[schema["type"]]


def signature(spec: ToolSpec) -> inspect.Signature:
    """The tool's parameters as a Python signature: names, defaults and types of its schema."""
    shown = spec.args_schema.model_json_schema().get("properties", {})
    return inspect.Signature(
        [
            inspect.Parameter(
                name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=inspect.Parameter.empty if field.is_required() else field.default,
                annotation=_python_type(shown[name]),
            )
            for name, field in spec.args_schema.model_fields.items()
        ],
        return_annotation=str,
    )


def _async_variant(builder: BuilderTools, spec: ToolSpec) -> AsyncVariant:
    run = tool_coroutine(builder, spec)
    parameters = signature(spec)

    async def variant(*args: Any, **kwargs: Any) -> str:
        call = parameters.bind(*args, **kwargs)
        call.apply_defaults()
        text, _ = await run(**call.arguments)
        return text

    variant.__name__ = variant.__qualname__ = f"{spec.name}_async"
    variant.__doc__ = f"Async variant of ``{spec.name}``: the same text, the event loop kept free."
    variant.__signature__ = parameters  # type: ignore[attr-defined]
    return variant


def async_variants(builder: BuilderTools) -> dict[str, AsyncVariant]:
    """The contract's ``ASYNC_TOOLS`` of ``builder``: nine coroutine functions by tool name."""
    return {spec.name: _async_variant(builder, spec) for spec in TOOL_SPECS if spec.async_export}
