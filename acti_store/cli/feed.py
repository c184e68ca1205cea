"""``acti-store changes``: the store's change feed, oldest first, once or as it grows.

The changes come from ``repo.changes`` a page at a time; ``--follow`` then keeps reading them as
they commit (``repo.watch``) until Ctrl-C or SIGTERM, which end it with status 0. What this
module shares with ``relay``: reading the feed from a position (``read_feed``), a change as one
line of text (``change_line``) and as its JSON body (``change_body``), and ending a follower
quietly on SIGTERM as on Ctrl-C, between two of the driver's steps (``interruptible``).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import signal
import sys
from collections.abc import Generator, Iterator
from types import FrameType
from typing import Any, Final

from ..changes import CHANGE_KINDS, CHANGES_LIMIT_DEFAULT, Change
from ..repository import AgentRepository
from ..repository.signals import INTERRUPTIBLE_WAITS
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


#: How soon a stop that came while the driver's or SQLAlchemy's code ran is looked at again.
STOP_RETRY: Final = 0.01


def _own_code(frame: FrameType) -> bool:
    """Whether ``frame`` runs the package's code or the standard library's."""
    top = str(frame.f_globals.get("__name__", "")).partition(".")[0]
    return top == "acti_store" or top in sys.stdlib_module_names


def _can_stop(frame: FrameType | None, outside: frozenset[int]) -> bool:
    """Whether ``KeyboardInterrupt`` raised in ``frame`` (the running one) loses nothing: every
    frame up to the block's (``outside``) runs the package's or the standard library's code, or
    one of them is a change signal's wait (which its driver ends cleanly on an interruption)."""
    held = False
    while frame is not None and id(frame) not in outside:
        if frame.f_code in INTERRUPTIBLE_WAITS:
            return True
        held = held or not _own_code(frame)
        frame = frame.f_back
    return not held


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C and SIGTERM raise ``KeyboardInterrupt`` inside the block, as a follower expects of
    either (``kill``, a service manager's stop) — but never in the middle of the driver's or
    SQLAlchemy's own code, which may leave an object half made there (PyMySQL's result, whose
    finalizer then prints an error at exit). A stop that comes there is looked at again every
    ``STOP_RETRY`` seconds, and lands as soon as that code returns; a second stop lands at once
    (a statement that hangs cannot hold the process)."""
    here = inspect.currentframe()
    # The frames outside the block, kept alive while it runs: no frame inside can reuse an id.
    kept = list(_frames(here.f_back if here is not None else None))
    outside = frozenset(map(id, kept))
    stops = 0

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stops
        stops += 1
        retry(signum, frame, force=stops > 1)

    def retry(signum: int, frame: FrameType | None, *, force: bool = False) -> None:
        if force or _can_stop(frame, outside):
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise KeyboardInterrupt
        signal.setitimer(signal.ITIMER_REAL, STOP_RETRY)

    previous = {
        signum: signal.signal(signum, handler)
        for signum, handler in (
            (signal.SIGINT, stop),
            (signal.SIGTERM, stop),
            (signal.SIGALRM, retry),
        )
    }
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        kept.clear()


def _frames(frame: FrameType | None) -> Iterator[FrameType]:
    while frame is not None:
        yield frame
        frame = frame.f_back


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
