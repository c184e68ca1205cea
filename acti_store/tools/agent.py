"""The builder agent: a deepagents agent with the ten builder tools and human approval.

``create_builder_agent`` needs the ``agents`` extra (deepagents); it is imported when called, so
``acti_store.tools`` works without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from ..errors import MissingExtraError
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
from .builder import BuilderTools
from .specs import SPECS_BY_NAME, ToolSpec
from .texts import BUILDER_AGENT_NEEDS_EXTRA, STRATA_LINES

if TYPE_CHECKING:
    from langchain.agents.middleware import InterruptOnConfig
    from langchain.agents.middleware.types import ToolCallRequest
    from langchain_core.language_models import BaseChatModel
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import Checkpointer

    from ..execution import AgentRunner


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


#: The version tools' group of the prompt (``create_builder_agent(..., versions=True)``).
_VERSION_GROUP: Final = (
    "Versions",
    (
        _Entry("list_agent_versions", "the saved versions of an agent, labels included."),
        _Entry("diff_agent_versions", "what changed between two versions, field by field."),
        _Entry(
            "rollback_agent_config",
            "make an older version current again (a new version); two steps, like delete.",
        ),
        _Entry(
            "set_agent_label",
            "point a label such as production at a version, or split it between versions.",
        ),
        _Entry("rollback_agent_label", "put a label back where it pointed before its last move."),
        _Entry(
            "compare_agent_versions",
            "two versions' runs side by side: success rates with intervals, durations.",
        ),
    ),
)


def _tool_list(groups: tuple[tuple[str, tuple[_Entry, ...]], ...] = _TOOL_GROUPS) -> str:
    lines: list[str] = []
    for heading, entries in groups:
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

#: What the prompt adds with the version tools: their list and their rules.
_VERSIONS_PROMPT: Final = f"""

## Versions
Every create, update, rollback and clone saves the whole configuration as a new version.
{_tool_list((_VERSION_GROUP,))}
- When an update made an agent worse, compare versions with diff_agent_versions() and roll back \
with rollback_agent_config(name, version): first without confirm (it shows the changes), then \
with confirm=True once the user agrees. A person may have to approve a rollback or a move of \
the production label; if it is rejected, do not retry.
- To try a new version on part of the traffic, split a label (e.g. 90 % on the current version, \
10 % on the new one), compare the two with compare_agent_versions() once both have runs, then \
move the label or roll it back with rollback_agent_label(). A protected label refuses a version \
whose runs do not meet its gate: tell the user; only a person can override a gate."""


def builder_system_prompt(*, versions: bool = False) -> str:
    """The builder agent's prompt; with ``versions``, the version tools and their rules too."""
    return BUILDER_SYSTEM_PROMPT + (_VERSIONS_PROMPT if versions else "")


class Approval(NamedTuple):
    """A call that must wait for a person: when (of the call's arguments) and what to ask."""

    #: Whether this call needs approval (e.g. a confirmed delete, not its dry run).
    needed: Callable[[Mapping[str, Any]], bool]
    #: What the person is asked, for this call.
    question: Callable[[Mapping[str, Any]], str]
    #: Whether the tool has a dry run (``confirm=False``) that checks the call before the person
    #: is asked (the MCP server's elicitation); a tool without one would act on it.
    dry_run: bool = True


def _confirmed(args: Mapping[str, Any]) -> bool:
    """Ask only when the call would really happen (``confirm=True``), not for the dry run."""
    return args.get("confirm") is True


def _deletion_question(args: Mapping[str, Any]) -> str:
    keeps_history = args.get("delete_history", True) is False
    history = "(its execution history is kept)" if keeps_history else "and its execution history"
    return f"Permanently delete agent '{args.get('name')}' {history}. Approve or reject."


#: The calls a person must approve, by tool. The builder agent pauses on them (``interrupt_on``),
#: the MCP server asks through elicitation (``acti-store serve-mcp``).
APPROVALS: Final[Mapping[str, Approval]] = {
    "delete_agent_config": Approval(_confirmed, _deletion_question),
}


def _interrupt_config(approval: Approval) -> dict[str, Any]:
    """``approval`` as the builder agent's human-in-the-loop middleware takes it."""

    def when(request: ToolCallRequest) -> bool:
        return approval.needed(request.tool_call["args"])

    def description(tool_call: Mapping[str, Any], state: Any, runtime: Any) -> str:
        return approval.question(tool_call["args"])

    return {"allowed_decisions": ["approve", "reject"], "description": description, "when": when}


#: Approval the builder agent asks for by default: the calls of ``APPROVALS``.
DEFAULT_INTERRUPT_ON: Final[Mapping[str, Any]] = {
    tool: _interrupt_config(approval) for tool, approval in APPROVALS.items()
}

