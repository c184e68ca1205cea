"""The store's own ``acti-store`` commands: migrate, quickstart, list, show, search and history.

The reading commands print the texts the builder tools give the model (one renderer for both):
they call the tools' logic (``BuilderTools``) with the parsed options that are the tool's
arguments; an error answer is one ``error: ...`` line on stderr and status 1 (``emit``). They
never create a store (``open_from_args``).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable
from typing import Any, Final

from pydantic import BaseModel
from sqlalchemy.engine import URL

from ..engine import (
    LEGACY_VERSION_TABLE,
    VERSION_TABLE,
    alembic_config,
    head_revisions,
    make_engine,
    resolve_url,
    store_file,
    store_schema,
)
from ..errors import SchemaVersionError
from ..models import SEARCH_LIMIT_MAX, SORT_FIELDS, AgentConfig, ExecutionRecord
from ..repository import SqlAgentRepository
from ..tools.builder import BuilderTools
from ..tools.outcomes import Result
from ..tools.schemas import AgentNameArgs, GetAgentHistoryArgs, NoArgs, SearchAgentsArgs
from .options import (
    NO_STORE,
    Command,
    CommandFailed,
    add_field_argument,
    add_store_options,
    add_url_option,
    cli_tools,
    emit,
    field_values,
    open_from_args,
    program,
    shown_store,
)

#: What ``migrate --check`` says (on stderr) when the store is not at the latest revision.
MIGRATE_NOT_AT_HEAD: Final = (
    "the store is not at the latest schema revision: run acti-store migrate to upgrade it"
)
#: What ``migrate --check`` and ``--current`` say (on stderr) when the store's revision is still
#: where an earlier acti_store kept it: ``--check`` then exits 1, whatever the revision.
MIGRATE_LEGACY_TABLE: Final = (
    f"the store records its schema revision in {LEGACY_VERSION_TABLE}, as earlier versions of "
    f"acti_store did: run acti-store migrate to move it to {VERSION_TABLE}"
)

#: The agents ``quickstart`` creates: the contract's three examples.
QUICKSTART_AGENTS: Final = (
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
#: The line ``search`` adds when its limit cut the answer (the tool's text says ``Found: N``).
SEARCH_CUT: Final = (
    "showing {count} of {total} matching agents: narrow the search, or raise --limit "
    "(at most {limit_max})"
)
#: (agent, task, result summary, success, seconds) of the runs ``quickstart`` records.
QUICKSTART_RUNS: Final = (
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


def _revisions(revisions: set[str]) -> str:
    return ", ".join(sorted(revisions)) or "none"


def _cmd_migrate(args: argparse.Namespace) -> int:
    if args.check or args.current or args.sql:
        return _inspect(args)
    from ..revisions import upgrade_schema  # Alembic: only the commands that migrate load it

    engine = make_engine(args.url, schema=args.schema, pooler=args.pooler)
    try:
        before, after = upgrade_schema(engine, args.to or "head")
    finally:
        engine.dispose()
    latest = ", the latest revision" if args.to is None else ""
    if before == after:
        print(f"Schema is at {_revisions(after)}{latest} (nothing to do).")
    else:
        print(f"Schema was at revision {_revisions(before)}; now at {_revisions(after)}{latest}.")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    """``migrate --check``, ``--current`` and ``--sql``: they read the store on a read-only
    engine and write nothing; a SQLite file that does not exist is a store at no revision, and
    stays missing (no file, no folder)."""
    from ..revisions import current_revisions

    url = resolve_url(args.url)
    path = store_file(url)
    current: set[str]
    if path is not None and not path.exists():
        current, heads, legacy, schema = set(), head_revisions(), False, None
    else:
        engine = make_engine(url, schema=args.schema, pooler=args.pooler, read_only=True)
        try:
            current, heads, legacy = current_revisions(engine)
            schema = store_schema(engine)
        finally:
            engine.dispose()
    if args.sql:
        return _print_upgrade_sql(url, schema, current, legacy)
    print(f"current: {_revisions(current)}\nhead: {_revisions(heads)}")
    if args.check and not current:
        raise CommandFailed(NO_STORE.format(where=shown_store(url, schema), command=program(args)))
    if args.check and current != heads:
        raise CommandFailed(MIGRATE_NOT_AT_HEAD)
    if legacy:
        if args.check:
            raise CommandFailed(MIGRATE_LEGACY_TABLE)
        print(f"warning: {MIGRATE_LEGACY_TABLE}", file=sys.stderr)
    return 0


def _print_upgrade_sql(url: URL, schema: str | None, current: set[str], legacy: bool) -> int:
    """Alembic's offline mode: the SQL that would bring the store from its revision to head,
    printed only once all of it is known: a revision whose data step must read rows (a store
    with data at an old revision) refuses before anything is printed."""
    if legacy:
        raise SchemaVersionError(f"{MIGRATE_LEGACY_TABLE} once, before asking for the upgrade SQL")
    if len(current) > 1:
        raise SchemaVersionError(f"the store has several revisions ({_revisions(current)})")
    from alembic import command
    from alembic.util import CommandError

    from ..migrations.offline import NO_ROWS

    cfg = alembic_config(url, schema or "")
    # No revision yet: an empty database, whose data steps have no rows (printed as comments).
    cfg.attributes[NO_ROWS] = not current
    cfg.output_buffer = io.StringIO()  # printed whole, or not at all
    try:
        command.upgrade(cfg, f"{next(iter(current))}:head" if current else "head", sql=True)
    except CommandError as exc:  # a revision that must read the database while it migrates
        raise SchemaVersionError(str(exc)) from None
    sys.stdout.write(cfg.output_buffer.getvalue())
    return 0


def _search_cut(artifact: dict[str, Any]) -> str | None:
    """The line that says how many agents matched, when the limit cut a search's answer."""
    if artifact["status"] != "success" or artifact["total"] <= artifact["count"]:
        return None
    return SEARCH_CUT.format(
        count=artifact["count"], total=artifact["total"], limit_max=SEARCH_LIMIT_MAX
    )


