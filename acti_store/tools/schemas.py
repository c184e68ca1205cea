"""What the model sees of each tool: its description and a Pydantic args schema per tool.

Every argument is *accepted* as anything (``Any``) and *shown* to the model with its real JSON
schema (``WithJsonSchema``), built from the limits in ``acti_store.models``. The tools validate
their arguments themselves, with the domain models, so that a wrong value (a number for a name, a
string for a list, ``None``) comes back as the contract's ``ERROR: ...`` text with a structured
artifact, instead of an exception raised by LangChain before the tool runs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, create_model

from ..models import (
    DEFAULT_MODEL,
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    HISTORY_LIMIT_DEFAULT,
    HISTORY_MAX_RECORDS,
    MAX_TAGS,
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    RESERVED_TAGS,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    SEARCH_LIMIT_MIN,
    SORT_FIELDS,
    STRATA,
    SYSTEM_PROMPT_MIN_LENGTH,
    TAG_MAX_LENGTH,
    TAG_MIN_LENGTH,
    TAG_PATTERN,
    TASK_MAX_LENGTH,
    TASK_MIN_LENGTH,
    TIMEOUT_DEFAULT,
    TIMEOUT_MAX,
    TIMEOUT_MIN,
    TOOL_CATEGORIES,
    UPDATABLE_FIELDS,
    AgentConfig,
    AgentUpdate,
    ExecutionRequest,
    HistoryRequest,
    SearchQuery,
)
from .texts import STRATA_LINES

JsonSchema = dict[str, Any]


def _nullable(schema: JsonSchema) -> JsonSchema:
    return {"anyOf": [schema, {"type": "null"}]}


NAME: Final[JsonSchema] = {
    "type": "string",
    "pattern": NAME_PATTERN.pattern,
    "minLength": 1,
    "maxLength": NAME_MAX_LENGTH,
}
DESCRIPTION: Final[JsonSchema] = {
    "type": "string",
    "minLength": DESCRIPTION_MIN_LENGTH,
    "maxLength": DESCRIPTION_MAX_LENGTH,
}
SYSTEM_PROMPT: Final[JsonSchema] = {"type": "string", "minLength": SYSTEM_PROMPT_MIN_LENGTH}
MODEL_ID: Final[JsonSchema] = {"type": "string"}
TOOL_LIST: Final[JsonSchema] = {
    "type": "array",
    "items": {"type": "string", "enum": list(TOOL_CATEGORIES)},
}
STRATUM: Final[JsonSchema] = {"type": "string", "enum": list(STRATA)}
TAG_LIST: Final[JsonSchema] = {
    "type": "array",
    "maxItems": MAX_TAGS,
    "items": {
        "type": "string",
        "pattern": TAG_PATTERN.pattern,
        "minLength": TAG_MIN_LENGTH,
        "maxLength": TAG_MAX_LENGTH,
    },
}
TEXT: Final[JsonSchema] = {"type": "string"}
DATE: Final[JsonSchema] = {"type": "string", "description": "YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS"}
FLAG: Final[JsonSchema] = {"type": "boolean"}
#: The JSON schema keys of a range, in the order the schemas show them.
_RANGE_KEYS: Final = ("type", "minLength", "maxLength", "minimum", "maximum")


@functools.cache
def _properties(model: type[BaseModel]) -> Mapping[str, JsonSchema]:
    """The JSON schemas of ``model``'s fields, made once per model (pydantic makes the whole
    model's anew at each ``model_json_schema()``)."""
    return model.model_json_schema()["properties"]  # type: ignore[no-any-return]


#: The JSON types of the plain fields ``_bounds`` reads, and the JSON schema's key of each rule.
_JSON_TYPES: Final = {str: "string", int: "integer", float: "number"}
_RULE_KEYS: Final = {
    "min_length": "minLength",
    "max_length": "maxLength",
    "ge": "minimum",
    "le": "maximum",
}


def _bounds(model: type[BaseModel], field: str) -> JsonSchema:
    """A field's type and range as the domain model declares them (one source for both), read
    from its declaration: the model's JSON schema is not built at import (tens of ms)."""
    info = model.model_fields[field]
    kind = _JSON_TYPES.get(info.annotation) if isinstance(info.annotation, type) else None
    if kind is None:
        schema = _properties(model)[field]
        return {key: schema[key] for key in _RANGE_KEYS if key in schema}
    found: JsonSchema = {"type": kind}
    for rule in info.metadata:
        for name, key in _RULE_KEYS.items():
            value = getattr(rule, name, None)
            if value is not None:
                found[key] = value
    return {key: found[key] for key in _RANGE_KEYS if key in found}


