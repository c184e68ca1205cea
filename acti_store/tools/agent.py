"""The builder agent: a deepagents agent with the ten builder tools and human approval.

``create_builder_agent`` needs the ``agents`` extra (deepagents); it is imported when called, so
``acti_store.tools`` works without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from ..models import (
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    HISTORY_MAX_RECORDS,
    MAX_TAGS,
    RESERVED_TAGS,
    SYSTEM_PROMPT_MIN_LENGTH,
    TOOL_CATEGORIES,
)
from ..repository import AgentRepository
from .defaults import BUILDER_TOOLS
from .specs import SPECS_BY_NAME, ToolSpec, make_builder_tools
from .texts import STRATA_LINES

if TYPE_CHECKING:
    from langchain.agents.middleware import InterruptOnConfig
    from langchain.agents.middleware.types import ToolCallRequest
    from langchain_core.language_models import BaseChatModel
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import Checkpointer


class _Entry(NamedTuple):
    tool: str
    purpose: str
    #: Show only the required parameters, then "..." (the optional ones are many and alike).
    brief: bool = False


#: The prompt's list of the tools, in groups; each tool's parameters come from its args schema.
_TOOL_GROUPS: Final[tuple[tuple[str, tuple[_Entry, ...]], ...]] = (
    (
        "Discovery",
        (
            _Entry(
                "list_available_tools",
                "tool categories and the stratum reference. Use it before designing.",
            ),
            _Entry("list_created_agents", "every saved agent, grouped by stratum."),
            _Entry("search_agents", "find agents; all filters combine with AND."),
        ),
    ),
    (
        "Core CRUD",
        (
            _Entry("create_agent_config", "save a new agent (version 1)."),
            _Entry(
                "get_agent_config",
                "the full configuration, with its metadata and execution counts.",
            ),
            _Entry(
                "update_agent_config",
                "change only the fields you pass; a list you pass replaces the whole list. The "
                "version goes up by one.",
                brief=True,
            ),
            _Entry(
                "clone_agent_config",
                "copy an agent with fresh metadata, to make a variation.",
            ),
            _Entry("delete_agent_config", "two steps, see the rules below."),
        ),
    ),
    (
        "Execution",
        (
            _Entry(
                "execute_created_agent",
                "run an agent on a task with its MCP tools and get its response, duration and "
                "tool calls.",
            ),
            _Entry(
                "get_agent_history",
                f"recent runs and statistics (the last {HISTORY_MAX_RECORDS} runs are kept).",
            ),
        ),
    ),
)


def _call(spec: ToolSpec, *, brief: bool) -> str:
    """``search_agents(query, stratum, ...)``: the tool with its parameters' names."""
    parameters = (*spec.required, "...") if brief else spec.parameters
    return f"{spec.name}({', '.join(parameters)})"


def _tool_list() -> str:
    lines: list[str] = []
    for heading, entries in _TOOL_GROUPS:
        lines.append(f"{heading}:")
        lines += (
            f"  - {_call(SPECS_BY_NAME[e.tool], brief=e.brief)}: {e.purpose}" for e in entries
        )
    return "\n".join(lines)


_TOOL_LIST: Final = _tool_list()


def _spoken(words: Sequence[str]) -> str:
    """``a, b and c``."""
    return f"{', '.join(words[:-1])} and {words[-1]}"


#: The reserved tags in ``RESERVED_TAGS``'s own order (from in use to retired).
_RESERVED_TAGS: Final = _spoken(list(RESERVED_TAGS))

