"""The args schemas of the two tools that take an agent's configuration, create_agent_config and
update_agent_config: the contract's hand-written arguments, then one per configuration field
added after them.

The arguments of the contract's configuration fields stay hand-written: their descriptions are
the contract's fixed text (what the model reads, recorded in
tests/data/builder_tool_schemas.json), not the models' short descriptions. A field added after
them gets its argument from the model (``_with_config_fields``).
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, Field, WithJsonSchema, create_model

from ..models import (
    DEFAULT_MODEL,
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    MAX_TAGS,
    NAME_MAX_LENGTH,
    RESERVED_TAGS,
    STRATA,
    SYSTEM_PROMPT_MIN_LENGTH,
    TAG_MAX_LENGTH,
    TAG_MIN_LENGTH,
    TOOL_CATEGORIES,
    AgentConfig,
    AgentUpdate,
)
from .arguments import (
    DESCRIPTION,
    LIST_ARG,
    MODEL_ID,
    NAME,
    STRATUM,
    SYSTEM_PROMPT,
    TAG_LIST,
    TOOL_LIST,
    JsonSchema,
    _Args,
    _nullable,
    _properties,
)


class _CreateAgentConfigArgs(_Args):
    """Arguments of create_agent_config."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(
        description="Unique identifier of the new agent: snake_case (lowercase letters, digits "
        f"and underscores, starting with a letter), at most {NAME_MAX_LENGTH} characters. "
        "Example: 'lead_qualifier'."
    )
    description: Annotated[Any, WithJsonSchema(DESCRIPTION)] = Field(
        description=f"What the agent does, {DESCRIPTION_MIN_LENGTH}-{DESCRIPTION_MAX_LENGTH} "
        "characters. Example: 'Qualifies inbound leads by assessing BANT criteria'."
    )
    system_prompt: Annotated[Any, WithJsonSchema(SYSTEM_PROMPT)] = Field(
        description=f"The complete system prompt of the agent, at least "
        f"{SYSTEM_PROMPT_MIN_LENGTH} characters: its role, goals, process, tone and guardrails."
    )
    tools: Annotated[Any, LIST_ARG, WithJsonSchema(_nullable(TOOL_LIST))] = Field(
        default=None,
        description=f"MCP tool categories the agent may use, any of: {', '.join(TOOL_CATEGORIES)}."
        " Omit or pass [] for an agent without tools.",
    )
    model: Annotated[Any, WithJsonSchema(MODEL_ID)] = Field(
        default=DEFAULT_MODEL,
        description="The LLM the agent runs on, in provider:model form.",
    )
    stratum: Annotated[Any, WithJsonSchema(_nullable(STRATUM))] = Field(
        default=None,
        description=f"ACTi stratum classification, one of: {', '.join(STRATA)}.",
    )
    tags: Annotated[Any, LIST_ARG, WithJsonSchema(_nullable(TAG_LIST))] = Field(
        default=None,
        description=f"Up to {MAX_TAGS} categorization tags, each {TAG_MIN_LENGTH}-{TAG_MAX_LENGTH}"
        " characters of lowercase letters, digits and hyphens, e.g. ['sales', 'production']. "
        f"Reserved meanings: {', '.join(sorted(RESERVED_TAGS))}.",
    )


class _UpdateAgentConfigArgs(_Args):
    """Arguments of update_agent_config."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(
        description="Name of the agent to update (the name itself cannot be changed)."
    )
    description: Annotated[Any, WithJsonSchema(_nullable(DESCRIPTION))] = Field(
        default=None,
        description=f"New description, {DESCRIPTION_MIN_LENGTH}-{DESCRIPTION_MAX_LENGTH} "
        "characters. Omit to keep the current one.",
    )
    system_prompt: Annotated[Any, WithJsonSchema(_nullable(SYSTEM_PROMPT))] = Field(
        default=None,
        description=f"New system prompt, at least {SYSTEM_PROMPT_MIN_LENGTH} characters. "
        "Omit to keep the current one.",
    )
    tools: Annotated[Any, LIST_ARG, WithJsonSchema(_nullable(TOOL_LIST))] = Field(
        default=None,
        description="Replaces the whole tool list (pass every tool the agent should have); "
        "[] removes all tools. Omit to keep the current tools.",
    )
    model: Annotated[Any, WithJsonSchema(_nullable(MODEL_ID))] = Field(
        default=None,
        description="New model in provider:model form. Omit to keep the current one.",
    )
    stratum: Annotated[Any, WithJsonSchema(_nullable(STRATUM))] = Field(
        default=None,
        description=f"New stratum, one of: {', '.join(STRATA)}. Omit to keep the current one.",
    )
    tags: Annotated[Any, LIST_ARG, WithJsonSchema(_nullable(TAG_LIST))] = Field(
        default=None,
        description="Replaces the whole tag list; [] removes all tags. Omit to keep the "
        "current tags.",
    )


def _nullable_field(model: type[BaseModel], field: str) -> JsonSchema:
    """The JSON schema of ``model``'s ``field`` as a tool argument that may be null: its type
    and rules, without its title, default and description (the argument has its own)."""
    schema = _properties(model)[field]
    shown = {k: v for k, v in schema.items() if k not in ("title", "default", "description")}
    return shown if {"type": "null"} in shown.get("anyOf", ()) else _nullable(shown)


def _with_config_fields(
    name: str, contract: type[_Args], model: type[BaseModel], note: str = ""
) -> type[_Args]:
    """``contract``'s arguments (the contract's fixed texts, hand-written above), then one for
    each field of ``model`` it lacks: a configuration field added after the contract's is an
    argument of the tool without any code here, described by the model (``note`` appended),
    null by default (not given)."""
    added: dict[str, Any] = {
        field: (
            Annotated[Any, WithJsonSchema(_nullable_field(model, field))],
            Field(default=None, description=f"{info.description}.{note}"),
        )
        for field, info in model.model_fields.items()
        if field not in contract.model_fields
    }
    made: type[_Args] = create_model(
        name, __base__=contract, __module__=__name__, __doc__=contract.__doc__, **added
    )
    return made


CreateAgentConfigArgs: Final = _with_config_fields(
    "CreateAgentConfigArgs", _CreateAgentConfigArgs, AgentConfig
)
UpdateAgentConfigArgs: Final = _with_config_fields(
    "UpdateAgentConfigArgs", _UpdateAgentConfigArgs, AgentUpdate, " Omit to keep the current one."
)
