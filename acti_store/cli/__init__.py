"""``acti-store`` (also ``python -m acti_store``): the store's operations for people and scripts.

Each command is a function ``(args) -> exit status``; each command module adds its commands with
``register(subparsers)``. ``main`` is the one place that turns exceptions into exit statuses.
Bare, ``acti-store`` prints its help, as a usage error (on stderr, one ``error:`` line last,
status 2: nothing was done, and a script that ran it with an empty command must not see
success); a mistyped command is told the one it resembles.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import sys
from collections.abc import Sequence
from typing import Final, NoReturn

from ..errors import AgentStoreError
from . import doctor, feed, interchange, relay, run, serve_mcp, store, tenants, versions, write
from .options import Command, CommandFailed, add_global_options, apply_global_options

__all__ = ["build_parser", "main"]

#: argparse's words for a command it does not know (its own format, read in one place:
#: ``tests/test_cli_entry.py`` fails if a Python release changes them).
_UNKNOWN_COMMAND: Final = re.compile(r"argument COMMAND: invalid choice: '([^']*)'")
#: Status of a usage error (argparse's), and of a bare ``acti-store``.
USAGE_STATUS: Final = 2
#: The error line under the help a bare ``acti-store`` prints.
NO_COMMAND: Final = "{prog}: error: a COMMAND is required: one of those above\n"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose error for an unknown command names the command it resembles."""

    #: The command names, for the suggestion (set on the top-level parser only).
    commands: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        unknown = _UNKNOWN_COMMAND.match(message)
        close = difflib.get_close_matches(unknown[1], self.commands, n=1) if unknown else []
        if unknown and close:
            message = (
                f"{unknown[0]}; did you mean {close[0]!r}? ({self.prog} --help lists every command)"
            )
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    """The ``acti-store`` parser with every command (a bare ``acti-store`` parses to
    ``command=None``: ``main`` prints the help)."""
    parser = _Parser(
        prog="acti-store",
        description="The ACTi Agent Builder's store: agent configs, metadata and history.",
    )
    add_global_options(parser)
    subparsers = parser.add_subparsers(
        dest="command", required=False, metavar="COMMAND", parser_class=argparse.ArgumentParser
    )
    modules = (store, write, versions, interchange, run, serve_mcp, tenants, feed, relay, doctor)
    for module in modules:
        module.register(subparsers)
    parser.commands = tuple(subparsers.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: the process's arguments); return its status.

    The one place where exceptions become exit statuses: results go to stdout; every error (a
    store error, a command's refusal: ``CommandFailed``) is one ``error: ...`` line on stderr and
    status 1 (argparse's usage errors: 2), a closed stdout (``acti-store ... |
    head``) ends quietly with 1, Ctrl-C with 130. No traceback is ever printed.
    """
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:  # bare ``acti-store``: what it can do, nothing done
            parser.print_help(sys.stderr)
            parser.exit(USAGE_STATUS, NO_COMMAND.format(prog=parser.prog))
        try:
            apply_global_options(args)
        except CommandFailed as exc:  # an option before the command that it does not take
            parser.error(str(exc))
        func: Command = args.func
        status = func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit where it cannot be caught
        return status
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except (AgentStoreError, CommandFailed) as exc:
        return _fail(f"error: {exc}")
    except OSError as exc:  # the environment: a file, a folder, a device
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"error: {where}{exc.strerror or exc}")
    except Exception as exc:  # a bug: still one line, saying what to report
        return _fail(f"error: unexpected {type(exc).__name__}: {exc} (please report this)")


def _fail(line: str, status: int = 1) -> int:
    """Print ``line`` on stderr (if stderr is still there) and return ``status``."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr)
    return status


def _stdout_closed() -> int:
    """The reader of stdout went away: point stdout at devnull so that flushing it at exit does
    not fail again, and end quietly (the Python docs' note on SIGPIPE)."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
