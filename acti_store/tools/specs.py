"""The ten tools, each declared once: its ``BuilderTools`` method, args schema and description.

Everything else is derived from ``TOOL_SPECS``: the LangChain tools (``make_builder_tools``: the
method as the sync function, the method on the store's threads, or its native
``a``-prefixed twin, as the coroutine), the contract's text-only async variants
(``async_variants``, whose signatures are their args schemas'), and the tool list of the builder
agent's prompt. Front ends (the CLI's
option help) read the same declarations. The LangChain tools live in ``langchain_tools`` and
are imported from there: the declarations alone (the MCP server's tools) import no LangChain.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import GenericAlias, MethodType
from typing import Any, Final, Protocol

from pydantic import BaseModel

from ..errors import AgentStoreError
from ..repository import AgentRepository
from . import schemas, version_schemas
from .builder import BuilderTools
from .outcomes import Result, settled
from .version_tools import VersionTools

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
