"""How a watcher of the change feed learns that a change may have committed, without reading
the feed while nothing changes (``roles.changes``: ``watch``, ``awatch``).

A ``ChangeSignal`` holds a connection of its own, outside the store's pool: ``arm`` before the
watcher reads the feed, ``wait`` after it has read everything, returning once a change may have
committed since ``arm`` (or at the timeout). A signal that wakes for nothing only costs a read.
The engines' own signals (PostgreSQL's LISTEN, SQLite's data version) are in their modules; this
is the one every engine can use: the tenant's counter row read by its key, every ``interval``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import CodeType
from typing import Any, Final, Protocol, TypeVar

from sqlalchemy import Engine

from ..sqlexec import Cursor
from .feed import LAST_SEQ

F = TypeVar("F", bound=Callable[..., object])

#: The code of the signal waits that an interruption (Ctrl-C, SIGTERM) may end anywhere, the
#: driver's own wait included (``cli.feed.interruptible`` lets a stop land there at once).
INTERRUPTIBLE_WAITS: Final[set[CodeType]] = set()


def interruptible_wait(wait: F) -> F:
    """Mark ``wait`` as one whose driver ends cleanly on ``KeyboardInterrupt`` wherever it
    lands (psycopg's wait for notifications cancels and re-raises)."""
    INTERRUPTIBLE_WAITS.add(wait.__code__)
    return wait


#: How often ``PollingSignal`` reads the counter: commit-to-delivery within that (and a read).
POLL_INTERVAL: Final = 0.05


class ChangeSignal(Protocol):
    def arm(self) -> None:
        """Before a read of the feed: from now on, a committed change wakes ``wait``."""

    def wait(self, timeout: float) -> None:
        """Return once a change may have committed since ``arm``, or after ``timeout`` seconds;
        a lost connection raises the driver's error (the watcher reconnects)."""

    def close(self) -> None: ...


def own_connection(engine: Engine) -> Any:
    """The driver's connection of a connection of ``engine`` (set up as the store's are) that
    its pool forgets: a signal keeps it for as long as it watches, and closes it."""
    connection = engine.raw_connection()
    driver = connection.driver_connection
    connection.detach()
    return driver


class PollingSignal:
    """A cheap read whose answer changes when a change commits (``probe``), asked every
    ``interval`` seconds on ``connection``, which the signal closes (None: the probe reads
    through the store's own connections)."""

    def __init__(self, connection: Any, probe: Callable[[], object], interval: float) -> None:
        self._connection = connection
        self._probe = probe
        self._interval = interval
        self._seen = probe()

    def arm(self) -> None:
        self._seen = self._probe()

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._probe() == self._seen:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(self._interval, left))

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


def counter_signal(engine: Engine, tenant: str) -> PollingSignal:
    """The tenant's newest change number, read by its key every ``POLL_INTERVAL`` on a
    connection in autocommit (each read sees the latest commit): what every engine can do."""
    connection = own_connection(engine)
    if callable(connection.autocommit):  # PyMySQL, mysqlclient
        connection.autocommit(True)
    else:
        connection.autocommit = True
    cursor = Cursor(connection.cursor(), engine.dialect)
    cursor.tenant = tenant
    return PollingSignal(connection, lambda: cursor.first(LAST_SEQ), POLL_INTERVAL)
