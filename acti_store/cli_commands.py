"""The store's own ``acti-store`` commands: list, show, search, history and quickstart.

They print the same texts the builder tools give the model (one renderer for both), by invoking
the tools bound to the opened store.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from .models import SORT_FIELDS, AgentConfig, ExecutionRecord
from .repository import SqlAgentRepository

#: The agents ``quickstart`` creates: the contract's three examples.
QUICKSTART_AGENTS = (
    AgentConfig(
        name="lead_qualifier",
        description="Qualifies inbound leads by assessing BANT criteria",
        system_prompt="You are a professional lead qualification specialist. For every lead, "
        "assess Budget, Authority, Need and Timeline, and recommend a priority.",
        tools=["communication", "crm"],
        stratum="RAI",
        tags=["sales", "qualification", "production"],
    ),
    AgentConfig(
        name="research_assistant",
        description="Researches topics and gathers facts from the web",
        system_prompt="You are a research assistant. Search the web, check facts against "
        "several sources, and answer with a short summary and references.",
        tools=["websearch"],
        stratum="RTI",
        tags=["research"],
    ),
    AgentConfig(
        name="appointment_scheduler",
        description="Schedules appointments and manages calendar availability",
        system_prompt="You are a scheduling assistant. Find free slots, propose times, book "
        "meetings and confirm them with every attendee by message.",
        tools=["calendar", "communication"],
        stratum="ZACS",
        tags=["scheduling", "experimental"],
    ),
)
#: (agent, task, result summary, success, seconds) of the runs ``quickstart`` records.
QUICKSTART_RUNS = (
    (
        "lead_qualifier",
        "Qualify lead: Jane from StartupXYZ",
        "Lead qualified as MEDIUM priority",
        True,
        2.8,
    ),
    ("lead_qualifier", "Qualify this lead: [corrupted data]", "Invalid input format", False, 1.2),
    (
        "lead_qualifier",
        "Qualify this lead: John from Acme Corp, $50k budget",
        "Lead qualified as HIGH priority - meets BANT criteria",
        True,
        3.2,
    ),
    (
        "research_assistant",
        "Summarize the key points of machine learning",
        "Summarised supervised, unsupervised and reinforcement learning",
        True,
        1.8,
    ),
)


def _tool_text(repo: SqlAgentRepository, tool_name: str, args: dict[str, Any]) -> str:
    from .tools import make_builder_tools

    tools = {tool.name: tool for tool in make_builder_tools(repo)}
    return str(tools[tool_name].invoke(args))


def _printing(tool_name: str, build: Callable[[argparse.Namespace], dict[str, Any]]) -> Any:
    def command(args: argparse.Namespace) -> int:
        from .cli import open_from_args

        repo = open_from_args(args)
        try:
            text = _tool_text(repo, tool_name, build(args))
        finally:
            repo.close()
        print(text)
        return 1 if text.startswith("ERROR") else 0

    return command


def _quickstart(args: argparse.Namespace) -> int:
    from .cli import open_from_args

    repo = open_from_args(args)
    try:
        print(f"Store: {repo.location}\n")
        fresh = [c for c in QUICKSTART_AGENTS if not repo.exists(c.name)]
        for config in fresh:
            repo.create(config)
            print(f"created {config.name}")
        if fresh:
            start = repo.now() - timedelta(minutes=len(QUICKSTART_RUNS))
            for i, (name, task, summary, success, seconds) in enumerate(QUICKSTART_RUNS):
                repo.record_execution(
                    name,
                    ExecutionRecord(
                        timestamp=start + timedelta(minutes=i),
                        task=task,
                        result_summary=summary,
                        success=success,
                        duration_seconds=seconds,
                        tool_calls_count=1 if success else 0,
                        error_type=None if success else "ExecutionError",
                    ),
                )
            print(f"recorded {len(QUICKSTART_RUNS)} executions\n")
        else:
            print("the example agents exist already: nothing created\n")
        for tool_name, tool_args in (
            ("list_created_agents", {}),
            ("search_agents", {"query": "lead", "tools": ["crm"], "sort_by": "execution_count"}),
            ("get_agent_history", {"name": "lead_qualifier", "limit": 3}),
        ):
            print(_tool_text(repo, tool_name, tool_args))
            print()
    finally:
        repo.close()
    return 0


def register(subparsers: Any) -> None:
    from .cli import add_url_option

    quickstart = subparsers.add_parser(
        "quickstart", help="create example agents, record runs, search and print (idempotent)"
    )
    add_url_option(quickstart)
    quickstart.set_defaults(func=_quickstart)

    listing = subparsers.add_parser("list", help="list every agent, grouped by stratum")
    add_url_option(listing)
    listing.set_defaults(func=_printing("list_created_agents", lambda a: {}))

    show = subparsers.add_parser("show", help="show one agent's configuration")
    show.add_argument("name")
    add_url_option(show)
    show.set_defaults(func=_printing("get_agent_config", lambda a: {"name": a.name}))

    search = subparsers.add_parser("search", help="search agents (filters combine with AND)")
    search.add_argument("query", nargs="?", default=None, help="words in name or description")
    search.add_argument("--stratum")
    search.add_argument("--tool", dest="tools", action="append", help="repeatable: has ALL")
    search.add_argument("--tag", dest="tags", action="append", help="repeatable: has ALL")
    search.add_argument("--created-after")
    search.add_argument("--created-before")
    search.add_argument("--min-executions", type=int)
    search.add_argument("--sort-by", choices=SORT_FIELDS, default="name")
    search.add_argument("--limit", type=int, default=20)
    add_url_option(search)
    search.set_defaults(
        func=_printing(
            "search_agents",
            lambda a: {
                key: value
                for key in (
                    "query",
                    "stratum",
                    "tools",
                    "tags",
                    "created_after",
                    "created_before",
                    "min_executions",
                    "sort_by",
                    "limit",
                )
                if (value := getattr(a, key)) is not None
            },
        )
    )

    history = subparsers.add_parser("history", help="show an agent's execution history")
    history.add_argument("name")
    history.add_argument("--limit", type=int, default=10)
    history.add_argument("--errors-only", action="store_true")
    add_url_option(history)
    history.set_defaults(
        func=_printing(
            "get_agent_history",
            lambda a: {"name": a.name, "limit": a.limit, "include_errors_only": a.errors_only},
        )
    )
