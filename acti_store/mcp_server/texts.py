"""The MCP server's own texts: what no builder tool says (those are in ``tools.texts``)."""

from __future__ import annotations

from typing import Final

from ..models import STRATA

SERVER_NAME: Final = "acti-store"

SERVER_INSTRUCTIONS: Final = (
    "The ACTi agent store: create, search, test and inspect AI agent configurations with these "
    "tools. Call list_available_tools() before designing an agent. The build_agent prompt walks "
    "you through it; the agents are also resources (acti://agents/{name})."
)

#: A call a person declined when asked to approve it (``approval``).
DECLINED: Final = (
    "ERROR: The user declined {tool}: nothing was changed. Keep the agent as it is and do not "
    "call {tool} again unless the user asks for it."
)
#: A call whose approval request the person dismissed, or that the client could not show.
CANCELLED: Final = (
    "ERROR: The user did not answer the request to approve {tool}: nothing was changed. Ask the "
    "user whether to go ahead before calling {tool} again."
)

#: The resources.
AGENTS_URI: Final = "acti://agents"
AGENT_URI: Final = "acti://agents/{name}"
HISTORY_URI: Final = "acti://agents/{name}/history"
AGENTS_DESCRIPTION: Final = (
    "Every agent, grouped by stratum: list_created_agents' artifact (total, counts per "
    "stratum, the first names of each)."
)
AGENT_DESCRIPTION: Final = "One agent's configuration, as its exported {name}.json file."
HISTORY_DESCRIPTION: Final = (
    "One agent's execution history (its last runs, newest first), as its exported "
    "{name}_history.json file."
)
UNKNOWN_RESOURCE: Final = (
    "Unknown resource {uri!r}. The resources are acti://agents, acti://agents/{{name}} and "
    "acti://agents/{{name}}/history."
)
UNKNOWN_TOOL: Final = "Unknown tool {name!r}. The tools are: {names}."
#: A writing tool called in a session that only reads (a read-only token, or ``--read-only``).
READ_ONLY_TOOL: Final = (
    "Tool {name!r} writes, and this session is read-only (its token is read-only, or the server "
    "was started with --read-only): nothing was changed. The tools are: {names}."
)

#: The prompt.
BUILD_AGENT: Final = "build_agent"
BUILD_AGENT_DESCRIPTION: Final = (
    "Design, create and test a new agent for a goal, step by step, with the store's tools."
)
GOAL_DESCRIPTION: Final = "What the new agent must do, in a sentence or two."
STRATUM_DESCRIPTION: Final = (
    f"The agent's ACTi stratum, one of: {', '.join(STRATA)}. Omit to let the model choose."
)
PROMPT_TASK: Final = "\n\n## The agent to build now\nGoal: {goal}\n{stratum}"
PROMPT_STRATUM: Final = "Stratum: {stratum}: classify the agent there."
PROMPT_ANY_STRATUM: Final = (
    "Stratum: choose the one that matches its job (list_available_tools() describes them)."
)
GOAL_MISSING: Final = "build_agent needs a goal: what the new agent must do."
UNKNOWN_PROMPT: Final = "Unknown prompt {name!r}. The prompt is build_agent."

#: HTTP.
NEEDS_TOKEN: Final = (
    "serving on {host}, which is not a loopback address, needs a bearer token: set "
    "{variable} (or name another variable with --token-env)"
)
TOKEN_UNSET: Final = "--token-env {variable}: the variable {variable} is not set or empty"
UNAUTHORIZED: Final = (
    "This MCP server needs the header 'Authorization: Bearer <token>' with its token."
)
SERVING: Final = "acti-store: serving MCP at {url} (Ctrl-C stops)"
#: ``serve-mcp --tokens``: the one line of a reload of the token file (``rotation``).
RELOADED: Final = (
    "acti-store: reloaded {path} ({why}): {tokens} tokens, {added} added, {removed} removed "
    "(their sessions ended), {kept} kept"
)
RELOAD_REFUSED: Final = "acti-store: kept the {tokens} tokens in use ({why}): {reason}"
