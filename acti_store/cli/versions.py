"""The version commands: ``versions``, ``diff``, ``rollback``, ``label``, ``labels``,
``protect`` and ``compare``.

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
from typing import TYPE_CHECKING, Any, Final

from ..errors import AgentNotFoundError
from ..models import is_valid_name
from ..repository import SqlAgentRepository
from ..routing import SPLIT_MAX, TOTAL, spelled
from ..tools.outcomes import Result
from ..tools.version_texts import ROLLBACK_TARGET, VERSIONS_LIMIT_DEFAULT, VERSIONS_LIMIT_MAX
from ..versioning import is_valid_label
from . import confirm
from .options import (
    CommandFailed,
    add_store_options,
    add_url_option,
    one_line,
    open_from_args,
)

if TYPE_CHECKING:
    from ..tools.version_tools import VersionTools

#: ANSI colours of a diff's lines, by their first characters (after the report's indent).
_COLOURS: Final = (("  +++", ""), ("  ---", ""), ("  +", "32"), ("  -", "31"), ("  @@", "36"))


def _coloured(text: str) -> str:
    lines = []
    for line in text.splitlines():
        colour = next((c for start, c in _COLOURS if line.startswith(start)), "")
        lines.append(f"\x1b[{colour}m{line}\x1b[0m" if colour else line)
    return "\n".join(lines)


def _with_version_tools(
    args: argparse.Namespace,
    call: Callable[[VersionTools], Result],
    *,
    colour: bool = False,
    bind: Callable[[SqlAgentRepository], str] | None = None,
) -> int:
    """Print what ``call`` answers; ``bind``: the confirmation code its texts print, checked
    first against ``--confirm`` (``confirm.check``)."""
    repo = open_from_args(args)
    try:
        code = "" if bind is None else bind(repo)
        text, artifact = call(confirm.version_tools(repo, args, code))
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
        bind=lambda repo: _rollback_code(repo, args.name, args.from_version)[0] or "",
    )


def _cmd_rollback(args: argparse.Namespace) -> int:
    """Without ``--yes`` a preview, whose command confirms with the code of the agent's current
    version and the target (``confirm``); a ``--confirm`` code that no longer matches is
    refused."""

    def bind(repo: SqlAgentRepository) -> str:
        bound, current = _rollback_code(repo, args.name, args.to_version)
        what = f"rolling agent '{args.name}' v{current} back to v{args.to_version}"
        confirm.check(args.confirm, repo, bound, what)
        return bound or ""

    confirmed = args.yes or args.confirm is not None
    return _with_version_tools(
        args,
        lambda t: t.rollback_agent_config(args.name, args.to_version, confirm=confirmed),
        colour=True,
        bind=bind,
    )


def _rollback_code(
    repo: SqlAgentRepository, name: str, target: int
) -> tuple[str | None, int | None]:
    """The code of rolling agent ``name`` back to ``target`` from its current version, and that
    version; (None, None) for no such agent or an invalid name (the tool says)."""
    if not is_valid_name(name):
        return None, None
    try:
        current = repo.get(name).metadata.version
    except AgentNotFoundError:
        return None, None
    return confirm.code(repo, name, "rollback", current, target), current


def _share(text: str) -> tuple[int, int | None]:
    """One TARGET word of ``label``: ``3`` (the whole label) or ``3=90`` (a share)."""
    version, equals, weight = text.partition("=")
    try:
        return int(version), int(weight) if equals else None
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a version (3) nor a version's share (3=90)"
        ) from None


def _target(shares: list[tuple[int, int | None]]) -> int | dict[int, int]:
    """``label``'s TARGET words as ``set_label`` takes them: a version, or version -> weight."""
    if len(shares) == 1 and shares[0][1] is None:
        return shares[0][0]
    if any(weight is None for _, weight in shares):
        raise CommandFailed(
            f"a split gives each version its share, e.g. 3=90 4=10 (whole percents summing to "
            f"{TOTAL})"
        )
    versions = [version for version, _ in shares]
    if len(set(versions)) != len(versions):
        raise CommandFailed("a split names each version once, e.g. 3=90 4=10")
    return {version: weight for version, weight in shares if weight is not None}


def _cmd_label(args: argparse.Namespace) -> int:
    chosen = [bool(args.target), args.remove, args.rollback]
    if sum(chosen) != 1:
        print("error: give either a VERSION (or a split), --remove or --rollback", file=sys.stderr)
        return 2
    if args.force and args.remove:
        print("error: --force moves a label past its gate; --remove needs none", file=sys.stderr)
        return 2
    if args.confirm is not None and args.remove:
        print("error: --confirm confirms a forced move; --remove needs none", file=sys.stderr)
        return 2
    if (args.force or args.confirm is not None) and not args.note:
        print('error: --force needs --note "why" (the label log keeps it)', file=sys.stderr)
        return 2
    if args.remove:
        return _with_version_tools(args, lambda t: t.remove_label(args.name, args.label, args.note))
    force = args.force or args.confirm is not None
    if args.rollback:
        return _with_version_tools(
            args,
            lambda t: t.rollback_label(args.name, args.label, args.note, force=force),
            bind=lambda repo: _force_code(repo, args, ROLLBACK_TARGET),
        )
    target = _target(args.target)
    moved = spelled({target: TOTAL} if isinstance(target, int) else target)
    return _with_version_tools(
        args,
        lambda t: t.set_label(args.name, args.label, target, args.note, force=force),
        bind=lambda repo: _force_code(repo, args, moved),
    )


