"""One run recorded, in one write transaction: the agent's counters, the record, the counters of
the version that ran and the 50-record FIFO trim.

SQLite (``record_run``): the counters' UPDATE returns the agent's id and version, then the rest
follows. PostgreSQL (``send_run``): one statement does all but the trim (``RECORD_AT_ONCE``, data-
modifying CTEs) and the trim follows it in the same transaction, both sent at once: one round
trip. The trim is a statement of its own because a CTE's statements share one snapshot: it
would not see the record just inserted, nor one a concurrent run of the agent committed while
this one waited for the row lock. When that statement changes nothing, ``why_unrecorded`` says
why, from the agent's row as read after.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import Integer, String, bindparam, case, delete, func, insert, or_, select, update

from ..errors import AgentNotFoundError, StoreUnavailableError
from ..models import COUNTER_MAX, HISTORY_MAX_RECORDS, ExecutionRecord
from ..schema import Counter, UtcDateTime, agents, executions
from ..sqlexec import Answer, Cursor, Prepared
from .deadline import TryAgain
from .statements import BY_NAME, EXECUTION_COLUMNS, INSERT_EXECUTION, record_values
from .version_statements import bump_stats, count_run
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


TRIM: Final = _trim(bindparam("agent_id"))
TRIM_BY_NAME: Final = _trim(select(agents.c.id).where(BY_NAME).scalar_subquery())

_VERSION: Final = Prepared(select(agents.c.version).where(BY_NAME))
#: The version a run is pinned to (``could_run``): a 64-bit integer like the version column it is
#: compared with (the dialect casts it: typed when None). An ``Integer`` here made PostgreSQL
#: refuse no run but record none pinned past 2**31 - 1 (issue 25).
_pinned = bindparam("pinned", type_=Counter)
#: The agent's counters moved, where the pinned version (if any) exists; its id and the version
#: that ran.
_bumped = (
    update(agents)
    .where(BY_NAME, or_(_pinned.is_(None), _pinned.between(1, agents.c.version)))
    .values(RUN_COUNTERS)
    .returning(agents.c.id, func.coalesce(_pinned, agents.c.version).label("ran"))
    .cte("bumped")
)
_inserted = insert(executions).from_select(
    ["agent_id", "agent_name", *(c.name for c in EXECUTION_COLUMNS), "agent_version"],
    select(
        _bumped.c.id,
        bindparam("name", type_=String()),
        *(bindparam(c.name, type_=c.type) for c in EXECUTION_COLUMNS),
        _bumped.c.ran,
    ),
)
#: PostgreSQL: a run counted for its agent and its version, and its record inserted; returns
#: the agent's id (no row: nothing was recorded).
RECORD_AT_ONCE: Final = Prepared(
    select(_bumped.c.id).add_cte(
        _inserted.cte("inserted"), count_run(_bumped.c.id, _bumped.c.ran).cte("counted")
    )
)


def _counters(record: ExecutionRecord) -> dict[str, Any]:
    return {
        "succeeded": int(record.success),
        "failed": int(not record.success),
        "timestamp": record.timestamp,
    }


def record_run(cursor: Cursor, name: str, record: ExecutionRecord, pinned: int | None) -> None:
    """Record a run of agent ``name`` (of version ``pinned``, else its current one); raises
    ``AgentNotFoundError`` or ``VersionNotFoundError`` with nothing written."""
    bumped = cursor.first(RECORD_RUN, _counters(record) | {"name": name})
    if bumped is None:
        raise AgentNotFoundError(name)
    agent_id, current = bumped
    ran = version_that_ran(name, current, pinned)
    cursor.send(INSERT_EXECUTION, record_values(agent_id, name, record, ran))
    bump_stats(cursor, agent_id, ran, record)
    cursor.send(TRIM, {"agent_id": agent_id})


def could_run(pinned: int | None) -> bool:
    """Whether ``pinned`` may be a version of some agent (or is None): ``send_run`` takes it."""
    return pinned is None or (type(pinned) is int and 1 <= pinned <= COUNTER_MAX)


def send_run(cursor: Cursor, name: str, record: ExecutionRecord, pinned: int | None) -> Answer:
    """PostgreSQL: ``record_run`` sent without waiting for an answer (``pinned``: ``could_run``);
    the answer has a row when the run was recorded."""
    values = record_values(0, name, record) | _counters(record)
    values |= {"name": name, "pinned": pinned, "duration": record.duration_seconds}
    answer = cursor.later(RECORD_AT_ONCE, values)
    cursor.send(TRIM_BY_NAME, {"name": name})
    return answer


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
