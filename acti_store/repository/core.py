"""What every role of the repository shares: one store's engine, its strategy and connections,
its clock and mirror, and the one way each role reads and writes.

A role (``agents``, ``runs``, ``versions``, ``searching``, ``bulk``) holds its statements and its
methods and is given this core; ``sql.SqlAgentRepository`` assembles the roles into the port.
A read is one transaction, its driver errors translated (``dberrors``); a write is one
transaction retried on lock or serialization conflicts until the lock timeout (``deadline``).
What differs between engines is asked of the strategy (``engines``), never of the engine's name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, TypeVar

from sqlalchemy import Engine

from ..connections import Connections, connections_for
from ..dberrors import translated
from ..engine import store_location
from ..errors import (
    AgentNotFoundError,
    AgentStoreError,
    InvalidInputError,
    ReadOnlyStoreError,
    StoreUnavailableError,
    StoreUrlError,
)
from ..models import NAIVE_DATETIME_RULE, utc_now
from ..sqlexec import Answer, Cursor, Prepared
from ..tenancy import DEFAULT_TENANT
from .arguments import require_storable
from .deadline import within_deadline
from .feed import prune
from .port import Clock, Mirror, RepositoryPort
from .replicas import ReadRouter, Replica, position_of
from .statements import GET, GET_FOR_UPDATE
from .strategy import Begin, EngineStrategy, strategy_for
from .transaction import run_transaction

T = TypeVar("T")

logger = logging.getLogger(__name__)
#: The longest a store waits between two prunes of the change feed (``StoreCore.prune_due``).
PRUNE_EVERY_MAX: Final = 60.0
#: How long a read after a write waits for a replica to replay it before it reads the primary
#: (seconds): ``open_repository(max_replica_lag=...)``.
MAX_REPLICA_LAG: Final = 1.0
#: Agents a store creates one by one between two looks at the engine's statistics
#: (``StoreCore.grew``).
GROWTH_CHECK_EVERY: Final = 1_000


@dataclass(frozen=True)
class Waits:
    """How the sync code waits: ``DIRECT`` blocks its thread; the async layer's
    ``asynchronous.loop_waits`` yield to the loop."""

    #: Pause between two attempts of a write (``deadline.within_deadline``).
    sleep: Callable[[float], None]
    #: Bring the mirror's files up to date after a write (``Mirror.sync``).
    sync_mirror: Callable[[Mirror, RepositoryPort, Iterable[str]], None]


def _sync_mirror(mirror: Mirror, repository: RepositoryPort, names: Iterable[str]) -> None:
    mirror.sync(repository, names)


#: A sync caller's waits: on its own thread.
DIRECT: Final = Waits(sleep=time.sleep, sync_mirror=_sync_mirror)


def agent_row(cursor: Cursor, name: str, *, for_update: bool = False) -> Sequence[Any]:
    """The row of the agent ``name`` (locked for the transaction with ``for_update``), or
    ``AgentNotFoundError``: the one rule by which every role finds an agent."""
    require_storable(name)
    row = cursor.first(GET_FOR_UPDATE if for_update else GET, {"name": name})
    if row is None:
        raise AgentNotFoundError(name)
    return row


class StoreCore:
    """One store's engine and what its roles share. ``store`` is the repository the mirror
    reads after a write (set by the repository that assembles the roles)."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock | None,
        mirror: Mirror | None,
        read_only: bool,
        lock_timeout: float,
        keep_versions: int | None,
        waits: Waits,
        tenant: str = DEFAULT_TENANT,
        keep_changes: timedelta | None = None,
        replicas: Sequence[Engine] = (),
        max_replica_lag: float = MAX_REPLICA_LAG,
        create_tenant: bool | None = None,
    ) -> None:
        self.engine = engine
        #: The tenant whose rows this store sees and touches (``tenancy``).
        self.tenant = tenant
        #: Whether a write for an unregistered tenant registers it (None: the store's recorded
        #: mode, read at the first such write: ``tenant_admin.admit``).
        self.create_tenant = create_tenant
        # What differs between engines; an engine the repository does not run on is refused.
        self.kind = strategy_for(engine.dialect.name).for_engine(engine)
        self.keep_versions = keep_versions  # snapshots kept besides current and labelled ones
        #: How long the change feed keeps a change (None: for good); pruned after writes, at
        #: most every ``PRUNE_EVERY`` of it (``prune_due``).
        self.keep_changes = keep_changes
        #: When the feed is pruned next, on the store's clock (None: at the next write).
        self._next_prune: datetime | None = None
        self._created = 0  # agents created one by one since ``grew`` last looked
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self.connections = connections_for(engine)
        self.dialect = engine.dialect
        self.dbapi = engine.dialect.loaded_dbapi
        self.clock: Clock = clock or utc_now
        self.mirror = mirror
        self.waits = waits
        self.store: RepositoryPort | None = None
        #: Where reads go when the store has read replicas (``replicas``); None: the primary.
        self.router: ReadRouter | None = None
        if replicas:
            if self.kind.replay_position is None:
                raise StoreUrlError(
                    f"read replicas are for PostgreSQL stores, not {self.kind.name}"
                )
            made = [Replica(r, strategy_for(r.dialect.name).for_engine(r)) for r in replicas]
            self.router = ReadRouter(made, max_replica_lag, self._position)

    @property
    def location(self) -> str:
        return store_location(self.engine.url)

    def now(self) -> datetime:
        value = self.clock()
        if value.tzinfo is None:  # it would be stored as UTC, hours off in most time zones
            raise InvalidInputError("clock", [("the time it returned", NAIVE_DATETIME_RULE)])
        return value

    def close(self) -> None:
        self.connections.close()
        if self.router is not None:
            self.router.close()

    def run(
        self,
        work: Callable[[Cursor], T],
        *,
        begin: Begin,
        lock_wait: float | None = None,
        autocommit: bool = False,
        pipelined: bool = True,
        tenant: str | None = None,
        replica: Replica | None = None,
        after_commit: tuple[Prepared, Callable[[Answer], None]] | None = None,
    ) -> T:
        """``work`` in one transaction on the primary (or on ``replica``)."""
        return run_transaction(
            self.connections if replica is None else replica.connections,
            self.dialect,
            work,
            engine=self.kind if replica is None else replica.kind,
            begin=begin,
            lock_wait=lock_wait,
            lock_timeout=self.lock_timeout,
            autocommit=autocommit,
            pipelined=pipelined,
            tenant=self.tenant if tenant is None else tenant,
            after_commit=after_commit,
        )

    def _position(
        self, connections: Connections | None, kind: EngineStrategy | None, statement: Prepared
    ) -> int:
        """The WAL position ``statement`` reads, on ``connections`` (None: the primary's)."""
        kind = kind or self.kind
        return run_transaction(
            connections or self.connections,
            self.dialect,
            lambda cursor: position_of(cursor, statement),
            engine=kind,
            begin=kind.read_begin(False),
            lock_wait=None,
            lock_timeout=self.lock_timeout,
            autocommit=kind.reads_in_autocommit,
            tenant=self.tenant,
        )

    def _committed(self, answer: Answer) -> None:
        if self.router is not None and answer.rows:
            self.router.raise_floor(int(answer.rows[0][0]))

    def read(
        self, work: Callable[[Cursor], T], *, snapshot: bool = False, tenant: str | None = None
    ) -> T:
        """``work`` in one read transaction (one snapshot with ``snapshot``), as the store's
        tenant (or as ``tenant``)."""
        if self.router is not None:
            return self._read_replicated(self.router, work, snapshot, tenant)
        kind = self.kind
        try:
            return self.run(
                work,
                begin=kind.read_begin(snapshot),
                autocommit=kind.reads_in_autocommit,
                tenant=tenant,
            )
        except Exception as exc:  # not translate_errors: a context manager costs on every read
            error = translated(exc, self.dbapi)
            if error is None:
                raise
            raise error from exc

    def reader(self) -> tuple[Connections, EngineStrategy]:
        """The connections and strategy a long read (an export's snapshot) runs on: a replica
        caught up with the store's writes and reads (``replicas``), else the primary."""
        replica = None if self.router is None else self.router.choose()
        if replica is None:
            return self.connections, self.kind
        return replica.connections, replica.kind

    def _read_replicated(
        self, router: ReadRouter, work: Callable[[Cursor], T], snapshot: bool, tenant: str | None
    ) -> T:
        """A read on a replica caught up with what the store wrote and read (``replicas``);
        on the primary when none is, or when the replica fails it (the primary's position
        after it then becomes the least the next read sees)."""
        replica = router.choose()
        try:
            if replica is not None:
                try:
                    kind = replica.kind
                    return self.run(
                        work,
                        begin=kind.read_begin(snapshot),
                        autocommit=kind.reads_in_autocommit,
                        tenant=tenant,
                        replica=replica,
                    )
                except Exception as exc:
                    error = translated(exc, self.dbapi)
                    if not isinstance(error, StoreUnavailableError):
                        raise
                    router.leave_out(replica, f"failed a read: {error}")
            kind = self.kind
            result = self.run(
                work,
                begin=kind.read_begin(snapshot),
                autocommit=kind.reads_in_autocommit,
                tenant=tenant,
            )
            if kind.commit_position is not None:
                router.raise_floor(self._position(None, None, kind.commit_position))
            return result
        except Exception as exc:
            error = translated(exc, self.dbapi)
            if error is None:
                raise
            raise error from exc

    def write(
        self,
        work: Callable[[Cursor], T],
        *,
        name: str | None = None,
        pipelined: bool = True,
        then: Callable[[T], None] | None = None,
        tenant: str | None = None,
    ) -> T:
        """Run ``work`` in one write transaction (as the store's tenant, or as ``tenant``); retry
        on lock or serialization conflicts until the lock timeout (``deadline.within_deadline``);
        ``pipelined``: ``run_transaction``.
        ``then`` checks each attempt's result once its transaction is over; it raises
        ``TryAgain`` for another attempt within the same deadline.
        """
        if self.read_only:
            raise ReadOnlyStoreError.opened_read_only(self.location)

        def attempt(wait: float | None) -> T:
            if wait is None:
                wait = self.kind.first_lock_wait(self.lock_timeout)
            begin = self.kind.begin_write
            position = self.kind.commit_position
            after = None if self.router is None or position is None else (position, self._committed)
            result = self.run(
                work,
                begin=begin,
                lock_wait=wait,
                pipelined=pipelined,
                tenant=tenant,
                after_commit=after,
            )
            if then is not None:
                then(result)
            return result

        result = within_deadline(
            attempt,
            lock_timeout=self.lock_timeout,
            dbapi=self.dbapi,
            name=name,
            sleep=self.waits.sleep,
        )
        if self.keep_changes is not None:
            self.prune_due()
        return result

    def prune_due(self) -> None:
        """Prune the changes older than ``keep_changes``, if this store has not for a while
        (a tenth of it, at most a minute, on the store's clock, the one that dates the changes):
        in a transaction of its own, after the write's. A failure is left for the next time:
        the write it follows has committed."""
        keep = self.keep_changes
        if keep is None:
            return
        now = self.now()
        if self._next_prune is not None and now < self._next_prune:
            return
        self._next_prune = now + min(keep / 10, timedelta(seconds=PRUNE_EVERY_MAX))
        before = now - keep
        try:
            feed = self.kind.feed_statements()
            self.write(lambda cursor: prune(cursor, before, feed))
        except AgentStoreError:
            self._next_prune = None
            logger.warning("could not prune the change feed", exc_info=True)

    def grew(self) -> None:
        """After a committed write that created one agent: every ``GROWTH_CHECK_EVERY`` of
        them, the engine's look at its statistics (``EngineStrategy.after_growth``), so that a
        store filled by creates plans its searches on statistics of its size, as an imported
        one does."""
        self._created += 1
        if self._created >= GROWTH_CHECK_EVERY:
            created, self._created = self._created, 0
            self.kind.after_growth(self.engine, created)

    def notify(self, *names: str) -> None:
        """After a committed write: the mirror's files of ``names`` brought up to date."""
        if self.mirror is not None and self.store is not None:
            self.waits.sync_mirror(self.mirror, self.store, names)


class Role:
    """A part of the repository, given the store's core: its reads, writes and clock."""

    def __init__(self, core: StoreCore) -> None:
        self._core = core
        # Bound once: these run on every call of every method.
        self._read = core.read
        self._write = core.write
        self._notify = core.notify
        self.now = core.now
