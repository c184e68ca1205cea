"""``acti-store`` (also ``python -m acti_store``): the store's operations for people and scripts.

Each command is a function ``(args) -> exit status``. Commands of other layers register
themselves through a ``register(subparsers)`` function in their own module (``interchange_cli``,
``execution.cli``), so this module stays the one entry point without knowing their internals.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import AgentStoreError, open_repository
from .engine import DEFAULT_URL, ENV_URL, make_engine, upgrade_schema
from .repository import SqlAgentRepository

Command = Callable[[argparse.Namespace], int]

#: Modules that add commands; optional ones may be missing when an extra is not installed.
PLUGINS: tuple[str, ...] = ("acti_store.interchange_cli", "acti_store.execution.cli")


def add_url_option(parser: argparse.ArgumentParser) -> None:
    """The ``--url`` option every command that opens the store takes."""
    parser.add_argument(
        "--url",
        default=None,
        help=f"database URL (default: ${ENV_URL}, else {DEFAULT_URL})",
    )


def open_from_args(args: argparse.Namespace, **kwargs: Any) -> SqlAgentRepository:
    """Open the store named by ``--url`` (or the environment)."""
    return open_repository(getattr(args, "url", None), **kwargs)


def _cmd_migrate(args: argparse.Namespace) -> int:
    engine = make_engine(args.url)
    try:
        upgrade_schema(engine)
    finally:
        engine.dispose()
    print("Schema is at the latest revision.")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acti-store",
        description="The ACTi Agent Builder's store: agent configs, metadata and history.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    migrate = subparsers.add_parser("migrate", help="bring the database schema to the latest")
    add_url_option(migrate)
    migrate.set_defaults(func=_cmd_migrate)

    from . import cli_commands

    cli_commands.register(subparsers)
    for module_name in PLUGINS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue  # an optional extra (e.g. ``agents``) is not installed
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except AgentStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
