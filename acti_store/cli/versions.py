"""The version commands: ``versions``, ``diff``, ``rollback``, ``label`` and ``labels``.

Like the other commands they print the version tools' texts (``VersionTools``), naming
``acti-store`` commands where a tool names a tool call; an error answer is one ``error: ...``
line on stderr and status 1.
``diff`` colours its lines when standard output is a terminal (not with ``NO_COLOR`` set).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any, Final

from ..tools.outcomes import Result
from ..tools.version_texts import VERSION_CLI_CALLS, VERSIONS_LIMIT_DEFAULT, VERSIONS_LIMIT_MAX
from ..tools.version_tools import VersionTools
from .options import (
    CommandFailed,
    add_store_options,
    add_url_option,
    cli_tools,
    one_line,
    open_from_args,
)

#: ANSI colours of a diff's lines, by their first characters (after the report's indent).
_COLOURS: Final = (("  +++", ""), ("  ---", ""), ("  +", "32"), ("  -", "31"), ("  @@", "36"))


def _coloured(text: str) -> str:
    lines = []
    for line in text.splitlines():
        colour = next((c for start, c in _COLOURS if line.startswith(start)), "")
        lines.append(f"\x1b[{colour}m{line}\x1b[0m" if colour else line)
    return "\n".join(lines)


def _with_version_tools(
    args: argparse.Namespace, call: Callable[[VersionTools], Result], *, colour: bool = False
) -> int:
    repo = open_from_args(args)
    try:
        text, artifact = call(VersionTools(cli_tools(repo), VERSION_CLI_CALLS))
    finally:
        repo.close()
    if artifact["status"] != "success":
        raise CommandFailed(one_line(text))
    if colour and sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        text = _coloured(text)
    print(text)
    return 0


def _cmd_versions(args: argparse.Namespace) -> int:
    return _with_version_tools(args, lambda t: t.list_agent_versions(args.name, args.limit))


def _cmd_diff(args: argparse.Namespace) -> int:
    return _with_version_tools(
        args,
        lambda t: t.diff_agent_versions(args.name, args.from_version, args.to_version),
        colour=True,
    )


def _cmd_rollback(args: argparse.Namespace) -> int:
    return _with_version_tools(
        args,
        lambda t: t.rollback_agent_config(args.name, args.to_version, confirm=args.yes),
        colour=True,
    )


def _cmd_label(args: argparse.Namespace) -> int:
    if args.remove == (args.version is not None):
        print("error: give either a VERSION or --remove", file=sys.stderr)
        return 2
    if args.remove:
        return _with_version_tools(args, lambda t: t.remove_label(args.name, args.label, args.note))
    return _with_version_tools(
        args, lambda t: t.set_label(args.name, args.label, args.version, args.note)
    )


def _cmd_labels(args: argparse.Namespace) -> int:
    return _with_version_tools(args, lambda t: t.label_report(args.name))


def _name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the agent's name (snake_case)")


def _version(parser: argparse.ArgumentParser, dest: str, help: str, **options: Any) -> None:
    parser.add_argument(dest, type=int, metavar=dest.upper(), help=f"{help} (1 or more)", **options)


def register(subparsers: Any) -> None:
    """Add versions, diff, rollback, label and labels to the command line."""
    versions = subparsers.add_parser("versions", help="an agent's saved versions, newest first")
    _name(versions)
    versions.add_argument(
        "--limit",
        type=int,
        default=VERSIONS_LIMIT_DEFAULT,
        metavar="N",
        help=f"how many versions to show: 1-{VERSIONS_LIMIT_MAX} (default: %(default)s)",
    )
    add_store_options(versions, read_only=True)
    versions.set_defaults(func=_cmd_versions)

    diff = subparsers.add_parser("diff", help="what changed between two versions of an agent")
    _name(diff)
    _version(diff, "from_version", "the older version")
    _version(diff, "to_version", "the newer version")
    add_store_options(diff, read_only=True)
    diff.set_defaults(func=_cmd_diff)

    rollback = subparsers.add_parser(
        "rollback",
        help="make an older version's configuration current again, as a new version (without "
        "--yes: show the changes)",
    )
    _name(rollback)
    _version(rollback, "to_version", "the version whose configuration becomes current")
    rollback.add_argument(
        "--yes",
        action="store_true",
        help="roll back for real (default: a dry run that shows the changes, exit 0)",
    )
    add_url_option(rollback)
    rollback.set_defaults(func=_cmd_rollback)

    label = subparsers.add_parser(
        "label", help="point a label (production, ...) at a version, or remove it"
    )
    _name(label)
    label.add_argument("label", help="the label: a lowercase letter, then up to 31 of a-z 0-9 _ -")
    _version(label, "version", "the version the label points at", nargs="?")
    label.add_argument("--remove", action="store_true", help="remove the label instead")
    label.add_argument("--note", default=None, help="a note for the label log (why it moved)")
    add_url_option(label)
    label.set_defaults(func=_cmd_label)

    labels = subparsers.add_parser("labels", help="an agent's labels and every move of them")
    _name(labels)
    add_store_options(labels, read_only=True)
    labels.set_defaults(func=_cmd_labels)
