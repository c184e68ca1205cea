"""Read replicas: a store's reads sent to streaming standbys of its PostgreSQL server, its
writes (and what a write reads) to the primary.

A store reads its own writes: after a write commits, the store keeps the primary's WAL position
right after that commit (``EngineStrategy.commit_position``, sent in the commit's round trip),
and its next read goes to a replica only once that replica has replayed up to it
(``EngineStrategy.replay_position``), waiting at most ``max_replica_lag`` seconds; else it reads
the primary. What a read was known to see raises the same mark (``ReadRouter.floor``), so one
store's reads never go back in time, whichever server answers. A replica that fails, or does
not catch up in time, is skipped for ``REPLICA_RETRY`` seconds, then tried again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy import Engine

from ..connections import PooledConnections
from ..engine import store_location
from ..sqlexec import Cursor, Prepared
from .strategy import EngineStrategy

logger = logging.getLogger(__name__)

#: Seconds a replica that failed or fell behind is left out before it is tried again.
REPLICA_RETRY: Final = 5.0
#: The first and the longest pause between two looks at a replica catching up (seconds).
CATCH_UP_FIRST: Final = 0.001
CATCH_UP_LONGEST: Final = 0.05


@dataclass
class Replica:
    """A standby the store reads from: its engine (read-only, the store's schema and pooler),
    connections and strategy, the newest replay position read from it, and until when it is
    left out."""

    engine: Engine
    kind: EngineStrategy
    connections: PooledConnections = field(init=False)
    seen: int = -1
    skip_until: float = 0.0

    def __post_init__(self) -> None:
        self.connections = PooledConnections(self.engine)

    @property
    def location(self) -> str:
        return store_location(self.engine.url)


#: ``run``: a read of one statement on a replica's (or the primary's) connections, as the store
#: runs its reads (``core.StoreCore``); returns the position it read.
Position = Callable[[PooledConnections | None, EngineStrategy | None, Prepared], int]


class ReadRouter:
    """Which server a store's next read goes to (module docstring). Thread-safe: a store is used
    from several threads (the async API's, a host's)."""

    def __init__(self, replicas: Sequence[Replica], max_lag: float, position: Position) -> None:
        self.replicas = list(replicas)
        self.max_lag = max_lag
        self._position = position
        self._lock = threading.Lock()
        #: The position every read of this store must see at least.
        self.floor = 0

    def raise_floor(self, position: int) -> None:
        """A write committed, or a read saw, up to ``position``."""
        with self._lock:
            self.floor = max(self.floor, position)

    def choose(self) -> Replica | None:
        """The replica the next read goes to, caught up with ``floor``; None: the primary."""
        needed = self.floor
        for replica in self.replicas:
            if replica.skip_until > time.monotonic():
                continue
            if replica.seen >= needed or self._catch_up(replica, needed):
                return replica
            self.leave_out(
                replica, f"it has not replayed the store's last commit in {self.max_lag:g} s"
            )
        return None

    def leave_out(self, replica: Replica, why: str) -> None:
        """Skip ``replica`` for ``REPLICA_RETRY`` seconds."""
        replica.skip_until = time.monotonic() + REPLICA_RETRY
        logger.warning(
            "reads go to the primary for %g s: the replica %s %s",
            REPLICA_RETRY,
            replica.location,
            why,
        )

    def _catch_up(self, replica: Replica, needed: int) -> bool:
        """Whether ``replica`` replays up to ``needed`` within ``max_lag`` seconds (looking at
        its position with growing pauses); a replica that fails is left out."""
        deadline = time.monotonic() + self.max_lag
        pause = CATCH_UP_FIRST
        while True:
            try:
                seen = self._position(replica.connections, replica.kind, _replay(replica.kind))
            except Exception as exc:  # down, restarting, unreachable: the primary answers
                self.leave_out(replica, f"failed: {str(exc).strip().splitlines()[0][:200]}")
                return False
            replica.seen = max(replica.seen, seen)
            if replica.seen >= needed:
                return True
            if time.monotonic() + pause > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, CATCH_UP_LONGEST)

    def close(self) -> None:
        for replica in self.replicas:
            replica.connections.close()


def _replay(kind: EngineStrategy) -> Prepared:
    statement = kind.replay_position
    assert statement is not None  # replicas are made only for an engine that has one
    return statement


def position_of(cursor: Cursor, statement: Prepared) -> int:
    """The WAL position ``statement`` reads (0 when the server has none to give)."""
    row = cursor.first(statement)
    return int(row[0]) if row is not None and row[0] is not None else 0
