"""Connections for the fast path (``sqlexec``): one per operation from the engine's pool, or,
for a SQLite file, the driver's own connections kept by the store and reused.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Final

from sqlalchemy import Engine
from sqlalchemy.pool import QueuePool

from .engine_registry import find_engine

#: Set in a pooled connection's ``info`` when the repository gives it back with its transaction
#: ended (committed or rolled back): an engine whose pool would roll it back again, at the cost
#: of a round trip, may skip that (``engines.mariadb.connection.reset``). Taken out by the
#: reset, so a connection the host checks out itself (``repo.engine``) is rolled back as usual.
ENDED: Final = "acti_store.transaction_ended"


class PooledConnections:
    """A connection from the engine's pool per operation (PostgreSQL, MariaDB, in-memory
    SQLite)."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def take(self) -> Any:
        return self._engine.raw_connection()

    def give(self, connection: Any) -> None:
        """Give back ``connection``, its transaction ended (committed or rolled back)."""
        connection.info[ENDED] = True
        connection.close()  # back to the pool

    def discard(self, connection: Any) -> None:
        connection.invalidate()

    def close(self) -> None:
        self._engine.dispose()


#: Idle connections a ``KeptConnections`` holds on to; more are closed when given back.
KEPT_IDLE_MAX: Final = 8


class KeptConnections:
    """SQLite file connections, kept and reused last in, first out, without a pool round trip.

    A connection is made by the engine's pool (so it gets the store's connection policy), then
    detached from it and kept here: one per operation running at once, at most ``KEPT_IDLE_MAX``
    idle. The pool's checkout and check-in cost more than a primary-key read on SQLite; taking a
    connection here is a ``list.pop``. After ``os.fork`` the child drops the parent's
    connections (SQLite connections must not cross a fork) and makes its own.
    """

    __slots__ = ("__weakref__", "_engine", "_idle")

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._idle: list[Any] = []
        _KEPT.add(self)

    def take(self) -> Any:
        try:
            return self._idle.pop()
        except IndexError:
            fairy = self._engine.raw_connection()
            fairy.detach()
            return fairy.dbapi_connection

    def give(self, connection: Any) -> None:
        if len(self._idle) < KEPT_IDLE_MAX:
            self._idle.append(connection)
        else:
            connection.close()

    def discard(self, connection: Any) -> None:
        connection.close()

    @property
    def idle_count(self) -> int:
        """How many connections are kept idle, ready for the next operation."""
        return len(self._idle)

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()
        self._engine.dispose()

    def _forget(self) -> None:
        self._idle = []


_KEPT: weakref.WeakSet[KeptConnections] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for kept in list(_KEPT):
        kept._forget()


os.register_at_fork(after_in_child=_after_fork_in_child)


Connections = PooledConnections | KeptConnections


def roll_back(connections: Connections, connection: Any, *, autocommit: bool = False) -> None:
    """Roll back after a failure (or a read) and give the connection back; one that cannot even
    do that is closed, not reused. ``autocommit``: the driver connection was put in autocommit
    for this use; it leaves it first."""
    try:
        connection.rollback()
        if autocommit:
            connection.dbapi_connection.autocommit = False
    except Exception:
        connections.discard(connection)
    else:
        connections.give(connection)


def connections_for(engine: Engine) -> Connections:
    """Kept connections for an engine that keeps them (SQLite's file, when its engine has a
    ``QueuePool``), else the pool."""
    entry = find_engine(engine.dialect.name)
    if entry is not None and entry.kept_connections and isinstance(engine.pool, QueuePool):
        return KeptConnections(engine)
    return PooledConnections(engine)
