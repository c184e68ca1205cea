"""The options that choose the store (``--url``, ``--schema``, ``--tenant``, ``--read-only``):
added to a command's parser, the store opened from them (a command that only reads refused where
there is no store, or one behind this acti_store's latest revision), and given back as the start
of a printed command (``program``).
"""

from __future__ import annotations

import argparse
import os
import shlex
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from ..dberrors import unreachable
from ..engine import (
    DEFAULT_URL,
    ENV_SCHEMA,
    ENV_URL,
    make_engine,
    resolve_url,
    store_file,
    store_location,
    store_schema,
)
from ..tenancy import DEFAULT_TENANT, ENV_TENANT
from .command import CommandFailed

if TYPE_CHECKING:  # loaded by the function that uses it: a command's parser needs none
    from ..repository import SqlAgentRepository


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
