"""Each tool is declared once (``TOOL_SPECS``): what is derived from a declaration agrees with it,
and what the model and FastAPI see of the tools stays exactly what it was."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from conftest import make_config
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, ValidationError

from acti_store import SqlAgentRepository
from acti_store.documents import describe_validation_error
from acti_store.tools import ASYNC_TOOLS, BUILDER_SYSTEM_PROMPT, BUILDER_TOOLS, defaults
from acti_store.tools.builder import BuilderTools
from acti_store.tools.render import field_errors
from acti_store.tools.specs import TOOL_SPECS, ToolSpec, async_variants
from acti_store.validation import FieldError, field_path

DATA = Path(__file__).parent / "data"

SPEC_IDS = [spec.name for spec in TOOL_SPECS]


@pytest.mark.parametrize("spec", TOOL_SPECS, ids=SPEC_IDS)
def test_the_method_takes_the_schemas_arguments(spec: ToolSpec) -> None:
    """The CLI calls the methods with the schema's arguments: same names, order and defaults
    (and, keyword-only, options of the command line's own, e.g. ``update --message``)."""
    method = inspect.signature(getattr(BuilderTools, spec.name))
    parameters = [
        p
        for p in list(method.parameters.values())[1:]  # without self
        if p.kind is not inspect.Parameter.KEYWORD_ONLY
    ]
    assert [p.name for p in parameters] == list(spec.parameters)
    for parameter in parameters:
        field = spec.args_schema.model_fields[parameter.name]
        if field.is_required():
            assert parameter.default is inspect.Parameter.empty, parameter.name
        else:
            assert parameter.default == field.default, parameter.name


def test_the_langchain_tools_are_the_declarations() -> None:
    assert [t.name for t in BUILDER_TOOLS] == SPEC_IDS
    for tool, spec in zip(BUILDER_TOOLS, TOOL_SPECS, strict=True):
        assert (tool.description, tool.args_schema) == (spec.description, spec.args_schema)
        assert tool.coroutine is not None


def test_what_the_model_sees_of_the_tools_is_unchanged() -> None:
    """Names, descriptions and JSON schemas exactly as recorded (the model learns the tools from
    them); a deliberate change updates ``tests/data/builder_tool_schemas.json``."""
    recorded = json.loads((DATA / "builder_tool_schemas.json").read_text(encoding="utf-8"))
    assert [convert_to_openai_tool(tool) for tool in BUILDER_TOOLS] == recorded


@pytest.mark.parametrize("spec", [s for s in TOOL_SPECS if s.async_export], ids=lambda s: s.name)
def test_async_variants_show_the_schemas_parameters(spec: ToolSpec) -> None:
    variant = ASYNC_TOOLS[spec.name]
    assert inspect.iscoroutinefunction(variant)
    assert variant.__name__ == f"{spec.name}_async"
    assert getattr(defaults, variant.__name__) is variant  # the contract's module names
    parameters = inspect.signature(variant).parameters
    assert list(parameters) == list(spec.parameters)
    for name, parameter in parameters.items():
        field = spec.args_schema.model_fields[name]
        expected = inspect.Parameter.empty if field.is_required() else field.default
        assert parameter.default == expected, name


def test_async_variant_signatures_are_typed() -> None:
    """FastAPI reads the types from the signature."""
    search = inspect.signature(ASYNC_TOOLS["search_agents"])
    assert str(search) == (
        "(query: str | None = None, stratum: str | None = None, tools: list[str] | None = None, "
        "tags: list[str] | None = None, created_after: str | None = None, "
        "created_before: str | None = None, min_executions: int | None = None, "
        "sort_by: str = 'name', limit: int = 20) -> str"
    )
    execute = inspect.signature(ASYNC_TOOLS["execute_created_agent"])
    assert str(execute) == (
        "(agent_name: str, task: str, timeout: float | None = None, "
        "skip_unavailable_tools: bool = True) -> str"
    )


def test_only_the_contracts_async_names_exist() -> None:
    assert "list_available_tools" not in ASYNC_TOOLS
    with pytest.raises(AttributeError):
        _ = defaults.list_available_tools_async
    with pytest.raises(AttributeError):
        _ = defaults.no_such_tool_async


async def test_async_variants_take_positional_and_keyword_arguments(
    repo: SqlAgentRepository,
) -> None:
    variants = async_variants(BuilderTools(lambda: repo))
    config = make_config()
    text = await variants["create_agent_config"](
        config.name, config.description, config.system_prompt, stratum="rai"
    )
    assert text.startswith("SUCCESS: Agent configuration created and saved!")
    assert repo.get(config.name).model == "anthropic:claude-opus-4-5-20251101"  # the default
    text = await variants["get_agent_history"]("lead_qualifier", include_errors_only=True)
    assert "No execution history found." in text
    with pytest.raises(TypeError):
        await variants["get_agent_config"]("lead_qualifier", colour="blue")
    with pytest.raises(TypeError):
        await variants["get_agent_config"]()


def test_the_builder_prompt_is_unchanged() -> None:
    """The prompt's tool list is generated from the args schemas; its text stays as written."""
    recorded = (DATA / "builder_system_prompt.txt").read_text(encoding="utf-8")
    assert recorded == BUILDER_SYSTEM_PROMPT + "\n"  # the file ends with a newline
    assert (
        "  - search_agents(query, stratum, tools, tags, created_after, created_before, "
        "min_executions, sort_by, limit): find agents; all filters combine with AND.\n"
    ) in BUILDER_SYSTEM_PROMPT
    assert "  - update_agent_config(name, ...): change only the fields" in BUILDER_SYSTEM_PROMPT


# --------------------------------------------------------------------------------------------------
# One reader of pydantic's errors, three layouts
# --------------------------------------------------------------------------------------------------


class _Inner(BaseModel):
    version: int = Field(ge=1)


class _Outer(BaseModel):
    tools: list[str]
    metadata: _Inner


def _error() -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        _Outer.model_validate({"tools": ["crm", 7], "metadata": {"version": 0}})
    return caught.value


def test_field_paths() -> None:
    assert field_path(("tools", 1), top_level="input") == "tools[1]"
    assert field_path(("tools", 1), top_level="input", bracket_indexes=False) == "tools.1"
    aliases = {"metadata": "_metadata"}
    assert field_path(("metadata", "version"), top_level="x", aliases=aliases) == (
        "_metadata.version"
    )
    assert field_path(("a", "metadata"), top_level="x", aliases=aliases) == "a.metadata"
    assert field_path((), top_level="(top level)") == "(top level)"


def test_each_caller_keeps_its_layout() -> None:
    error = _error()
    assert field_errors(error) == [
        FieldError("tools[1]", "Input should be a valid string"),
        FieldError("metadata.version", "Input should be greater than or equal to 1"),
    ]
    assert describe_validation_error(error) == (
        "tools[1]: Input should be a valid string; "
        "_metadata.version: Input should be greater than or equal to 1"
    )
