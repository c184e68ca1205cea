"""One deadline for a write: its lock waits and its retries together end after ``lock_timeout``.

A write waits for a lock another writer holds (SQLite's busy timeout, PostgreSQL's
``lock_timeout``) and is tried again after a lock timeout, a serialization failure or a deadlock.
Each attempt may wait only for the time left, and no attempt starts after the deadline, so a call
fails within ``lock_timeout`` (plus the time its last statement takes), never ``attempts x
timeout``. Every retry loop of the store goes through ``within_deadline``: an attempt that finds
the store changed under it raises ``TryAgain`` rather than looping on its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar

from ..dberrors import is_lock_wait, is_retryable, locked_out, translated
from ..errors import StoreUnavailableError

T = TypeVar("T")


class TryAgain(Exception):
    """Raised by an attempt that found the store changed under it (nothing written): the write
    is tried again like one that met a lock, within the same deadline; past it, ``error``."""

    def __init__(self, error: StoreUnavailableError) -> None:
        super().__init__(str(error))
        self.error = error


#: First pause between two attempts (seconds); it doubles up to ``RETRY_PAUSE_MAX``.
RETRY_PAUSE: Final = 0.01
RETRY_PAUSE_MAX: Final = 0.5


def within_deadline(
    attempt: Callable[[float | None], T],
    *,
    lock_timeout: float,
    dbapi: Any,
    name: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``attempt(lock_wait)`` until it succeeds, fails for good, or the deadline passes.

    ``lock_wait`` is None for the first attempt (the connection's own wait: the whole
    ``lock_timeout``), else the seconds left. Driver errors come out translated
    (``acti_store.dberrors``); a lock that never came free is reported as such, with the time
    waited. ``sleep`` pauses between attempts (a coroutine's yields to its loop instead).
    """
    start = time.monotonic()
    deadline = start + lock_timeout
    schedule = pauses(deadline)
    lock_wait: float | None = None
    while True:
        try:
            return attempt(lock_wait)
        except TryAgain as again:
            pause = next(schedule, None)
            if pause is None:
                raise again.error from None
        except Exception as exc:
            error = translated(exc, dbapi, name)
            if error is None:
                raise
            if not isinstance(error, StoreUnavailableError) or not is_retryable(exc):
                raise error from exc
            pause = next(schedule, None)
            if pause is None:
                waited = time.monotonic() - start
                raise (locked_out(waited) if is_lock_wait(exc) else error) from exc
        sleep(pause)
        lock_wait = deadline - time.monotonic()


def pauses(deadline: float) -> Iterator[float]:
    """The pauses between the attempts of one call: ``RETRY_PAUSE`` doubling up to
    ``RETRY_PAUSE_MAX``, each asked for when it is due, until ``deadline`` (a
    ``time.monotonic()`` reading); the last one is cut to end at it, so the last attempt is
    made at the deadline (a lock wait in whole seconds, MariaDB's, cannot wait out the rest)."""
    pause = RETRY_PAUSE
    while (left := deadline - time.monotonic()) > 0:
        yield min(pause, left)
        pause = min(pause * 2, RETRY_PAUSE_MAX)
