"""The ten tools, each declared once: its ``BuilderTools`` method, args schema and description.

Everything else is derived from ``TOOL_SPECS``: the LangChain tools (``make_builder_tools``: the
method as the sync function, the method in a worker thread, or its native ``a``-prefixed twin, as
the coroutine), the contract's text-only async variants (``async_variants``, whose signatures are
their args schemas'), and the tool list of the builder agent's prompt. Front ends (the CLI's
option help) read the same declarations.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import operator
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import GenericAlias, MethodType
from typing import Any, Final

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel

from ..repository import AgentRepository
from . import render, schemas
from .builder import BuilderTools
from .outcomes import Result

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

    #: The ``BuilderTools`` method (unbound); the tool is named after it.
    method: Callable[..., Result]
    #: The arguments, each with its description and JSON schema, in the signature's order.
    args_schema: type[BaseModel]
    #: What the model learns the tool from.
    description: str
    #: An async twin of ``method`` (unbound) that awaits its work; else ``method`` in a thread.
    native_coroutine: Callable[..., Awaitable[Result]] | None = None
    #: Whether the contract's ``ASYNC_TOOLS`` has it (it leaves ``list_available_tools`` out).
    async_export: bool = True

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
    ToolSpec(BuilderTools.get_agent_config, schemas.AgentNameArgs, schemas.GET_AGENT_CONFIG),
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
    ),
    ToolSpec(BuilderTools.list_created_agents, schemas.NoArgs, schemas.LIST_CREATED_AGENTS),
    ToolSpec(BuilderTools.search_agents, schemas.SearchAgentsArgs, schemas.SEARCH_AGENTS),
    ToolSpec(
        BuilderTools.execute_created_agent,
        schemas.ExecuteCreatedAgentArgs,
        schemas.EXECUTE_CREATED_AGENT,
        native_coroutine=BuilderTools.aexecute_created_agent,
    ),
    ToolSpec(
        BuilderTools.get_agent_history, schemas.GetAgentHistoryArgs, schemas.GET_AGENT_HISTORY
    ),
)

#: Each declaration by tool name.
SPECS_BY_NAME: Final[Mapping[str, ToolSpec]] = {spec.name: spec for spec in TOOL_SPECS}


# --------------------------------------------------------------------------------------------------
# The LangChain tools
# --------------------------------------------------------------------------------------------------


def _coroutine(builder: BuilderTools, spec: ToolSpec) -> Callable[..., Awaitable[Result]]:
    """The tool's work for an event loop: its native twin, else the method in a worker thread."""
    if spec.native_coroutine is not None:
        return MethodType(spec.native_coroutine, builder)
    func = MethodType(spec.method, builder)

    async def in_thread(*args: Any, **kwargs: Any) -> Result:
        return await asyncio.to_thread(func, *args, **kwargs)

    return in_thread


def builder_tools(builder: BuilderTools) -> list[BaseTool]:
    """The ten tools of ``builder``, in the contract's order."""
    return [
        StructuredTool.from_function(
            func=MethodType(spec.method, builder),
            coroutine=_coroutine(builder, spec),
            name=spec.name,
            description=spec.description,
            args_schema=spec.args_schema,
            response_format="content_and_artifact",
            handle_validation_error=functools.partial(render.arguments_refused, spec.name),
        )
        for spec in TOOL_SPECS
    ]


def make_builder_tools(
    repo: AgentRepository, *, model: Any = None, mcp_catalog: Any = None
) -> list[BaseTool]:
    """The ten builder tools bound to ``repo``, in the contract's order.

    ``model`` and ``mcp_catalog`` go to the runner of ``execute_created_agent`` (created on first
    use): the chat model to run agents with (default: each agent's configured model) and the MCP
    server catalog.
    """
    return builder_tools(BuilderTools(lambda: repo, model=model, mcp_catalog=mcp_catalog))


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
    run = _coroutine(builder, spec)
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