TASK: Final[JsonSchema] = _bounds(ExecutionRequest, "task")
TIMEOUT: Final[JsonSchema] = _bounds(ExecutionRequest, "timeout")
HISTORY_LIMIT: Final[JsonSchema] = _bounds(HistoryRequest, "limit")
SEARCH_LIMIT: Final[JsonSchema] = _bounds(SearchQuery, "limit")


def _json_list(value: object) -> object:
    """A list sent as JSON text (``'["crm", "voice"]'``: the MCP Inspector's CLI and some models
    send lists so) as the list; any other value as it is, for the tool to accept or refuse."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return value
        if isinstance(decoded, list):
            return decoded
    return value


#: The validator of every list argument: a list, or a JSON list in a string.
LIST_ARG: Final = BeforeValidator(_json_list)


class _Args(BaseModel):
    # Unknown arguments are ignored, as LangChain does for any tool.
    model_config = ConfigDict(extra="ignore", defer_build=True)


class NoArgs(_Args):
    """This tool takes no arguments."""


# The arguments of the contract's configuration fields stay hand-written: their descriptions are
# the contract's fixed text (what the model reads, recorded in
# tests/data/builder_tool_schemas.json), not the models' short descriptions. A field added after
# them gets its argument from the model (``_with_config_fields``).


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


class AgentNameArgs(_Args):
    """Arguments of a tool that takes one agent name."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(
        description="Name of an existing agent (snake_case, without any .json extension)."
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


