"""The ten builder tools' descriptions: what the model learns each tool from (the contract's
fixed texts, with the limits of ``acti_store.models`` filled in)."""

from __future__ import annotations

from typing import Final

from ..models import (
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    HISTORY_LIMIT_DEFAULT,
    HISTORY_MAX_RECORDS,
    MAX_TAGS,
    NAME_MAX_LENGTH,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    SEARCH_LIMIT_MIN,
    STRATA,
    SYSTEM_PROMPT_MIN_LENGTH,
    TAG_MAX_LENGTH,
    TAG_MIN_LENGTH,
    TASK_MAX_LENGTH,
    TASK_MIN_LENGTH,
    TIMEOUT_DEFAULT,
    TIMEOUT_MAX,
    TIMEOUT_MIN,
    TOOL_CATEGORIES,
    UPDATABLE_FIELDS,
)
from .texts import STRATA_LINES

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
