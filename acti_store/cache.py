"""``ConfigCache``: the configuration an agent's label (or its current version) points at, read
from memory and never staler than ``max_staleness`` seconds.

Two maps. Versions are immutable, so ``(name, version) -> AgentVersion`` is kept for good (an
agent's entries go when a ``deleted`` change for it arrives: the name can be reused). Pointers
``(name, label | None) -> version`` are what changes; a background daemon thread follows the
store's change feed (``repo.watch``) and drops the pointers of every agent a change names,
whichever process made it.

The guarantee holds with the feed down too: a pointer is trusted only while it is fresh, i.e.
read from the store, or confirmed by the follower (every change committed before the
confirmation applied), less than ``max_staleness`` seconds ago. The follower confirms at least
every ``max_staleness / 2`` (``repo.changes`` after its position: nothing left, or everything
left applied); when it cannot (store down, feed broken), pointers age out and ``get`` reads the
store again, raising the store's own errors (``AgentNotFoundError``, ``LabelNotFoundError``...).

A hit is two dict lookups, a tuple unpack and ``time.monotonic()``: no lock. The follower and a
miss's write-back take a lock; a pointer read while the follower dropped that agent's pointers
is not kept (a per-agent generation, and a global one for a reset of the follower).

``AgentVersion.labels`` (the labels pointing at a version) is as fresh as the pointer that served
it: an entry read again that differs replaces the kept one, an equal one keeps the kept object.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Final

from .errors import ChangesExpiredError

if TYPE_CHECKING:
    from .changes import Change
    from .repository import AgentRepository
    from .versioning import AgentVersion

logger = logging.getLogger(__name__)

#: Changes read at a time when the follower catches up.
CATCH_UP_PAGE: Final = 500
#: The longest the follower watches with nothing new before it confirms again (and sees
#: ``close``): each watch holds a connection of its own, so not much shorter.
WATCH_SLICE: Final = 1.0
#: How long ``close`` waits for the follower to stop, at most (it is a daemon thread).
CLOSE_WAIT: Final = 5.0

_Key = tuple[str, str | None]


class ConfigCache:
    """The ``AgentVersion`` each ``(name, label)`` points at (label None: the agent's current
    version), from memory while the change feed says it is unchanged, never older than
    ``max_staleness`` seconds. Use it as a context manager, or ``close()`` it."""

    def __init__(self, repo: AgentRepository, max_staleness: float = 1.0) -> None:
        if not max_staleness > 0:
            raise ValueError(f"max_staleness must be > 0 seconds, not {max_staleness!r}")
        self._repo = repo
        self._max_staleness = float(max_staleness)
        #: How often the follower confirms, at least (half the staleness allowed).
        self._interval = self._max_staleness / 2
        self._pointers: dict[_Key, tuple[AgentVersion, float]] = {}
        self._labels: dict[str, set[str | None]] = {}  # the pointer keys held, by agent
        self._versions: dict[str, dict[int, AgentVersion]] = {}
        self._generations: dict[str, int] = {}
        self._resets = 0
        #: Every change committed before this instant (``time.monotonic``) has been applied.
        self._confirmed_at = float("-inf")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        try:  # where the feed is before the first get (else the follower starts it, dropping
            start: int | None = self._start()  # what was read meanwhile)
        except Exception:
            logger.warning("config cache: the change feed cannot be read", exc_info=True)
            start = None
        self._follower = threading.Thread(
            target=self._follow, args=(start,), name="acti-store-config-cache", daemon=True
        )
        self._follower.start()

    # -- reading -----------------------------------------------------------------------------------

    def get(self, name: str, label: str | None = None) -> AgentVersion:
        """The version ``label`` points at (None: the current one), at most ``max_staleness``
        seconds old. Raises the store's errors (``AgentNotFoundError``, ``LabelNotFoundError``)."""
        entry = self._pointers.get((name, label))
        if entry is not None:
            found, fresh_at = entry
            if time.monotonic() - max(fresh_at, self._confirmed_at) <= self._max_staleness:
                return found
        generation = self._generation(name)
        fresh_at = time.monotonic()
        version = self._repo.get_version(name, label=label)
        return self._keep(name, label, version, fresh_at, generation)

    async def aget(self, name: str, label: str | None = None) -> AgentVersion:
        """``get`` for an event loop: a hit answers at once, a miss reads through the store's
        async API (``aget_version``)."""
        entry = self._pointers.get((name, label))
        if entry is not None:
            found, fresh_at = entry
            if time.monotonic() - max(fresh_at, self._confirmed_at) <= self._max_staleness:
                return found
        generation = self._generation(name)
        fresh_at = time.monotonic()
        version = await self._repo.aget_version(name, label=label)
        return self._keep(name, label, version, fresh_at, generation)

    def _generation(self, name: str) -> tuple[int, int]:
        with self._lock:
            return self._resets, self._generations.get(name, 0)

    def _keep(
        self,
        name: str,
        label: str | None,
        version: AgentVersion,
        fresh_at: float,
        generation: tuple[int, int],
    ) -> AgentVersion:
        """``version``, as the kept object when they are equal, remembered unless the follower
        dropped ``name``'s pointers while it was read."""
        with self._lock:
            kept = self._versions.setdefault(name, {})
            known = kept.get(version.version)
            if known is not None and known == version:
                version = known
            else:
                kept[version.version] = version
            if generation == (self._resets, self._generations.get(name, 0)):
                self._pointers[(name, label)] = (version, fresh_at)
                self._labels.setdefault(name, set()).add(label)
        return version

    # -- following the change feed ---------------------------------------------------------------

    def _follow(self, position: int | None) -> None:
        """The follower thread, from ``position`` (None: from now): catch up (which confirms),
        then watch until the next confirmation is due; again until ``close``."""
        failing = False
        while not self._stop.is_set():
            try:
                if position is None:
                    position = self._start()
                position = self._catch_up(position)
                failing = False
                position = self._watch(position)
            except ChangesExpiredError:
                position = None  # changes it had not read were pruned: start again from now
            except Exception:  # the feed is down: pointers age out meanwhile, gets read the store
                if not failing:
                    logger.warning("config cache: the change feed failed", exc_info=True)
                failing = True
                self._stop.wait(self._interval)

    def _watch(self, position: int) -> int:
        """Apply changes as they commit until a confirmation is due (or ``close``); the
        position reached."""
        watch = self._repo.watch(after=position, timeout=min(self._interval, WATCH_SLICE))
        try:
            for change in watch:
                self._apply([change])
                position = change.seq
                if self._stop.is_set() or time.monotonic() - self._confirmed_at >= self._interval:
                    break
        finally:
            close = getattr(watch, "close", None)
            if close is not None:
                close()
        return position

    def _start(self) -> int:
        """Start following from now: every pointer kept so far is dropped (the changes before
        now are not read), and everything before now counts as applied."""
        started = time.monotonic()
        position = self._repo.last_change()
        with self._lock:
            self._resets += 1
            self._pointers.clear()
            self._labels.clear()
            self._confirmed_at = started
        return position

    def _catch_up(self, position: int) -> int:
        """Apply every change after ``position``; then every change committed before this
        call began is applied: confirmed."""
        started = time.monotonic()
        while True:
            changes = self._repo.changes(after=position, limit=CATCH_UP_PAGE)
            self._apply(changes)
            if changes:
                position = changes[-1].seq
            if len(changes) < CATCH_UP_PAGE:
                break
        self._confirmed_at = started
        return position

    def _apply(self, changes: Iterable[Change]) -> None:
        """Drop the pointers of each agent ``changes`` name (and a deleted agent's versions)."""
        with self._lock:
            for change in changes:
                name = change.agent
                self._generations[name] = self._generations.get(name, 0) + 1
                for label in self._labels.pop(name, ()):
                    self._pointers.pop((name, label), None)
                if change.kind == "deleted":
                    self._versions.pop(name, None)

    # -- closing -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the follower (gets go on, reading the store once pointers age out)."""
        self._stop.set()
        if self._follower.is_alive() and self._follower is not threading.current_thread():
            self._follower.join(CLOSE_WAIT)

    def __enter__(self) -> ConfigCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
