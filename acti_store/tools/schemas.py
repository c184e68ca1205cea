"""What the model sees of each builder tool: its args schema (one Pydantic model per tool) and
its description.

Most args schemas are declared here; those of create_agent_config and update_agent_config
(made with the configuration's fields) are made in ``config_args``, and the descriptions are
written in ``descriptions``: this module gives them all. Every argument is *accepted* as anything
(``Any``) and *shown* to the model with its real JSON schema (``WithJsonSchema``); the pieces the
schemas are built from (their base model, each kind of value's JSON schema, the list validator)
are in ``arguments``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from ..models import (
    HISTORY_LIMIT_DEFAULT,
    MAX_TAGS,
    NAME_MAX_LENGTH,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    SEARCH_LIMIT_MIN,
    SORT_FIELDS,
    STRATA,
    TASK_MAX_LENGTH,
    TASK_MIN_LENGTH,
    TIMEOUT_DEFAULT,
    TIMEOUT_MAX,
    TIMEOUT_MIN,
)
from .arguments import (
    DATE,
    DESCRIPTION,
    FLAG,
    HISTORY_LIMIT,
    LIST_ARG,
    NAME,
    SEARCH_LIMIT,
    STRATUM,
    TAG_LIST,
    TASK,
    TEXT,
    TIMEOUT,
    TOOL_LIST,
    JsonSchema,
    _Args,
    _nullable,
)
from .config_args import CreateAgentConfigArgs, UpdateAgentConfigArgs
from .descriptions import (
    CLONE_AGENT_CONFIG,
    CREATE_AGENT_CONFIG,
    DELETE_AGENT_CONFIG,
    EXECUTE_CREATED_AGENT,
    GET_AGENT_CONFIG,
    GET_AGENT_HISTORY,
    LIST_AVAILABLE_TOOLS,
    LIST_CREATED_AGENTS,
    SEARCH_AGENTS,
    UPDATE_AGENT_CONFIG,
)

#: The args schemas and descriptions of the ten tools, and the pieces ``version_schemas`` takes
#: from here (``JsonSchema``, ``NAME``, ``FLAG``, ``LIST_ARG``, ``_nullable``).
__all__ = [
    "CLONE_AGENT_CONFIG",
    "CREATE_AGENT_CONFIG",
    "DELETE_AGENT_CONFIG",
    "EXECUTE_CREATED_AGENT",
    "FLAG",
    "GET_AGENT_CONFIG",
    "GET_AGENT_HISTORY",
    "LIST_ARG",
    "LIST_AVAILABLE_TOOLS",
    "LIST_CREATED_AGENTS",
    "NAME",
    "SEARCH_AGENTS",
    "UPDATE_AGENT_CONFIG",
    "AgentNameArgs",
    "CloneAgentConfigArgs",
    "CreateAgentConfigArgs",
    "DeleteAgentConfigArgs",
    "ExecuteCreatedAgentArgs",
    "GetAgentHistoryArgs",
    "JsonSchema",
    "NoArgs",
    "SearchAgentsArgs",
    "UpdateAgentConfigArgs",
    "_nullable",
]


class NoArgs(_Args):
    """This tool takes no arguments."""


class AgentNameArgs(_Args):
    """Arguments of a tool that takes one agent name."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(
        description="Name of an existing agent (snake_case, without any .json extension)."
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
