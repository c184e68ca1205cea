"""``acti-store changes``: the store's change feed, oldest first, once or as it grows.

The changes come from ``repo.changes`` a page at a time; ``--follow`` then keeps reading them as
they commit (``repo.watch``) until Ctrl-C or SIGTERM, which end it with status 0. What this
module shares with ``relay``: reading the feed from a position (``read_feed``), a change as one
line of text (``change_line``) and as its JSON body (``change_body``), and ending a follower
quietly on SIGTERM as on Ctrl-C (``interruptible``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
from collections.abc import Generator, Iterator
from types import FrameType
from typing import Any, Final

from ..changes import CHANGE_KINDS, CHANGES_LIMIT_DEFAULT, Change
from ..repository import AgentRepository
from ..tools.render import record_time
from .options import Command, add_store_options, open_from_args

Feed = Generator[Change, None, None]
"""The changes ``read_feed`` yields, as they are read."""

#: Kinds are padded to the longest, so that the agent names of a listing line up.
_KIND_WIDTH: Final = max(len(kind) for kind in CHANGE_KINDS)


def change_line(change: Change) -> str:
    """``12  2026-11-26T20:51:03Z  label_set        support_bot  v3  production``: the seq, the
    time (UTC), the kind, the agent, its version (``-``: none) and the label, if any."""
    version = "-" if change.version is None else f"v{change.version}"
    fields = [str(change.seq), record_time(change.at), f"{change.kind:<{_KIND_WIDTH}}"]
    fields += [change.agent, version, *([change.label] if change.label is not None else [])]
    return "  ".join(fields)


def change_body(change: Change) -> bytes:
    """The change as compact JSON in UTF-8: a line of ``changes --json``, a ``relay`` body."""
    return json.dumps(change.to_json(), separators=(",", ":"), ensure_ascii=False).encode()


def read_feed(repo: AgentRepository, after: int | None, *, follow: bool) -> Feed:
    """The changes after seq ``after`` (``None``: from the oldest kept), oldest first, read a
    page at a time; with ``follow``, then each change as it commits, without end.

    Raises ``ChangesExpiredError`` when the changes after ``after`` were pruned.
    """
    # Read before the first page: a change committed after it has a greater seq, so when every
    # change was pruned (or none was made) the watch starts here and misses none.
    newest = repo.last_change() if follow and after is None else 0
    last = after
    while True:
        page = repo.changes(after=last, limit=CHANGES_LIMIT_DEFAULT)
        yield from page
        if not page:
            break
        last = page[-1].seq
    if follow:
        yield from repo.watch(after=newest if last is None else last)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` inside the block, as Ctrl-C does: a follower that
    catches it ends on either (``kill``, a service manager's stop) with status 0."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def close_quietly(repo: AgentRepository, feed: Feed | None) -> None:
    """Close the ``feed`` read from ``repo``, then ``repo``, after an interruption that may have
    come in the middle of a statement: the feed's own clean-up runs now, not when it is
    collected (after the store is closed, where it could only fail)."""
    if feed is not None:
        with contextlib.suppress(Exception):
            feed.close()
    with contextlib.suppress(Exception):
        repo.close()


def until_stopped(command: Command) -> Command:
    """``command`` run until it returns, or until Ctrl-C or SIGTERM end it with status 0."""

    def run(args: argparse.Namespace) -> int:
        try:
            with interruptible():
                return command(args)
        except KeyboardInterrupt:
            return 0

    return run


def _print_changes(args: argparse.Namespace) -> int:
    repo = open_from_args(args)
    feed = read_feed(repo, args.after, follow=args.follow)
    try:
        for change in feed:
            print(change_body(change).decode() if args.json else change_line(change), flush=True)
    finally:
        close_quietly(repo, feed)
    return 0


def _cmd_changes(args: argparse.Namespace) -> int:
    # A listing cut short by Ctrl-C is main's "interrupted" (130); a follower's end is status 0.
    return until_stopped(_print_changes)(args) if args.follow else _print_changes(args)


def seq_number(text: str) -> int:
    """An argparse ``type``: a change's seq, 0 or more (0: before the first change)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("a seq is 0 or more")
    return value


def register(subparsers: Any) -> None:
    """Add ``changes`` to the command line."""
    changes = subparsers.add_parser(
        "changes",
        help="the store's changes (created, updated, deleted, labels...), oldest first",
        description="Each change of the tenant's agents, oldest first: its seq, time (UTC), "
        "kind, agent, version and label. With --follow, then each change as it commits, until "
        "Ctrl-C or SIGTERM (status 0). Changes a retention pruned are gone: asking for them is "
        "an error.",
    )
    changes.add_argument(
        "--after",
        type=seq_number,
        default=None,
        metavar="SEQ",
        help="only the changes after seq SEQ (default: from the oldest change kept)",
    )
    changes.add_argument(
        "--follow",
        action="store_true",
        help="keep printing changes as they commit, until Ctrl-C or SIGTERM",
    )
    changes.add_argument(
        "--json",
        action="store_true",
        help="print each change as one JSON object per line (JSON lines)",
    )
    add_store_options(changes, read_only=True)
    changes.set_defaults(func=_cmd_changes)
