"""What the ``acti-store`` commands share: ``--url``, arguments that are model fields, and how a
command fails (``CommandFailed``: one ``error: ...`` line on stderr, status 1).

The command modules import this module and never the package ``acti_store.cli`` itself, which
imports them: the command line has no import cycle.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, TypeAdapter, ValidationError
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from ..dberrors import unreachable
from ..engine import (
    DEFAULT_URL,
    ENV_LISTEN_URL,
    ENV_POOLER,
    ENV_REPLICA_URLS,
    ENV_SCHEMA,
    ENV_URL,
    POOLERS,
    make_engine,
    resolve_url,
    store_file,
    store_location,
    store_schema,
)
from ..tenancy import DEFAULT_TENANT, ENV_TENANT

if TYPE_CHECKING:  # loaded by the functions that use them: a command's parser needs none
    from ..repository import AgentRepository, SqlAgentRepository
    from ..tools.builder import BuilderTools
    from ..tools.outcomes import Result

Command = Callable[[argparse.Namespace], int]
"""A command: the parsed arguments in, the exit status out."""


class CommandFailed(Exception):
    """A command's refusal (a tool's ``ERROR:`` text, a failed run, ...), raised with one line.

    ``main`` prints it as ``error: <line>`` on stderr and exits 1: results go to stdout, errors
    to stderr, whatever the command.
    """


#: The marker of an item line in a tool's text (``  - name``, ``  1. Choose ...``).
_ITEM: Final = re.compile(r"^(?:- |\d+\. )")


def one_line(text: str) -> str:
    """A tool's ``ERROR: ...`` text as one line, nothing left out: the ``ERROR:`` prefix goes,
    list items (``- ...``, ``1. ...``) are joined by ``; ``, a list is ended as a sentence, other
    lines and paragraphs are joined by a space.

    ``ERROR: Agent 'x' not found.\\n\\nAvailable agents (2):\\n  - a\\n  - b`` becomes
    ``Agent 'x' not found. Available agents (2): a; b``.
    """
    paragraphs = re.split(r"\n\s*\n", text.strip().removeprefix("ERROR:").strip())
    parts = [
        _sentences(line.strip() for line in paragraph.splitlines() if line.strip())
        for paragraph in paragraphs
    ]
    return " ".join(
        part if index == len(parts) - 1 or part.endswith((".", ":", "!", "?")) else f"{part}."
        for index, part in enumerate(parts)
    )


def _sentences(lines: Iterable[str]) -> str:
    """``lines`` on one line: list items joined by ``; ``, a list ended as a sentence."""
    text, in_list = "", False
    for line in lines:
        item = bool(_ITEM.match(line))
        if not text:
            text = line
        elif item and in_list:
            text += f"; {_ITEM.sub('', line)}"
        else:
            ended = not in_list or text.endswith((".", ":", "!", "?"))
            text += f"{'' if ended else '.'} {_ITEM.sub('', line)}"
        in_list = item
    return text


def emit(result: Result, after: str | None = None) -> int:
    """Print a tool's answer: on success its text (then ``after``, if any) on stdout, status 0;
    an ``ERROR:`` answer raises ``CommandFailed`` with its text on one line."""
    text, artifact = result
    if artifact["status"] != "success":
        raise CommandFailed(one_line(text))
    print(text)
    if after is not None:
        print(after)
    return 0


#: Help of ``--schema``, before the command and after it.
SCHEMA_HELP: Final = (
    f"PostgreSQL schema of the store, created if missing (default: ${ENV_SCHEMA}, else the "
    "database's default schema; on MariaDB a schema is a database: the store's database, in "
    "place of the URL's; not for SQLite: use a file of its own)"
)


TENANT_HELP: Final = (
    f"the tenant whose agents the command sees and changes (default: ${ENV_TENANT}, else "
    f"'{DEFAULT_TENANT}')"
)


def add_url_option(
    parser: argparse.ArgumentParser, *, default: Any = None, tenant: bool = True
) -> None:
    """The ``--url``, ``--schema`` and ``--tenant`` options every command that opens the store
    takes (``default``: ``argparse.SUPPRESS`` in a subcommand, which keeps what its command
    read). Not ``tenant``: a command that reads every tenant takes no ``--tenant`` (after it, a
    usage error; before it, the command refuses it)."""
    parser.add_argument(
        "--url",
        default=default,
        help=f"database URL (default: ${ENV_URL}, else {DEFAULT_URL})",
    )
    parser.add_argument("--schema", default=default, metavar="NAME", help=SCHEMA_HELP)
    if tenant:
        parser.add_argument("--tenant", default=default, metavar="NAME", help=TENANT_HELP)


#: Why a command that only reads refuses where there is no store (no file, or no revision).
NO_STORE: Final = (
    "there is no store at {where}: create one with {command} migrate, or with any command "
    "that writes (e.g. quickstart, create, import)"
)
#: Why a command that only reads refuses a store behind this acti_store's latest revision.
STORE_BEHIND: Final = (
    "the store at {where} is at schema revision {current}, not {heads}, the latest of this "
    "acti_store, and a command that only reads does not migrate it: run {command} migrate first"
)
#: Why a command that only reads refuses a store whose revision an earlier acti_store kept.
STORE_LEGACY: Final = (
    "the store at {where} records its schema revision in alembic_version, as earlier versions "
    "of acti_store did, and a command that only reads does not move it: run {command} migrate "
    "first"
)


def add_store_options(
    parser: argparse.ArgumentParser,
    *,
    read_only: bool = False,
    default: Any = None,
    tenant: bool = True,
) -> None:
    """``--url``, and for a command that only reads (``read_only``) ``--read-only``: such a
    command never creates a store (``open_from_args``). ``default``, ``tenant``:
    ``add_url_option``."""
    add_url_option(parser, default=default, tenant=tenant)
    if read_only:
        add_read_only_option(parser)
        parser.set_defaults(only_reads=True)


#: Help of ``--read-only``, before the command and after it.
READ_ONLY_HELP: Final = (
    "open the store for reading only: no migration, nothing written (a store in a read-only file "
    "or folder)"
)


def add_read_only_option(parser: argparse.ArgumentParser) -> None:
    """``--read-only``: open the store for reading only (``open_repository(read_only=True)``)."""
    parser.add_argument("--read-only", action="store_true", help=READ_ONLY_HELP)


def open_from_args(args: argparse.Namespace) -> SqlAgentRepository:
    """Open the store named by ``--url`` and ``--schema`` (or the environment), read-only with
    ``--read-only``.

    A command that only reads (``add_store_options(read_only=True)``) creates, migrates and
    writes nothing: where there is no store, or one not at this acti_store's latest revision,
    it raises ``CommandFailed`` saying which command makes or upgrades it (``refuse_unready``).
    """
    from ..bootstrap import open_repository

    only_reads = getattr(args, "only_reads", False)
    read_only = getattr(args, "read_only", False)
    if only_reads:
        refuse_unready(args)
    repo = open_repository(
        args.url,
        schema=args.schema,
        migrate=not only_reads,
        read_only=read_only,
        tenant=getattr(args, "tenant", None),
        pooler=getattr(args, "pooler", None),
        listen_url=getattr(args, "listen_url", None),
        replicas=getattr(args, "replicas", None),
    )
    if only_reads and not read_only:  # opened as a writer would be, as the migration did
        try:
            repo.engine.connect().close()
        except Exception as exc:  # a store this process cannot write: say to use --read-only
            repo.close()
            raise unreachable(exc) from exc
    return repo


def refuse_unready(args: argparse.Namespace) -> None:
    """Refuse (``CommandFailed``, saying what to run) the store of ``args`` when there is none
    (a SQLite file that does not exist, a database or schema without acti_store's revision), or
    when it is behind this acti_store's latest revision; read on a read-only engine, so that
    nothing is created or written (``SchemaVersionError`` for a newer acti_store's revision)."""
    from ..schema_head import at_head

    url = resolve_url(args.url)
    path = store_file(url)
    if path is not None and not path.exists():
        raise CommandFailed(NO_STORE.format(where=shown_store(url, None), command=program(args)))
    engine = make_engine(
        url,
        schema=args.schema,
        read_only=True,
        pooler=getattr(args, "pooler", None),
        poolclass=NullPool,
    )
    try:
        if at_head(engine):
            return
        from ..revisions import current_revisions, refuse_unknown_revisions

        current, heads, legacy = current_revisions(engine)
        schema = store_schema(engine)
    finally:
        engine.dispose()
    refuse_unknown_revisions(current)
    shown = {
        "where": shown_store(url, schema),
        "current": ", ".join(sorted(current)),
        "heads": ", ".join(sorted(heads)),
        "command": program(args),
    }
    if not current:
        raise CommandFailed(NO_STORE.format(**shown))
    if current != heads:
        raise CommandFailed(STORE_BEHIND.format(**shown))
    if legacy:
        raise CommandFailed(STORE_LEGACY.format(**shown))


def shown_store(url: URL, schema: str | None) -> str:
    """Where a message says the store at ``url`` in ``schema`` is (``store_location``)."""
    where = store_location(url)
    return f"{where}, schema '{schema}'" if schema else where


def program(args: argparse.Namespace, *, with_tenant: bool = True) -> str:
    """``acti-store`` and the options that chose the store, schema and tenant (not
    ``with_tenant``: a command that names its tenant itself), as a shell takes them: the start
    of every command a text prints for this run."""
    words = ["acti-store"]
    url = _url_word(args.url)
    if url is not None:
        words += ["--url", url]
    schema = args.schema if args.schema is not None else os.environ.get(ENV_SCHEMA) or None
    if schema:
        words += ["--schema", shlex.quote(schema)]
    tenant = args.tenant if args.tenant is not None else os.environ.get(ENV_TENANT) or None
    if tenant and with_tenant:
        words += ["--tenant", shlex.quote(tenant)]
    return " ".join(words)


def _url_word(given: str | None) -> str | None:
    """The ``--url`` of a printed command: None when nothing chose the store (the default
    file), ``"$ACTI_STORE_URL"`` for a URL from it or holding a password, else the URL, a
    relative SQLite path made absolute."""
    reference = f'"${ENV_URL}"'
    if not given:
        return reference if os.environ.get(ENV_URL) else None
    url = resolve_url(given)
    path = store_file(url)
    if path is None:
        shown = store_location(url)
        return (
            reference
            if url.render_as_string(hide_password=False) != shown
            else (shlex.quote(shown))
        )
    if not (url.database or "").startswith("file:"):
        url = url.set(database=str(path.resolve()))
    return shlex.quote(url.render_as_string(hide_password=False))


def add_field_argument(
    parser: argparse.ArgumentParser,
    model: type[BaseModel],
    field: str,
    *flags: str,
    **options: Any,
) -> None:
    """Add the argument (no ``flags``) or option that stands for ``model``'s ``field``.

    The value is stored under the field's name, its default is the field's and its help is the
    field's description (for a tool's args schema: what the model reads), so the command line and
    the tools cannot drift apart. Without ``flags`` the argument is positional, named as the field.
    """
    info = model.model_fields[field]
    if not info.is_required():
        options.setdefault("default", info.default)
    notes = _schema_notes(model, field, info.description or "")
    if options.get("action") == "append":
        notes.append("repeatable")
    description = (info.description or "").rstrip(".").replace("%", "%%")
    if options.get("default") not in (None, False) and "default" not in description:
        notes.append("default: %(default)s")
    help_text = f"{description} ({', '.join(notes)})" if notes else description
    if flags:
        parser.add_argument(*flags, dest=field, help=help_text, **options)
    else:
        parser.add_argument(field, help=help_text, **options)


def checked_by(model: type[BaseModel], field: str) -> Callable[[str], Any]:
    """An argparse ``type`` that checks a value with the rule of ``model``'s ``field``.

    One rule for every way in: a value the model refuses is a usage error that says why (e.g.
    ``argument --timeout: Input should be greater than or equal to 1``).
    """
    adapter: TypeAdapter[Any] = TypeAdapter(model.model_fields[field].rebuild_annotation())

    def check(text: str) -> Any:
        try:
            return adapter.validate_python(text)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(
                "; ".join(error["msg"] for error in exc.errors())
            ) from None

    return check


def field_values(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """The parsed values that are ``model``'s fields, by field name; ``None`` is "not given"."""
    fields = model.model_fields
    return {key: value for key, value in vars(args).items() if key in fields and value is not None}


@functools.cache
def _properties(model: type[BaseModel]) -> Mapping[str, Any]:
    return model.model_json_schema()["properties"]  # type: ignore[no-any-return]


def _schema_notes(model: type[BaseModel], field: str, description: str) -> list[str]:
    """What the field's JSON schema says that its description does not: choices and range."""
    schema = _properties(model)[field]
    for option in schema.get("anyOf", ()):  # a nullable field: the non-null alternative
        if option.get("type") != "null":
            schema = option
    notes = []
    choices = schema.get("enum") or schema.get("items", {}).get("enum")
    if choices and not all(str(choice) in description for choice in choices):
        notes.append(f"one of: {', '.join(map(str, choices))}")
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is None:
        notes.append(f"at least {low}")
    elif low is not None and f"{low}-{high}" not in description:
        notes.append(f"{low}-{high}")
    return notes


def package_version() -> str:
    """The installed acti-store's version (``unknown`` when run from a source tree only)."""
    from importlib import metadata  # read by ``--version`` alone

    try:
        return metadata.version("acti-store")
    except metadata.PackageNotFoundError:
        return "unknown"


def add_global_options(parser: argparse.ArgumentParser) -> None:
    """``acti-store``'s own options, before the command: ``--url``, ``--schema``, ``--tenant``,
    ``--read-only``, the connection's options, ``--version``."""
    parser.add_argument(
        "--url",
        dest="global_url",
        default=None,
        metavar="URL",
        help=f"database URL for any command (default: ${ENV_URL}, else {DEFAULT_URL}); a --url "
        "after the command wins",
    )
    parser.add_argument(
        "--schema",
        dest="global_schema",
        default=None,
        metavar="NAME",
        help=f"{SCHEMA_HELP}; a --schema after the command wins",
    )
    parser.add_argument(
        "--tenant",
        dest="global_tenant",
        default=None,
        metavar="NAME",
        help=f"{TENANT_HELP}; a --tenant after the command wins",
    )
    parser.add_argument(
        "--read-only",
        dest="global_read_only",
        action="store_true",
        help=f"{READ_ONLY_HELP}; as --read-only after the command (one that takes none refuses it)",
    )
    add_connection_options(parser)
    parser.add_argument("--version", action=_VersionAction)


class _VersionAction(argparse._VersionAction):
    """argparse's ``--version``, which reads the installed version only when it is asked for
    (the package metadata costs every other call a few tens of milliseconds)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        self.version = f"%(prog)s {package_version()}"
        super().__call__(parser, *args, **kwargs)


#: The options before the command that take a value, and those that take none (besides
#: ``--help`` and ``--version``): how ``cli._command_word`` reads past them to the command.
GLOBAL_VALUE_OPTIONS: Final = (
    "--url",
    "--schema",
    "--tenant",
    "--pooler",
    "--replica",
    "--listen-url",
)
GLOBAL_FLAGS: Final = ("--read-only",)


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """How a PostgreSQL store is reached in production (docs/production.md): ``--pooler``,
    ``--replica`` and ``--listen-url``, before the command (every command takes them)."""
    parser.add_argument(
        "--pooler",
        choices=POOLERS,
        default=None,
        help=f"the connection pooler in front of PostgreSQL: transaction for PgBouncer's "
        f"transaction mode, RDS Proxy, Supabase's or Neon's pooled URLs (default: "
        f"${ENV_POOLER}, else none)",
    )
    parser.add_argument(
        "--replica",
        dest="global_replicas",
        action="append",
        default=None,
        metavar="URL",
        help=f"a read replica (streaming standby) of the PostgreSQL server that reads go to; "
        f"repeatable (default: ${ENV_REPLICA_URLS}, comma-separated)",
    )
    parser.add_argument(
        "--listen-url",
        default=None,
        metavar="URL",
        help=f"a direct URL of the database for the change feed's LISTEN behind a transaction "
        f"pooler (default: ${ENV_LISTEN_URL}; without one, watchers poll)",
    )


def apply_global_options(args: argparse.Namespace) -> None:
    """Give the command the ``--url``, ``--schema``, ``--tenant`` and ``--replica`` given before
    it, unless it was given its own; ``--read-only`` before it is the command's own
    ``--read-only``: a command without one (it writes) refuses it (``CommandFailed``, a usage
    error in ``main``, as ``--read-only`` after such a command is)."""
    if getattr(args, "url", None) is None:
        args.url = args.global_url
    if getattr(args, "schema", None) is None:
        args.schema = args.global_schema
    if getattr(args, "tenant", None) is None:
        args.tenant = args.global_tenant
    if getattr(args, "replicas", None) is None:
        args.replicas = args.global_replicas
    if args.global_read_only:
        if "read_only" not in args:
            raise CommandFailed(f"{args.command} takes no --read-only: it writes")
        args.read_only = True


def cli_tools(repo: AgentRepository) -> BuilderTools:
    """The builder tools' logic bound to ``repo``, its texts naming ``acti-store`` commands."""
    from ..tools.builder import BuilderTools
    from ..tools.texts import CLI_CALLS

    return BuilderTools(lambda: repo, calls=CLI_CALLS)
