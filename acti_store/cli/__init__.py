"""``acti-store`` (also ``python -m acti_store``): the store's operations for people and scripts.

Each command is a function ``(args) -> exit status``; each command module adds its commands with
``register(subparsers)``. ``main`` is the one place that turns exceptions into exit statuses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import AgentStoreError
from . import interchange, run, store, write
from .options import Command, add_global_options, apply_global_options

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``acti-store`` parser with every command."""
    parser = argparse.ArgumentParser(
        prog="acti-store",
        description="The ACTi Agent Builder's store: agent configs, metadata and history.",
    )
    add_global_options(parser)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (store, write, interchange, run):
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: the process's arguments); return its status."""
    args = build_parser().parse_args(argv)
    apply_global_options(args)
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