class DeleteAgentConfigArgs(_Args):
    """Arguments of delete_agent_config."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(description="Name of the agent to delete.")
    confirm: Annotated[Any, WithJsonSchema(FLAG)] = Field(
        default=False,
        description="Must be true to actually delete. With false (the default) nothing is "
        "deleted: the tool shows what would be deleted.",
    )
    delete_history: Annotated[Any, WithJsonSchema(FLAG)] = Field(
        default=True,
        description="Also delete the agent's execution history (default true). With false "
        "the history is kept (archived) for audit purposes.",
    )


class CloneAgentConfigArgs(_Args):
    """Arguments of clone_agent_config."""

    source_name: Annotated[Any, WithJsonSchema(NAME)] = Field(
        description="Name of the existing agent to copy."
    )
    new_name: Annotated[Any, WithJsonSchema(NAME)] = Field(
        description="Name of the new agent: snake_case, unique, at most "
        f"{NAME_MAX_LENGTH} characters."
    )
    description: Annotated[Any, WithJsonSchema(_nullable(DESCRIPTION))] = Field(
        default=None,
        description="Description of the copy. Omit to use the source's description followed "
        "by ' (clone)'.",
    )
    tags: Annotated[Any, LIST_ARG, WithJsonSchema(_nullable(TAG_LIST))] = Field(
        default=None,
        description="Tags of the copy. Omit to copy the source's tags.",
    )


class SearchAgentsArgs(_Args):
    """Arguments of search_agents."""

    query: Annotated[Any, WithJsonSchema(_nullable(TEXT))] = Field(
        default=None,
        description="Words to find in the name or description (case-insensitive); every word "
        "must appear. Omit to match every agent.",
    )
    stratum: Annotated[Any, WithJsonSchema(_nullable(STRATUM))] = Field(
        default=None, description=f"Only agents of this stratum: {', '.join(STRATA)}."
    )
    tools: Annotated[Any, LIST_ARG, WithJsonSchema(_nullable(TOOL_LIST))] = Field(
        default=None, description="Only agents that have ALL of these tool categories."
    )
    tags: Annotated[
        Any,
        LIST_ARG,
        WithJsonSchema(_nullable({"type": "array", "items": TEXT, "maxItems": MAX_TAGS})),
    ] = Field(
        default=None,
        description=f"Only agents that have ALL of these tags (at most {MAX_TAGS}, the most an "
        "agent has).",
    )
    created_after: Annotated[Any, WithJsonSchema(_nullable(DATE))] = Field(
        default=None,
        description="Only agents created at or after this ISO 8601 date or date-time "
        "(YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS, UTC unless an offset is given).",
    )
    created_before: Annotated[Any, WithJsonSchema(_nullable(DATE))] = Field(
        default=None,
        description="Only agents created at or before this ISO 8601 date or date-time; a bare "
        "date includes that whole day.",
    )
    min_executions: Annotated[Any, WithJsonSchema(_nullable({"type": "integer", "minimum": 0}))] = (
        Field(default=None, description="Only agents executed at least this many times.")
    )
    sort_by: Annotated[Any, WithJsonSchema({"type": "string", "enum": list(SORT_FIELDS)})] = Field(
        default="name",
        description="Order of the results: name (A-Z), created_at (newest first), updated_at "
        "(most recently updated first) or execution_count (most executed first).",
    )
    limit: Annotated[Any, WithJsonSchema(SEARCH_LIMIT)] = Field(
        default=SEARCH_LIMIT_DEFAULT,
        description=f"Maximum number of results, {SEARCH_LIMIT_MIN}-{SEARCH_LIMIT_MAX}.",
    )


class ExecuteCreatedAgentArgs(_Args):
    """Arguments of execute_created_agent."""

    agent_name: Annotated[Any, WithJsonSchema(NAME)] = Field(
        description="Name of the saved agent to load and run."
    )
    task: Annotated[Any, WithJsonSchema(TASK)] = Field(
        description=f"The task or message to send to the agent, {TASK_MIN_LENGTH}-"
        f"{TASK_MAX_LENGTH} characters."
    )
    timeout: Annotated[Any, WithJsonSchema(_nullable(TIMEOUT))] = Field(
        default=None,
        description=f"Maximum execution time in seconds, {TIMEOUT_MIN}-{TIMEOUT_MAX} "
        f"(default {TIMEOUT_DEFAULT}).",
    )
    skip_unavailable_tools: Annotated[Any, WithJsonSchema(FLAG)] = Field(
        default=True,
        description="If true (default), run with the tools that are available when some MCP "
        "tools are not; if false, fail when any configured tool is unavailable.",
    )


class GetAgentHistoryArgs(_Args):
    """Arguments of get_agent_history."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(description="Name of the agent.")
    limit: Annotated[Any, WithJsonSchema(HISTORY_LIMIT)] = Field(
        default=HISTORY_LIMIT_DEFAULT,
        description="Number of recent executions to show, "
        f"{HISTORY_LIMIT['minimum']}-{HISTORY_LIMIT['maximum']}.",
    )
    include_errors_only: Annotated[Any, WithJsonSchema(FLAG)] = Field(
        default=False, description="Only show failed executions."
    )


# --------------------------------------------------------------------------------------------------
# Tool descriptions: the model learns each tool from these
# --------------------------------------------------------------------------------------------------

CREATE_AGENT_CONFIG: Final = f"""Create a new agent configuration and save it in the agent store.

Use this after you know what the agent must do. Call list_available_tools() first to pick the
tool categories and the stratum. The configuration is validated before anything is saved:
  - name: snake_case (lowercase letters, digits, underscores; starts with a letter), at most
    {NAME_MAX_LENGTH} characters, unique among agents
  - description: {DESCRIPTION_MIN_LENGTH}-{DESCRIPTION_MAX_LENGTH} characters
  - system_prompt: at least {SYSTEM_PROMPT_MIN_LENGTH} characters; write a complete prompt
  - tools: any of {", ".join(TOOL_CATEGORIES)}
  - stratum: one of
{STRATA_LINES}
  - tags: at most {MAX_TAGS}, lowercase, {TAG_MIN_LENGTH}-{TAG_MAX_LENGTH} characters each

Returns a SUCCESS summary with where the agent was saved, or an ERROR text listing every
problem (fix them all and call again). The new agent starts at version 1 with no executions.
Next: test it with execute_created_agent(), review it with get_agent_config()."""

LIST_AVAILABLE_TOOLS: Final = """List the MCP tool categories an agent can use and the ACTi strata.

For each tool category: what it does, its capabilities, the strata it suits and typical use
cases. Then the stratum reference: each stratum's purpose, recommended tools and example agents.
Call this before create_agent_config() to choose tools and a stratum. Takes no arguments."""

