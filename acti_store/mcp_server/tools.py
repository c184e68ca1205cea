"""The builder's tools as MCP tools, derived from their declarations (``tools.specs``).

Each MCP tool has its declaration's name, description and input schema (the args schema the
LangChain tool shows), and returns what the LangChain tool returns: the text as ``content`` and
the artifact as ``structuredContent`` (``ARTIFACT_SCHEMA``), with ``isError`` on every refusal.
Arguments are checked as the LangChain tool checks them (the args schema: a missing one is
refused with ``outcomes.arguments_refused``' result), then by the tool itself; the SDK does not
validate them against the schema first, which would answer a wrong value with its own text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from mcp import types
from pydantic import ValidationError

from ..tools.builder import BuilderTools
from ..tools.outcomes import Result, arguments_refused
from ..tools.specs import TOOL_SPECS, VERSION_TOOL_SPECS, StoreBound, ToolSpec, tool_coroutine
from ..tools.version_tools import VersionTools

#: What every tool's ``structuredContent`` is: its artifact (``tools.outcomes``).
ARTIFACT_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["success", "error"]},
        "error": {
            # anyOf, not a type array: strict validators (Ajv's strict mode, in TypeScript
            # clients) warn about union types.
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "When status is error: the kind of refusal (not_found, validation, "
            "already_exists, store_error, ...); for execute_created_agent, the run's error "
            "message (its kind is error_type).",
        },
    },
    "required": ["status"],
    "additionalProperties": True,
}


@dataclass(frozen=True)
class ServedTool:
    """One declared tool and the object whose method does its work (a ``BuilderTools``)."""

    spec: ToolSpec
    target: object

    @property
    def name(self) -> str:
        return self.spec.name

    def definition(self) -> types.Tool:
        """The tool as ``tools/list`` shows it."""
        spec = self.spec
        return types.Tool(
            name=spec.name,
            description=spec.description,
            inputSchema=spec.args_schema.model_json_schema(),
            outputSchema=dict(ARTIFACT_SCHEMA),
            annotations=types.ToolAnnotations(
                readOnlyHint=spec.reads_only, destructiveHint=not spec.reads_only
            ),
        )

    async def call(self, arguments: Mapping[str, Any]) -> Result:
        """The tool's ``(text, artifact)`` for ``arguments``: the tool's coroutine, as
        LangChain's ``ainvoke`` runs it (``specs.tool_coroutine``: the store's async API)."""
        spec = self.spec
        try:
            checked = spec.args_schema.model_validate(arguments)
        except ValidationError as exc:  # as the LangChain tool answers it
            return arguments_refused(spec.name, exc)
        given = {name: getattr(checked, name) for name in checked.model_fields_set}
        return await tool_coroutine(cast(StoreBound, self.target), spec)(**given)


def served_tools(
    declarations: Iterable[tuple[Sequence[ToolSpec], object]], *, read_only: bool
) -> dict[str, ServedTool]:
    """The tools to serve, by name: each set of declarations bound to its object; with
    ``read_only``, only the tools that only read (``ToolSpec.reads_only``)."""
    return {
        spec.name: ServedTool(spec, target)
        for specs, target in declarations
        for spec in specs
        if spec.reads_only or not read_only
    }


def builder_declarations(
    builder: BuilderTools, *, versions: bool = False
) -> list[tuple[Sequence[ToolSpec], object]]:
    """The builder's ten tools, bound to ``builder``; with ``versions``, the version tools too
    (``VERSION_TOOL_SPECS``, over the same store)."""
    declarations: list[tuple[Sequence[ToolSpec], object]] = [(TOOL_SPECS, builder)]
    if versions:
        declarations.append((VERSION_TOOL_SPECS, VersionTools(builder)))
    return declarations


def tool_result(result: Result) -> types.CallToolResult:
    """A tool's ``(text, artifact)`` as MCP returns it."""
    text, artifact = result
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structuredContent=artifact,
        isError=artifact.get("status") == "error",
    )
