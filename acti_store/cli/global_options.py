"""``acti-store``'s own options, before the command (``--url``, ``--schema``, ``--tenant``,
``--read-only``, the connection's ``--pooler``, ``--replica``, ``--listen-url``, ``--version``),
how ``cli._command_word`` reads past them, and how the command is given them
(``apply_global_options``).
"""

from __future__ import annotations

import argparse
from typing import Any, Final

from ..engine import (
    DEFAULT_URL,
    ENV_LISTEN_URL,
    ENV_POOLER,
    ENV_REPLICA_URLS,
    ENV_URL,
    POOLERS,
)
from .command import CommandFailed
from .store_options import READ_ONLY_HELP, SCHEMA_HELP, TENANT_HELP


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
