"""One run recorded, in one write transaction: the agent's counters, the record, the counters of
the version that ran and the 50-record FIFO trim.

``record_run`` (every engine's by default, SQLite's): the counters' UPDATE returns the agent's
id and version, then the rest follows. An engine may send it otherwise (PostgreSQL: one
statement of data-modifying CTEs, ``engines.postgresql.statements.send_run``; MariaDB: the
record inserted by name, ``engines.mariadb.statements.record_run``), with these statements'
parts (``run_record``, ``PINNED_EXISTS``, ``RAN``); when its statement changes nothing,
``why_unrecorded`` says why, from the agent's row as read after.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Integer, String, bindparam, case, delete, func, or_, select, update
from sqlalchemy.sql import ColumnElement, Select

from ..errors import AgentNotFoundError, StoreUnavailableError
from ..models import COUNTER_MAX, HISTORY_MAX_RECORDS, ExecutionRecord
from ..schema import Counter, UtcDateTime, agents, executions
from ..sqlexec import Cursor, Prepared
from ..tenancy import TENANT, tenant_param
from .deadline import TryAgain
from .statements import BY_NAME, EXECUTION_COLUMNS, INSERT_EXECUTION, record_values
from .versions import version_that_ran

_timestamp = bindparam("timestamp", type_=UtcDateTime())
#: An agent's counters moved by one run (parameters ``succeeded``, ``failed``, ``timestamp``).
RUN_COUNTERS: Final = {
    "execution_count": agents.c.execution_count + 1,
    "total_executions": agents.c.total_executions + 1,
    "success_count": agents.c.success_count + bindparam("succeeded", type_=Integer()),
    "error_count": agents.c.error_count + bindparam("failed", type_=Integer()),
    "last_executed_at": case(
        (
            or_(agents.c.last_executed_at.is_(None), agents.c.last_executed_at < _timestamp),
            _timestamp,
        ),
        else_=agents.c.last_executed_at,
    ),
}
#: Move an agent's counters for one run; returns its id (no row: no such agent).
RECORD_RUN: Final = Prepared(
    update(agents).where(BY_NAME).values(RUN_COUNTERS).returning(agents.c.id, agents.c.version)
)


def _trim(agent_id: Any) -> Prepared:
    """Keep the newest HISTORY_MAX_RECORDS of one agent: flat cost on the (agent_id, id) index."""
    return Prepared(
        delete(executions).where(
            executions.c.agent_id == agent_id,
            executions.c.id
            <= select(executions.c.id)
            .where(executions.c.agent_id == agent_id)
            .order_by(executions.c.id.desc())
            .limit(1)
            .offset(HISTORY_MAX_RECORDS)
            .scalar_subquery(),
        )
    )


#: The version a run is pinned to (``could_run``): a 64-bit integer like the version column it is
#: compared with (the dialect casts it: typed when None). An ``Integer`` here made PostgreSQL
#: refuse no run but record none pinned past 2**31 - 1 (issue 25).
PINNED: Final = bindparam("pinned", type_=Counter)
#: Of an agent's row: the pinned version (if any) exists.
PINNED_EXISTS: Final = or_(PINNED.is_(None), PINNED.between(1, agents.c.version))
#: Of an agent's row: the version that ran, the pinned one or else the current one.
RAN: Final = func.coalesce(PINNED, agents.c.version)
#: The columns of a run's record, in ``run_record``'s order.
RUN_RECORD_KEYS: Final = (
    "agent_id",
    "agent_name",
    *(c.name for c in EXECUTION_COLUMNS),
    "agent_version",
    TENANT,
)


def run_record(agent_id: ColumnElement[Any], ran: ColumnElement[Any]) -> Select[Any]:
    """A run's record, for ``insert(executions).from_select(RUN_RECORD_KEYS, ...)``: its
    parameters (``record_values``, ``name``) beside ``agent_id`` and the version that ran
    (``ran``), columns of the statement it is part of."""
    return select(
        agent_id,
        bindparam("name", type_=String()),
        *(bindparam(c.name, type_=c.type) for c in EXECUTION_COLUMNS),
        ran,
        tenant_param(),
    )


TRIM: Final = _trim(bindparam("agent_id"))
TRIM_BY_NAME: Final = _trim(select(agents.c.id).where(BY_NAME).scalar_subquery())

_VERSION: Final = Prepared(select(agents.c.version).where(BY_NAME))


def counter_values(record: ExecutionRecord) -> dict[str, Any]:
    """The parameters ``RUN_COUNTERS`` takes of one run."""
    return {
        "succeeded": int(record.success),
        "failed": int(not record.success),
        "timestamp": record.timestamp,
    }


def record_run(
    cursor: Cursor,
    name: str,
    record: ExecutionRecord,
    pinned: int | None,
    count_run: Prepared,
) -> None:
    """Record a run of agent ``name`` (of version ``pinned``, else its current one); raises
    ``AgentNotFoundError`` or ``VersionNotFoundError`` with nothing written. ``count_run``: the
    engine's ``version_statements.count_run``, of parameters ``agent_id`` and ``version``."""
    bumped = cursor.first(RECORD_RUN, counter_values(record) | {"name": name})
    if bumped is None:
        raise AgentNotFoundError(name)
    record_counted_run(cursor, name, record, bumped, pinned, count_run)


def record_counted_run(
    cursor: Cursor,
    name: str,
    record: ExecutionRecord,
    bumped: Sequence[Any],
    pinned: int | None,
    count_run: Prepared,
) -> None:
    """The rest of ``record_run`` once the agent's counters moved (``bumped``: its id and
    version as they are now): the record, the version's counters, the FIFO trim."""
    agent_id, current = bumped
    ran = version_that_ran(name, current, pinned)
    cursor.send(INSERT_EXECUTION, record_values(agent_id, name, record, ran))
    values = counter_values(record) | {"duration": record.duration_seconds}
    cursor.send(count_run, values | {"agent_id": agent_id, "version": ran})
    cursor.send(TRIM, {"agent_id": agent_id})


def could_run(pinned: int | None) -> bool:
    """Whether ``pinned`` may be a version of some agent (or is None), checked before any
    engine records a run (``roles.runs``): the engines that send a run by name bind it as a
    64-bit integer (``PINNED``)."""
    return pinned is None or (type(pinned) is int and 1 <= pinned <= COUNTER_MAX)


def why_unrecorded(cursor: Cursor, name: str, pinned: int | None) -> None:
    """Raise what kept a run of ``name`` from being recorded, as the agent is now; ``TryAgain``
    when nothing would (the pinned version was made meanwhile): the write is tried again within
    its deadline (``deadline.within_deadline``)."""
    row = cursor.first(_VERSION, {"name": name})
    if row is None:
        raise AgentNotFoundError(name)
    version_that_ran(name, row[0], pinned)
    raise TryAgain(
        StoreUnavailableError(
            f"agent {name!r} kept changing while its run was recorded, until the lock "
            "timeout; nothing was recorded",
            transient=True,
        )
    )