def _force_code(repo: SqlAgentRepository, args: argparse.Namespace, target: str) -> str:
    """The code of forcing ``args.label`` of ``args.name`` from where it points now to ``target``
    (as the command spells it), checked against ``--confirm``; "" for no such agent or label
    name (the tool says)."""
    if not is_valid_name(args.name) or not is_valid_label(args.label):
        return ""
    try:
        now = repo.label_weights(args.name).get(args.label)
    except AgentNotFoundError:
        return ""
    position = "unset" if now is None else spelled(now)
    bound = confirm.code(repo, args.name, "force", args.label, position, target)
    what = f"forcing label '{args.label}' of agent '{args.name}' from {position} to {target}"
    confirm.check(args.confirm, repo, bound, what)
    return bound


def _cmd_protect(args: argparse.Namespace) -> int:
    gate = (args.min_runs, args.min_success_rate, args.max_mean_duration)
    if args.off:
        if gate != (None, None, None):
            print("error: --off removes the gate; give no gate options with it", file=sys.stderr)
            return 2
        return _with_version_tools(args, lambda t: t.unprotect_label(args.name, args.label))
    if gate == (None, None, None):
        print(
            "error: give the gate: --min-runs, --min-success-rate or --max-mean-duration "
            "(or --off to remove it)",
            file=sys.stderr,
        )
        return 2
    return _with_version_tools(
        args,
        lambda t: t.protect_label(
            args.name,
            args.label,
            min_runs=0 if args.min_runs is None else args.min_runs,
            min_success_rate=0.0 if args.min_success_rate is None else args.min_success_rate,
            max_mean_duration=args.max_mean_duration,
        ),
    )


def _cmd_compare(args: argparse.Namespace) -> int:
    return _with_version_tools(args, lambda t: t.compare_agent_versions(args.name, args.a, args.b))


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
    confirm.add_confirm_option(rollback)
    add_url_option(rollback)
    rollback.set_defaults(func=_cmd_rollback)

    label = subparsers.add_parser(
        "label",
        help="point a label (production, ...) at a version, split it between versions, roll "
        "its last move back, or remove it",
    )
    _name(label)
    label.add_argument("label", help="the label: a lowercase letter, then up to 31 of a-z 0-9 _ -")
    label.add_argument(
        "target",
        nargs="*",
        type=_share,
        metavar="VERSION",
        help=f"the version the label points at (3), or a split: up to {SPLIT_MAX} versions "
        f"with whole-percent shares summing to {TOTAL} (3=90 4=10)",
    )
    label.add_argument("--remove", action="store_true", help="remove the label instead")
    label.add_argument(
        "--rollback",
        action="store_true",
        help="put the label back where it pointed before its last move (again: one more back)",
    )
    label.add_argument("--note", default=None, help="a note for the label log (why it moved)")
    label.add_argument(
        "--force",
        action="store_true",
        help="move a protected label even though a version fails its gate (needs --note; the "
        "log marks the move forced)",
    )
    label.add_argument(
        "--confirm",
        type=confirm.confirm_code,
        default=None,
        metavar="CODE",
        help="force, only if CODE (printed by the gate's refusal) still matches the store, "
        "tenant and label's position; else nothing is moved and the command fails",
    )
    add_url_option(label)
    label.set_defaults(func=_cmd_label)

    labels = subparsers.add_parser(
        "labels", help="an agent's labels (splits and gates too) and every move of them"
    )
    _name(labels)
    add_store_options(labels, read_only=True)
    labels.set_defaults(func=_cmd_labels)

    protect = subparsers.add_parser(
        "protect",
        help="protect a label with a gate: it sends a share only to versions whose runs meet "
        "it (--off: remove the gate)",
    )
    _name(protect)
    protect.add_argument("label", help="the label to protect (it need not be set yet)")
    protect.add_argument(
        "--min-runs",
        type=int,
        default=None,
        metavar="N",
        help="runs a version needs: 0 or more (default: 0)",
    )
    protect.add_argument(
        "--min-success-rate",
        type=float,
        default=None,
        metavar="R",
        help="the success rate a version needs: 0-1, e.g. 0.95 (default: 0)",
    )
    protect.add_argument(
        "--max-mean-duration",
        type=float,
        default=None,
        metavar="S",
        help="the longest mean duration of a version's runs: 0-86400 seconds, more than 0 "
        "(default: no limit)",
    )
    protect.add_argument("--off", action="store_true", help="remove the label's gate instead")
    add_url_option(protect)
    protect.set_defaults(func=_cmd_protect)

    compare = subparsers.add_parser(
        "compare",
        help="two versions' runs side by side: success rates with 95%% intervals, durations "
        "and the difference",
    )
    _name(compare)
    _version(compare, "a", "the version to compare against (e.g. production's)")
    _version(compare, "b", "the other version (e.g. the new one)")
    add_store_options(compare, read_only=True)
    compare.set_defaults(func=_cmd_compare)
