"""``acti-store`` (also ``python -m acti_store``): the store's operations for people and scripts.

Each command is a function ``(args) -> exit status``; each command module adds its commands with
``register(subparsers)``. ``main`` is the one place that turns exceptions into exit statuses.
Bare, ``acti-store`` prints its help, as a usage error (on stderr, one ``error:`` line last,
status 2: nothing was done, and a script that ran it with an empty command must not see
success); a mistyped command is told the one it resembles.

A call builds the parser of its own command only (``COMMAND_MODULES`` says which module
registers it, ``_command_word`` finds it in the arguments): a short-lived ``acti-store show``
neither imports nor builds the other commands (their modules import what they run: the tools'
schemas, the relay, the MCP server). The help, a mistyped or abbreviated command, and anything
the quick look cannot read build the whole parser, so every answer stays the same.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import os
import re
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Final, NoReturn

from ..errors import AgentStoreError
from .options import (
    GLOBAL_FLAGS,
    GLOBAL_VALUE_OPTIONS,
    Command,
    CommandFailed,
    add_global_options,
    apply_global_options,
)

__all__ = ["build_parser", "main"]

#: argparse's words for a command it does not know (its own format, read in one place:
#: ``tests/test_cli_entry.py`` fails if a Python release changes them).
_UNKNOWN_COMMAND: Final = re.compile(r"argument COMMAND: invalid choice: '([^']*)'")
#: Status of a usage error (argparse's), and of a bare ``acti-store``.
USAGE_STATUS: Final = 2
#: The error line under the help a bare ``acti-store`` prints.
NO_COMMAND: Final = "{prog}: error: a COMMAND is required: one of those above\n"


#: The command modules, in the order the help lists their commands.
MODULES: Final = (
    "store",
    "write",
    "versions",
    "interchange",
    "run",
    "serve_mcp",
    "tenants",
    "feed",
    "relay",
    "doctor",
)
#: Each command and the module (of ``MODULES``) whose ``register`` adds it
#: (``tests/test_cli_entry.py`` checks it against what each module registers).
COMMAND_MODULES: Final = {
    **dict.fromkeys(("migrate", "quickstart", "list", "show", "search", "history"), "store"),
    **dict.fromkeys(("create", "update", "clone", "delete", "record"), "write"),
    **dict.fromkeys(
        ("versions", "diff", "rollback", "label", "labels", "protect", "compare"), "versions"
    ),
    **dict.fromkeys(("export", "import", "migrate-agents"), "interchange"),
    "run": "run",
    "serve-mcp": "serve_mcp",
    "tenants": "tenants",
    "changes": "feed",
    "relay": "relay",
    "doctor": "doctor",
}


def command_module(name: str) -> ModuleType:
    """The command module ``name`` (of ``MODULES``), imported now."""
    return importlib.import_module(f".{name}", __name__)


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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``acti-store`` parser with every command (a bare ``acti-store`` parses to
    ``command=None``: ``main`` prints the help); with ``only`` (a module of ``MODULES``), with
    that module's commands alone: what a call of one of them parses the same way."""
    parser = _Parser(
        prog="acti-store",
        description="The ACTi Agent Builder's store: agent configs, metadata and history.",
    )
    add_global_options(parser)
    subparsers = parser.add_subparsers(
        dest="command", required=False, metavar="COMMAND", parser_class=argparse.ArgumentParser
    )
    for name in MODULES if only is None else (only,):
        command_module(name).register(subparsers)
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
        arguments = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(COMMAND_MODULES.get(_command_word(arguments) or ""))
        args = parser.parse_args(arguments)
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


def _command_word(arguments: Sequence[str]) -> str | None:
    """The command ``arguments`` name, read past the global options before it; None when they
    hold something else first (``--help``, ``--version``, an abbreviated option, ``--``): the
    whole parser reads those."""
    with_value = tuple(f"{option}=" for option in GLOBAL_VALUE_OPTIONS)
    words = iter(arguments)
    for word in words:
        if word in GLOBAL_VALUE_OPTIONS:
            next(words, None)  # its value
        elif not (word in GLOBAL_FLAGS or word.startswith(with_value)):
            return None if word.startswith("-") else word
    return None


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
