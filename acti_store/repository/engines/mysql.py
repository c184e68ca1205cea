"""MariaDB (and MySQL): a store on a server (``mariadb+pymysql://...`` or ``mysql+pymysql://``).

What it does its own way: the session keeps InnoDB's REPEATABLE READ, so a snapshot read (the
export's) is ``START TRANSACTION WITH CONSISTENT SNAPSHOT``, and a write runs at READ COMMITTED
(``SET TRANSACTION`` before it), as on PostgreSQL; the lock wait is the session's
(``innodb_lock_wait_timeout``, whole seconds rounded down, so a wait never outlasts the
deadline: the rest is retried for), set for a write and put back after. Many rows go
in as one multi-row ``VALUES``. An UPDATE returns no rows here, so a run's counters are moved
and the agent's id and version read after, under the row lock the UPDATE took; the version's
counters by ``INSERT ... ON DUPLICATE KEY UPDATE``. A subquery with ``LIMIT`` is not allowed
under ``IN``: the export reads its page's records through a derived table.
Connection policy: ``acti_store.mariadb``; error numbers: ``acti_store.dberrors``.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import Integer, bindparam, case, literal, or_, select, update
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.engine import Dialect

from ... import mariadb
from ...errors import AgentNotFoundError
from ...models import ExecutionRecord
from ...schema import agents, executions, version_stats
from ...sqlexec import Cursor, Prepared
from ..recording import RUN_COUNTERS, TRIM, counter_values
from ..statements import BY_NAME, EXPORT_PAGE, INSERT_EXECUTION, record_values, records_of
from ..version_statements import RUN_TIME, STATS_KEYS
from ..versions import version_that_ran
from .base import EngineStrategy, Read, Write

#: Move an agent's counters for one run (its row count: 0 when there is no such agent).
_MOVE_COUNTERS: Final = Prepared(update(agents).where(BY_NAME).values(RUN_COUNTERS))
#: The agent's id and version, read after ``_MOVE_COUNTERS`` (whose row lock it holds).
_ID_AND_VERSION: Final = Prepared(select(agents.c.id, agents.c.version).where(BY_NAME))


def _count_run() -> Prepared:
    """One run of a version counted, its first inserting the version's row: MariaDB's upsert
    (parameters ``agent_id``, ``version``, ``succeeded``, ``failed``, ``duration``,
    ``timestamp``)."""
    counted = mysql_insert(version_stats).from_select(
        list(STATS_KEYS),
        select(
            bindparam("agent_id", type_=Integer()),
            bindparam("version", type_=version_stats.c.version.type),
            literal(1),
            bindparam("succeeded", type_=Integer()),
            bindparam("failed", type_=Integer()),
            bindparam("duration", type_=version_stats.c.duration_total.type),
            RUN_TIME,
        ),
    )
    stats, ran = version_stats.c, counted.inserted
    last = stats.last_executed_at
    return Prepared(
        counted.on_duplicate_key_update(
            runs=stats.runs + 1,
            successes=stats.successes + ran.successes,
            errors=stats.errors + ran.errors,
            duration_total=stats.duration_total + ran.duration_total,
            last_executed_at=case(
                (or_(last.is_(None), last < ran.last_executed_at), ran.last_executed_at),
                else_=last,
            ),
        )
    )


COUNT_RUN: Final = _count_run()
#: The export's records of a page of agents (``statements.EXPORT_PAGE``), through a derived
#: table: MariaDB refuses ``IN (SELECT ... LIMIT ...)``.
EXPORT_RECORDS_PAGED: Final = records_of(
    executions.c.agent_id.in_(select(EXPORT_PAGE.subquery().c.id))
)


def record_run(cursor: Cursor, name: str, record: ExecutionRecord, pinned: int | None) -> None:
    """``recording.record_run`` without UPDATE ... RETURNING, which MariaDB lacks."""
    if cursor.execute(_MOVE_COUNTERS, counter_values(record) | {"name": name}) == 0:
        raise AgentNotFoundError(name)
    row = cursor.first(_ID_AND_VERSION, {"name": name})
    if row is None:  # cannot happen: the row is locked by this transaction's UPDATE
        raise AgentNotFoundError(name)
    agent_id, current = row
    ran = version_that_ran(name, current, pinned)
    cursor.send(INSERT_EXECUTION, record_values(agent_id, name, record, ran))
    values = counter_values(record) | {"duration": record.duration_seconds}
    cursor.send(COUNT_RUN, values | {"agent_id": agent_id, "version": ran})
    cursor.send(TRIM, {"agent_id": agent_id})


class MysqlEngine(EngineStrategy):
    name = "mysql"
    begin_snapshot = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
    begin_snapshot_statement = begin_snapshot
    begin_write = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"
    lock_wait_per_connection = True
    count_run = COUNT_RUN

    def lock_wait_sql(self, seconds: float) -> str:
        return mariadb.lock_wait_sql(seconds)

    def first_lock_wait(self, lock_timeout: float) -> float | None:
        return mariadb.first_lock_wait(lock_timeout)

    def cursor(self, raw_cursor: Any, dialect: Dialect, connection: Any) -> Cursor:
        return Cursor(raw_cursor, dialect, many_rows=True)

    def record_execution(
        self, write: Write, read: Read, name: str, record: ExecutionRecord, version: int | None
    ) -> None:
        write(lambda cursor: record_run(cursor, name, record, version))

    def export_records(self, cursor: Cursor, ids: list[int], page: dict[str, Any]) -> list[Any]:
        return cursor.all(EXPORT_RECORDS_PAGED, page)


class MariadbEngine(MysqlEngine):
    """The same engine, as SQLAlchemy names it for ``mariadb+pymysql://`` URLs."""

    name = "mariadb"