def _printing(
    tool: Callable[..., Result],
    schema: type[BaseModel],
    after: Callable[[dict[str, Any]], str | None] = lambda artifact: None,
) -> Command:
    """The command that prints what ``tool`` (a ``BuilderTools`` method) answers, in CLI wording,
    then the line ``after`` makes of the artifact, if any.

    The tool gets the parsed options that are fields of its args ``schema``, by name.
    """

    def command(args: argparse.Namespace) -> int:
        repo = open_from_args(args)
        try:
            text, artifact = tool(cli_tools(repo), **field_values(args, schema))
        finally:
            repo.close()
        return emit((text, artifact), after(artifact))

    return command


def _cmd_quickstart(args: argparse.Namespace) -> int:
    repo = open_from_args(args)
    try:
        print(f"Store: {repo.location}\n")
        fresh = [c for c in QUICKSTART_AGENTS if not repo.exists(c.name)]
        for config in fresh:
            repo.create(config)
            print(f"created {config.name}")
        if fresh:
            _record_quickstart_runs(repo)
            print(f"recorded {len(QUICKSTART_RUNS)} executions\n")
        else:
            print("the example agents exist already: nothing created\n")
        tools = cli_tools(repo)
        for text, _ in (
            tools.list_created_agents(),
            tools.search_agents(query="lead", tools=["crm"], sort_by="execution_count"),
            tools.get_agent_history(name="lead_qualifier", limit=3),
        ):
            print(text)
            print()
    finally:
        repo.close()
    return 0


def _record_quickstart_runs(repo: SqlAgentRepository) -> None:
    """Record the example runs, each stamped when it is recorded: after its agent's creation."""
    for name, task, summary, success, seconds in QUICKSTART_RUNS:
        repo.record_execution(
            name,
            ExecutionRecord(
                timestamp=repo.now(),
                task=task,
                result_summary=summary,
                success=success,
                duration_seconds=seconds,
                tool_calls_count=1 if success else 0,
                error_type=None if success else "ExecutionError",
            ),
        )


def register(subparsers: Any) -> None:
    """Add migrate, quickstart, list, show, search and history to the command line."""
    migrate = subparsers.add_parser(
        "migrate", help="bring the database schema to the latest revision"
    )
    add_url_option(migrate)
    mode = migrate.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="print the current and latest revisions; exit 1 if the store is not at the latest",
    )
    mode.add_argument(
        "--current", action="store_true", help="print the current and latest revisions"
    )
    mode.add_argument(
        "--sql",
        action="store_true",
        help="print the SQL that would upgrade the store (for review), and change nothing",
    )
    mode.add_argument(
        "--to",
        metavar="REV",
        default=None,
        help="upgrade or downgrade to revision REV (or base) instead of the latest",
    )
    migrate.set_defaults(func=_cmd_migrate)

    quickstart = subparsers.add_parser(
        "quickstart", help="create example agents, record runs, search and print (idempotent)"
    )
    add_url_option(quickstart)
    quickstart.set_defaults(func=_cmd_quickstart)

    listing = subparsers.add_parser("list", help="list every agent, grouped by stratum")
    add_store_options(listing, read_only=True)
    listing.set_defaults(func=_printing(BuilderTools.list_created_agents, NoArgs))

    show = subparsers.add_parser("show", help="show one agent's configuration")
    add_field_argument(show, AgentNameArgs, "name")
    add_store_options(show, read_only=True)
    show.set_defaults(func=_printing(BuilderTools.get_agent_config, AgentNameArgs))

    search = subparsers.add_parser("search", help="search agents (filters combine with AND)")
    _search_options(search)
    add_store_options(search, read_only=True)
    search.set_defaults(func=_printing(BuilderTools.search_agents, SearchAgentsArgs, _search_cut))

    history = subparsers.add_parser("history", help="show an agent's execution history")
    add_field_argument(history, GetAgentHistoryArgs, "name")
    add_field_argument(history, GetAgentHistoryArgs, "limit", "--limit", type=int, metavar="N")
    add_field_argument(
        history, GetAgentHistoryArgs, "include_errors_only", "--errors-only", action="store_true"
    )
    add_store_options(history, read_only=True)
    history.set_defaults(func=_printing(BuilderTools.get_agent_history, GetAgentHistoryArgs))


def _search_options(parser: argparse.ArgumentParser) -> None:
    def field(name: str, *flags: str, **options: Any) -> None:
        add_field_argument(parser, SearchAgentsArgs, name, *flags, **options)

    field("query", nargs="?")
    field("stratum", "--stratum", metavar="STRATUM")
    field("tools", "--tool", action="append", metavar="CATEGORY")
    field("tags", "--tag", action="append", metavar="TAG")
    field("created_after", "--created-after", metavar="DATE")
    field("created_before", "--created-before", metavar="DATE")
    field("min_executions", "--min-executions", type=int, metavar="N")
    field("sort_by", "--sort-by", choices=SORT_FIELDS)
    field("limit", "--limit", type=int, metavar="N")