BUILDER_SYSTEM_PROMPT: Final = f"""You are the ACTi Agent Builder. You design, create, test and \
maintain AI agent configurations for the user with the tools below. Every agent you create is \
saved in the agent store and can be run right away with real MCP tools.

## ACTi strata
Classify every agent in the one stratum that matches its job:
{STRATA_LINES}

## Tool categories an agent can use
{", ".join(TOOL_CATEGORIES)}. Call list_available_tools() for what each one does and which strata \
it suits. Give an agent only the categories its job needs.

## Your tools
{_TOOL_LIST}

## How to work: create -> test -> review
1. Understand the need: the agent's job, its users, the outcome expected. Ask the user when \
something essential is unclear.
2. Look before you build: search_agents() or list_created_agents(). Do not duplicate an agent; \
clone_agent_config() a close match instead of starting over.
3. Design: pick the stratum and the fewest tool categories that do the job. Write a complete \
system prompt (at least {SYSTEM_PROMPT_MIN_LENGTH} characters): role, goals, step-by-step \
process, tone, what to do when information is missing, guardrails, output format. Choose a \
snake_case name, a {DESCRIPTION_MIN_LENGTH}-{DESCRIPTION_MAX_LENGTH} character description and \
up to {MAX_TAGS} lowercase tags ({_RESERVED_TAGS} have special meanings).
4. Create it with create_agent_config().
5. Test it with execute_created_agent() on a realistic task. Read the response and the tool calls.
6. Review: get_agent_config(), and get_agent_history(name, include_errors_only=True) when runs \
fail. Improve the agent with update_agent_config() and test again.
7. Report to the user: the agent's name, what it does, how the test went.

## Rules
- A tool result that starts with "ERROR:" says what went wrong and how to fix it. Fix every \
problem it lists before calling again; never repeat the same call unchanged.
- Delete only when the user asks for it. First call delete_agent_config(name) without confirm: \
it deletes nothing and shows what would be deleted. Call it with confirm=True only once the user \
has agreed. A person may have to approve the deletion; if it is rejected, keep the agent and do \
not retry.
- Report only what the tools returned: never invent agents, configurations or results."""


def _confirmed_deletion(request: ToolCallRequest) -> bool:
    """Ask for approval only when a delete would really happen (not for the dry run)."""
    return request.tool_call["args"].get("confirm") is True


def _describe_deletion(tool_call: Mapping[str, Any], state: Any, runtime: Any) -> str:
    args = tool_call["args"]
    keeps_history = args.get("delete_history", True) is False
    history = "(its execution history is kept)" if keeps_history else "and its execution history"
    return f"Permanently delete agent '{args.get('name')}' {history}. Approve or reject."


#: Approval the builder agent asks for by default: a confirmed ``delete_agent_config``.
DEFAULT_INTERRUPT_ON: Final[Mapping[str, Any]] = {
    "delete_agent_config": {
        "allowed_decisions": ["approve", "reject"],
        "description": _describe_deletion,
        "when": _confirmed_deletion,
    },
}


def create_builder_agent(
    model: str | BaseChatModel,
    repo: AgentRepository | None = None,
    *,
    interrupt_on: Mapping[str, bool | InterruptOnConfig] | None = None,
    checkpointer: Checkpointer | None = None,
    **kwargs: Any,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A deepagents agent that builds agents with the ten builder tools.

    ``repo``: the store the tools use (default: the default store of ``BUILDER_TOOLS``).
    ``interrupt_on``: tools that need a person's approval, merged over ``DEFAULT_INTERRUPT_ON``
    (a confirmed ``delete_agent_config``). Add e.g. ``{"create_agent_config": True}``; remove the
    default with ``{"delete_agent_config": False}``. Approval pauses the run (a LangGraph
    interrupt), so it needs a ``checkpointer``; resume with
    ``Command(resume={"decisions": [{"type": "approve"}]})`` or ``{"type": "reject"}``.
    Other keyword arguments go to ``deepagents.create_deep_agent``.
    """
    from deepagents import create_deep_agent

    tools = make_builder_tools(repo) if repo is not None else BUILDER_TOOLS
    return create_deep_agent(
        model,
        tools,
        system_prompt=BUILDER_SYSTEM_PROMPT,
        interrupt_on={**DEFAULT_INTERRUPT_ON, **(interrupt_on or {})},
        checkpointer=checkpointer,
        **kwargs,
    )