#: The label whose moves need a person's approval by default.
GUARDED_LABEL: Final = "production"


def _moves_guarded_label(args: Mapping[str, Any]) -> bool:
    return args.get("label") == GUARDED_LABEL


def _rollback_question(args: Mapping[str, Any]) -> str:
    return (
        f"Roll agent '{args.get('name')}' back to the configuration of version "
        f"{args.get('to_version')} (saved as a new version). Approve or reject."
    )


def _split(split: object) -> str:
    """A split as the model gave it, in words when it has the expected shape."""
    if isinstance(split, list) and all(
        isinstance(share, Mapping) and {"version", "weight"} <= share.keys() for share in split
    ):
        return " / ".join(f"v{share['version']} {share['weight']} %" for share in split)
    return repr(split)


def _label_question(args: Mapping[str, Any]) -> str:
    split = args.get("split")
    target = f"version {args.get('version')}" if split is None else f"the split {_split(split)}"
    return (
        f"Move label '{args.get('label')}' of agent '{args.get('name')}' to {target}. "
        "Approve or reject."
    )


def _label_rollback_question(args: Mapping[str, Any]) -> str:
    return (
        f"Roll label '{args.get('label')}' of agent '{args.get('name')}' back to where it "
        "pointed before its last move. Approve or reject."
    )


#: The version tools' calls a person must approve: a confirmed rollback (its dry run only shows
#: the diff), and moving the ``production`` label (a split or a label rollback too). The MCP
#: server asks for them too.
VERSION_APPROVALS: Final[Mapping[str, Approval]] = {
    "rollback_agent_config": Approval(_confirmed, _rollback_question),
    "set_agent_label": Approval(_moves_guarded_label, _label_question, dry_run=False),
    "rollback_agent_label": Approval(_moves_guarded_label, _label_rollback_question, dry_run=False),
}

#: What ``versions=True`` adds to the builder agent's default approval (``VERSION_APPROVALS``).
VERSION_INTERRUPT_ON: Final[Mapping[str, Any]] = {
    tool: _interrupt_config(approval) for tool, approval in VERSION_APPROVALS.items()
}


def create_builder_agent(
    model: str | BaseChatModel,
    repo: AgentRepository | None = None,
    *,
    interrupt_on: Mapping[str, bool | InterruptOnConfig] | None = None,
    checkpointer: Checkpointer | None = None,
    runner: AgentRunner | None = None,
    versions: bool = False,
    **kwargs: Any,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A deepagents agent that builds agents with the ten builder tools.

    ``repo``: the store the tools use (default: the default store of ``BUILDER_TOOLS``, or the
    runner's). ``runner``: the ``AgentRunner`` that runs agents (see ``make_builder_tools``).
    ``interrupt_on``: tools that need a person's approval, merged over ``DEFAULT_INTERRUPT_ON``
    (a confirmed ``delete_agent_config``). Add e.g. ``{"create_agent_config": True}``; remove the
    default with ``{"delete_agent_config": False}``. Approval pauses the run (a LangGraph
    interrupt), so it needs a ``checkpointer``; resume with
    ``Command(resume={"decisions": [{"type": "approve"}]})`` or ``{"type": "reject"}``.
    ``versions=True`` adds the six version tools (``make_version_tools``; on the default store
    when ``repo`` is None), their part of the prompt, and to the default approval a confirmed
    ``rollback_agent_config`` and a ``set_agent_label`` or ``rollback_agent_label`` of
    ``production`` (``VERSION_INTERRUPT_ON``).
    Other keyword arguments go to ``deepagents.create_deep_agent``. Without the ``agents``
    extra, raises ``MissingExtraError`` (an ``ImportError``) saying what to install.
    """
    try:
        from deepagents import create_deep_agent
    except ImportError as exc:
        raise MissingExtraError(BUILDER_AGENT_NEEDS_EXTRA.format(reason=exc)) from exc
    # LangChain's tools, here only: the prompt and the approvals (the MCP server's) need none.
    from .defaults import BUILDER_TOOLS, default_repository
    from .langchain_tools import make_builder_tools, version_tools

    if runner is not None:
        repo = runner.repo if repo is None else repo
        tools = make_builder_tools(repo, runner=runner)
    else:
        tools = make_builder_tools(repo) if repo is not None else list(BUILDER_TOOLS)
    approval = dict(DEFAULT_INTERRUPT_ON)
    if versions:
        store = default_repository if repo is None else (lambda: repo)
        tools += version_tools(BuilderTools(store))
        approval.update(VERSION_INTERRUPT_ON)
    return create_deep_agent(
        model,
        tools,
        system_prompt=builder_system_prompt(versions=versions),
        interrupt_on={**approval, **(interrupt_on or {})},
        checkpointer=checkpointer,
        **kwargs,
    )