GET_AGENT_CONFIG: Final = """Show the full saved configuration of one agent.

Returns a quick summary (tools, stratum, model) and the complete configuration as JSON,
including its system prompt, tags and _metadata (created_at, updated_at, last_executed_at,
version, execution counts). Use it to review an agent before updating, cloning or deleting it.
If the agent does not exist, the ERROR text lists the agents that do."""

LIST_CREATED_AGENTS: Final = """List every saved agent, grouped by stratum.

For each agent: name, description, tools and creation time; agents without a stratum are listed
last under [UNCLASSIFIED]. Ends with the total count. Use search_agents() instead to filter or
sort, and get_agent_config() for one agent's full configuration. Takes no arguments."""

UPDATE_AGENT_CONFIG: Final = f"""Change an existing agent: a partial update of the fields you pass.

Omitted (or null) fields stay as they are; a list you pass replaces the whole list, and [] clears
it. The name cannot be changed (clone the agent to get a new name). Every value is validated with
the same rules as create_agent_config(); on any error nothing is modified. On success the version
is incremented and updated_at set; created_at, execution statistics and history are preserved.
Fields: {", ".join(UPDATABLE_FIELDS)}.
Returns the changes applied (old -> new) and the new version."""

DELETE_AGENT_CONFIG: Final = """Delete an agent configuration, in two steps.

Step 1: call with confirm=false (the default). Nothing is deleted: you get the agent's details and
what would be deleted. Step 2: only if the user really wants it gone, call again with
confirm=true. By default the execution history is deleted too; pass delete_history=false to keep
it for audit purposes. Deletion cannot be undone. Consider clone_agent_config() or tagging the
agent 'deprecated' when the user may still need it."""

CLONE_AGENT_CONFIG: Final = """Copy an agent under a new name, as a variation or from a template.

The copy gets the source's system prompt, tools, model, stratum and tags; its description is the
source's followed by ' (clone)' unless you pass one, and you may pass new tags. The copy starts
fresh: version 1, new created_at, zero executions, no history. The new name must be valid
snake_case and not used by another agent. Then customize it with update_agent_config()."""

SEARCH_AGENTS: Final = f"""Find agents by text, stratum, tools, tags, creation date or usage.

All filters are optional and combine with AND:
  - query: every word must appear in the name or description (case-insensitive; % and _ are
    plain characters)
  - stratum: exact stratum ({", ".join(STRATA)})
  - tools / tags: the agent must have ALL of them
  - created_after / created_before: ISO 8601 date (YYYY-MM-DD) or date-time, inclusive
  - min_executions: at least this many executions
Sort with sort_by: name (A-Z, default), created_at or updated_at (newest first), execution_count
(most executed first). limit: {SEARCH_LIMIT_MIN}-{SEARCH_LIMIT_MAX} results (default
{SEARCH_LIMIT_DEFAULT}). Invalid parameters are all reported at once."""

EXECUTE_CREATED_AGENT: Final = f"""Test a saved agent: run it on a task with its real MCP tools.

Use it right after create_agent_config() or update_agent_config() to test an agent. The agent is
loaded from the store, connected to the MCP tools of its configured categories and given the
task; the run is recorded in its execution history (see get_agent_history()).
  - task: {TASK_MIN_LENGTH}-{TASK_MAX_LENGTH} characters
  - timeout: {TIMEOUT_MIN}-{TIMEOUT_MAX} seconds (default {TIMEOUT_DEFAULT})
  - skip_unavailable_tools: true (default) runs with the tools that are available when some are
    not (degraded mode); false fails instead
Returns the agent's response, duration and tool calls, or an ERROR text (not found, tools
unavailable, timeout, execution error) that says how to fix it."""

GET_AGENT_HISTORY: Final = f"""Show an agent's recent executions and statistics.

Statistics: total executions, success rate, average duration, last execution. Then the most
recent runs, newest first: status, time, duration, task, result or error, tool calls. Up to
{HISTORY_MAX_RECORDS} runs are kept per agent (oldest dropped first). limit: 1-{HISTORY_MAX_RECORDS}
(default {HISTORY_LIMIT_DEFAULT}); include_errors_only=true shows failed runs only, to debug an
agent."""
