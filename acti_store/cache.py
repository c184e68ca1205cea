"""``ConfigCache``: the configuration an agent's label (or its current version) points at, read
from memory and never staler than ``max_staleness`` seconds.

Two maps. Versions are immutable, so ``(name, version) -> AgentVersion`` is kept for good (an
agent's entries go when a ``deleted`` change for it arrives: the name can be reused).
Pointers ``(name, label | None) -> weights`` (one version at 100, or a split label's shares,
from which ``routing.pick`` sends each key to its version) are what changes: two daemon threads
follow the store's change feed and drop the pointers of every agent a change names, whichever
process made it. The watcher applies changes as they commit (``repo.watch``: PostgreSQL's LISTEN,
SQLite's data version, a poll on MariaDB), on one connection for as long as it watches. The
confirmer,
every ``max_staleness / 2`` seconds, applies whatever the watcher has not yet
(``repo.changes`` after the position; nothing, normally) and so confirms that every change
committed before it began is applied.

The guarantee holds with the feed down too: a pointer is trusted only while it was read from
the store, or confirmed, less than ``max_staleness`` seconds ago. When the confirmer cannot
read the store (or the feed is broken), pointers age out and ``get`` reads the store again,
raising the store's own errors (``AgentNotFoundError``, ``LabelNotFoundError``...).

A hit is two dict lookups, a tuple unpack and ``time.monotonic()`` (and a hash of the key on
a split label): no lock. The threads and a
miss's write-back take a lock; a pointer read while the threads dropped that agent's pointers
is not kept (a generation per agent, and one for every restart from the newest change).

``AgentVersion.labels`` (the labels pointing at a version) is as fresh as the pointer that served
it: a version read again that differs replaces the kept one, an equal one keeps the kept object.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Final

from .errors import AgentStoreError, ChangesExpiredError
from .routing import pick
from .validation import seconds

if TYPE_CHECKING:
    from .changes import Change
    from .repository import AgentRepository
    from .versioning import AgentVersion

logger = logging.getLogger(__name__)

#: The largest ``max_staleness`` (seconds): a day.
MAX_STALENESS_MAX: Final = 86_400.0
#: Changes read at a time when the follower catches up.
CATCH_UP_PAGE: Final = 500
#: The longest a watch goes on with nothing new before the watcher looks at ``close``: each
#: watch holds a connection of its own (PostgreSQL's LISTEN...), so not much shorter.
WATCH_SLICE: Final = 5.0
#: The watcher's pause after a failed watch, seconds.
RETRY: Final = 1.0
#: How long ``close`` waits for the confirmer to stop, at most (both threads are daemons).
CLOSE_WAIT: Final = 5.0

_Key = tuple[str, str | None]


class ConfigCache:
    """The ``AgentVersion`` each ``(name, label)`` points at (label None: the agent's current
    version), from memory while the change feed says it is unchanged, never older than
    ``max_staleness`` seconds. Use it as a context manager, or ``close()`` it."""

    def __init__(self, repo: AgentRepository, max_staleness: float = 1.0) -> None:
        self._repo = repo
        self._max_staleness = seconds(max_staleness, "max_staleness", MAX_STALENESS_MAX)
        #: How often the follower confirms, at least (half the staleness allowed).
        self._interval = self._max_staleness / 2
        #: Where each pointer sends its traffic: ``{version: 100}``, or a split's weights.
        self._pointers: dict[_Key, tuple[dict[int, int], float]] = {}
        self._labels: dict[str, set[str | None]] = {}  # the pointer keys held, by agent
        self._versions: dict[str, dict[int, AgentVersion]] = {}
        self._generations: dict[str, int] = {}
        self._resets = 0
        #: Every change committed before this instant (``time.monotonic``) has been applied.
        self._confirmed_at = float("-inf")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        #: The newest change applied (None: not known; the next ``_start`` finds it).
        self._position: int | None = None
        # Where the feed is, before the first get (a start later drops what was read before).
        with contextlib.suppress(AgentStoreError):
            self._start()
        self._threads = [
            threading.Thread(target=work, name=f"acti-store-config-cache-{role}", daemon=True)
            for role, work in (("watch", self._watch), ("confirm", self._confirm))
        ]
        for thread in self._threads:
            thread.start()

    # -- reading -----------------------------------------------------------------------------------

    def get(self, name: str, label: str | None = None, key: str | None = None) -> AgentVersion:
        """The version ``label`` sends ``key`` to (``resolve``: sticky per key on a split
        label, a draw by weight without a key; label None: the current version), at most
        ``max_staleness`` seconds old. Raises the store's errors (``AgentNotFoundError``,
        ``LabelNotFoundError``)."""
        found = self._hit(name, label, key)
        if found is not None:
            return found
        generation = self._generation(name)
        fresh_at = time.monotonic()
        if label is None:
            current = self._repo.get_version(name)
            return self._keep(name, label, {current.version: 100}, current, fresh_at, generation)
        weights = self._repo.label_weights(name).get(label)
        if weights is None:
            self._repo.get_version(name, label=label)  # raises LabelNotFoundError
            raise AssertionError("unreachable: the label is not set")  # pragma: no cover
        version = self._repo.get_version(name, pick(weights, name, label, key))
        return self._keep(name, label, weights, version, fresh_at, generation)

    async def aget(
        self, name: str, label: str | None = None, key: str | None = None
    ) -> AgentVersion:
        """``get`` for an event loop: a hit answers at once, a miss reads through the store's
        async API (``aget_version``, ``alabel_weights``)."""
        found = self._hit(name, label, key)
        if found is not None:
            return found
        generation = self._generation(name)
        fresh_at = time.monotonic()
        if label is None:
            current = await self._repo.aget_version(name)
            return self._keep(name, label, {current.version: 100}, current, fresh_at, generation)
        weights = (await self._repo.alabel_weights(name)).get(label)
        if weights is None:
            await self._repo.aget_version(name, label=label)  # raises LabelNotFoundError
            raise AssertionError("unreachable: the label is not set")  # pragma: no cover
        version = await self._repo.aget_version(name, pick(weights, name, label, key))
        return self._keep(name, label, weights, version, fresh_at, generation)

    def _hit(self, name: str, label: str | None, key: str | None) -> AgentVersion | None:
        """The kept version ``(name, label)`` sends ``key`` to while the pointer is fresh
        enough, else None."""
        entry = self._pointers.get((name, label))
        if entry is None:
            return None
        weights, fresh_at = entry
        if time.monotonic() - max(fresh_at, self._confirmed_at) > self._max_staleness:
            return None
        single = len(weights) == 1
        number = next(iter(weights)) if single else pick(weights, name, label or "", key)
        return self._versions.get(name, {}).get(number)

    def _generation(self, name: str) -> tuple[int, int]:
        with self._lock:
            return self._resets, self._generations.get(name, 0)

    def _keep(
        self,
        name: str,
        label: str | None,
        weights: dict[int, int],
        version: AgentVersion,
        fresh_at: float,
        generation: tuple[int, int],
    ) -> AgentVersion:
        """``version``, as the kept object when they are equal; the pointer to ``weights``
        remembered unless the follower dropped ``name``'s pointers while it was read."""
        with self._lock:
            kept = self._versions.setdefault(name, {})
            known = kept.get(version.version)
            if known is not None and known == version:
                version = known
            else:
                kept[version.version] = version
            if generation == (self._resets, self._generations.get(name, 0)):
                self._pointers[(name, label)] = (weights, fresh_at)
                self._labels.setdefault(name, set()).add(label)
        return version

    # -- following the change feed ---------------------------------------------------------------

    def _watch(self) -> None:
        """The watcher thread: apply changes as they commit (``repo.watch``, one connection
        held while it watches), from the position; a watch ends after ``WATCH_SLICE`` seconds
        with nothing new, so that ``close`` is seen."""
        while not self._stop.is_set():
            try:
                position = self._position
                if position is None:
                    position = self._start()
                watch = self._repo.watch(after=position, timeout=WATCH_SLICE)
                try:
                    for change in watch:
                        self._apply([change])
                        if self._stop.is_set():
                            break
                finally:
                    close = getattr(watch, "close", None)
                    if close is not None:
                        close()
            except ChangesExpiredError:  # changes it had not read were pruned
                self._position = None
            except Exception:  # the confirmer keeps pointers honest meanwhile
                if not self._stop.is_set():
                    logger.debug("config cache: the watch failed", exc_info=True)
                self._stop.wait(RETRY)

    def _confirm(self) -> None:
        """The confirmer thread: every ``max_staleness / 2`` seconds, apply whatever the
        watcher has not (``_catch_up``), which confirms; when the store cannot be read,
        confirmations stop and pointers age out."""
        failing = False
        while True:
            try:
                if self._position is None:
                    self._start()
                self._catch_up()
                failing = False
                wait = max(0.0, self._interval - (time.monotonic() - self._confirmed_at))
            except ChangesExpiredError:  # changes it had not read were pruned: from now
                self._position, wait = None, 0.0
            except Exception:  # the feed is down: gets read the store once pointers age out
                if not failing:
                    logger.warning("config cache: the change feed failed", exc_info=True)
                failing, wait = True, self._interval
            if self._stop.wait(wait):
                return

    def _start(self) -> int:
        """Follow from now: every pointer kept so far is dropped (the changes before now are not
        read), and everything committed before now counts as applied."""
        started = time.monotonic()
        position = self._repo.last_change()
        with self._lock:
            self._resets += 1
            self._pointers.clear()
            self._labels.clear()
            self._position = position
            self._confirmed_at = started
        return position

    def _catch_up(self) -> None:
        """Apply every change after the position: then every change committed before this call
        began is applied (confirmed)."""
        started = time.monotonic()
        while True:
            position = self._position
            if position is None:
                return  # the watcher found the feed pruned: ``_start`` again
            changes = self._repo.changes(after=position, limit=CATCH_UP_PAGE)
            self._apply(changes)
            if len(changes) < CATCH_UP_PAGE:
                break
        self._confirmed_at = started

    def _apply(self, changes: Sequence[Change]) -> None:
        """Drop the pointers of each agent ``changes`` name (and a deleted agent's versions),
        and move the position past them (the watcher and the confirmer may both apply one)."""
        if not changes:
            return
        with self._lock:
            for change in changes:
                name = change.agent
                self._generations[name] = self._generations.get(name, 0) + 1
                for label in self._labels.pop(name, ()):
                    self._pointers.pop((name, label), None)
                if change.kind == "deleted":
                    self._versions.pop(name, None)
            if self._position is not None:
                self._position = max(self._position, changes[-1].seq)

    # -- closing -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop following the feed: the confirmer at once, the watcher once its watch ends
        (``WATCH_SLICE`` at most; not waited for). Gets go on, reading the store once pointers
        age out."""
        self._stop.set()
        confirmer = self._threads[1]
        if confirmer is not threading.current_thread():
            confirmer.join(CLOSE_WAIT)

    def __enter__(self) -> ConfigCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
