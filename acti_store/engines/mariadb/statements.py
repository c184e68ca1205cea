"""MariaDB (and MySQL): a store on a server (``mariadb+pymysql://...`` or ``mysql+pymysql://``).

What it does its own way: the session runs at READ COMMITTED, so a write does, as on
PostgreSQL, with no statement of its own before its first; a snapshot read (the export's, a
search's) asks for REPEATABLE READ and ``START TRANSACTION WITH CONSISTENT SNAPSHOT``; the lock
wait is the session's (``innodb_lock_wait_timeout``, whole seconds rounded down, so a wait never
outlasts the deadline: the rest is retried for), set for a write and put back after. Many rows go
in as one multi-row ``VALUES``. An UPDATE returns no rows here, so a run's record and its
version's counters (``INSERT ... ON DUPLICATE KEY UPDATE``) take the agent's id and version
from its row, under the row lock the counters' UPDATE took, with no round trip to read them.
A subquery with ``LIMIT`` is not allowed under ``IN``: the export reads its page's records
through a derived table. Text queries probe the trigram table ``agent_trigrams`` first
(``MariadbTrigramIndex``).
Connection policy: ``acti_store.mariadb``; error numbers: ``acti_store.dberrors``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, Final

from sqlalchemy import (
    Integer,
    String,
    bindparam,
    case,
    insert,
    literal,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Select
from sqlalchemy.sql.selectable import SelectBase

from ...errors import AgentNotFoundError
from ...models import ExecutionRecord
from ...repository.feed import checkpoint_saved, counter_moved
from ...repository.recording import (
    PINNED_EXISTS,
    RAN,
    RUN_COUNTERS,
    RUN_RECORD_KEYS,
    TRIM_BY_NAME,
    counter_values,
    run_record,
    why_unrecorded,
)
from ...repository.statements import BY_NAME, EXPORT_PAGE, record_values, records_of
from ...repository.strategy import EngineStrategy, Read, Write
from ...repository.version_statements import RUN_TIME, STATS_KEYS
from ...schema import agents, change_counters, executions, version_stats
from ...sqlexec import Cursor, Prepared
from ...tenancy import tenant_param
from . import connection as mariadb

#: Move an agent's counters for one run (its row count: 0 when there is no such agent).
_MOVE_COUNTERS: Final = Prepared(update(agents).where(BY_NAME).values(RUN_COUNTERS))
#: A run's record inserted, its agent's id and the version that ran read from the agent's row
#: (which ``_MOVE_COUNTERS`` locked) where the pinned version exists: no row, nothing recorded.
INSERT_RUN: Final = Prepared(
    insert(executions).from_select(
        list(RUN_RECORD_KEYS), run_record(agents.c.id, RAN).where(BY_NAME, PINNED_EXISTS)
    )
)


def _count_run() -> Prepared:
    """One run of a version counted, its first inserting the version's row: MariaDB's upsert,
    its agent's id and the version that ran read from the agent's row (parameters ``name``,
    ``pinned``, ``succeeded``, ``failed``, ``duration``, ``timestamp``)."""
    counted = mysql_insert(version_stats).from_select(
        list(STATS_KEYS),
        select(
            agents.c.id,
            RAN,
            literal(1),
            bindparam("succeeded", type_=Integer()),
            bindparam("failed", type_=Integer()),
            bindparam("duration", type_=version_stats.c.duration_total.type),
            RUN_TIME,
            tenant_param(),
        ).where(BY_NAME),
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


@cache
def _ids_by_name(count: int) -> Prepared:
    """The id rows of ``count`` names (parameters ``n0`` ...), one statement per chunk size."""
    names = [bindparam(f"n{i}", type_=agents.c.name.type) for i in range(count)]
    return Prepared(select(agents.c.id, agents.c.name).where(agents.c.name.in_(names)))


def record_run(cursor: Cursor, name: str, record: ExecutionRecord, pinned: int | None) -> None:
    """``recording.record_run`` without UPDATE ... RETURNING, which MariaDB lacks, and with no
    round trip to read what it returns: the record and the version's counters take the agent's
    id and version from its row, locked by the counters' UPDATE (``pinned``: ``could_run``)."""
    if cursor.execute(_MOVE_COUNTERS, counter_values(record) | {"name": name}) == 0:
        raise AgentNotFoundError(name)
    values = record_values(0, name, record) | counter_values(record)
    values |= {"name": name, "pinned": pinned, "duration": record.duration_seconds}
    if cursor.execute(INSERT_RUN, values) == 0:  # raises why; the write is rolled back
        why_unrecorded(cursor, name, pinned)
    cursor.send(COUNT_RUN, values)
    cursor.send(TRIM_BY_NAME, {"name": name})


#: How many candidates a text probe collects before it treats its words as common.
TRIGRAM_PROBE_CAP: Final = 500
#: The most index rows a probe reads (``LIMIT ROWS EXAMINED``): 30-40 ms at most.
TRIGRAM_PROBE_ROWS: Final = 50_000
#: The most trigrams a probe asks for (each one more index lookup per candidate).
TRIGRAM_PROBE_MAX: Final = 8


# The text index, as Alembic revision 0008 left it (migrations/versions/): ``agent_trigrams``
# holds every distinct trigram of each agent's lower-cased name and description (none holding a
# space), kept exact by triggers on ``agents`` in the transaction of every write. An agent whose
# text holds a word holds each of the word's trigrams: the agents that hold them all are
# candidates, which the search tests with ``LIKE``. A revision that changes the table or its
# triggers must keep this strategy in step.
def covering_trigrams(words: Sequence[str]) -> list[str]:
    """Trigrams that cover each of ``words`` (from its start every third one, and its last:
    together they span the word), without repeats, at most ``TRIGRAM_PROBE_MAX``. An agent
    holding the words holds them; fewer only let more candidates through to ``LIKE``."""
    grams: dict[str, None] = {}
    for word in words:
        starts = [*range(0, len(word) - 2, 3), len(word) - 3]
        grams |= dict.fromkeys(word[i : i + 3] for i in starts)
    return list(grams)[:TRIGRAM_PROBE_MAX]


def _probe(count: int) -> Prepared:
    """The agents that hold each of ``count`` trigrams ``gram_<i>``, up to one over the cap,
    then a 0: a join of ``agent_trigrams`` per trigram on its primary key (trigram, agent id),
    whose order the planner picks from each trigram's row count (it starts from the rarest).
    MariaDB's ``LIMIT ROWS EXAMINED`` stops it, without its 0, when its words are common enough
    that the probe would cost more than the ordered scan it saves."""
    joined = "".join(
        f" JOIN agent_trigrams t{i} ON t{i}.trigram = :gram_{i} AND t{i}.agent_id = t0.agent_id"
        for i in range(1, count)
    )
    probe = text(
        f"(SELECT t0.agent_id FROM agent_trigrams t0{joined} WHERE t0.trigram = :gram_0 "
        f"LIMIT {TRIGRAM_PROBE_CAP + 1}) UNION ALL SELECT 0 "
        f"LIMIT ROWS EXAMINED {TRIGRAM_PROBE_ROWS}"
    )
    return Prepared(
        probe.bindparams(*(bindparam(f"gram_{i}", type_=String()) for i in range(count)))
    )


_PROBES: Final = {count: _probe(count) for count in range(1, TRIGRAM_PROBE_MAX + 1)}


class MariadbTrigramIndex:
    """``agent_trigrams``, probed for the words of three characters or more, up to
    ``TRIGRAM_PROBE_CAP`` candidates (``search_text._text_values``). Exact in every transaction, so
    no agent is left for the search to test apart (``changed_ids``)."""

    min_word: int = 3
    changed_ids: Select[Any] | None = None
    exact: bool = False
    ids_as_json: bool = False  # JSON_TABLE needs MariaDB 10.6
    walks_first: bool = False  # its probe stops itself (``LIMIT ROWS EXAMINED``)
    matches: SelectBase | None = None

    def probe(self, cursor: Cursor, words: Sequence[str]) -> list[int] | None:
        grams = covering_trigrams(words)
        values = {f"gram_{i}": gram for i, gram in enumerate(grams)}
        found = [row[0] for row in cursor.all(_PROBES[len(grams)], values)]
        if 0 not in found:  # stopped: more rows examined than it is worth
            return None
        found.remove(0)
        return found if len(found) <= TRIGRAM_PROBE_CAP else None

    def match_value(self, words: Sequence[str]) -> str:
        raise NotImplementedError("no whole match: a count probes")

    def walk(
        self, cursor: Cursor, prepared: Prepared, values: Mapping[str, Any]
    ) -> list[Sequence[Any]] | None:
        return None  # never asked: it does not walk first


def _count_changes() -> Prepared:
    """A tenant's change counter moved by ``count`` changes, its first inserting the row:
    MariaDB's upsert (``feed.count_changes``)."""
    counted = counter_moved(mysql_insert)
    counters = change_counters.c
    return Prepared(
        counted.on_duplicate_key_update(last_seq=counters.last_seq + counted.inserted.last_seq)
    )


def _save_checkpoint() -> Prepared:
    """A named consumer's position stored: MariaDB's upsert (``feed.save_checkpoint``)."""
    saved = checkpoint_saved(mysql_insert)
    return Prepared(
        saved.on_duplicate_key_update(seq=saved.inserted.seq, saved_at=saved.inserted.saved_at)
    )


class MysqlEngine(EngineStrategy):
    name = "mysql"
    # The session runs at READ COMMITTED (``mariadb.session_sql``): a write sends no statement
    # of its own before its first, and a snapshot read asks for REPEATABLE READ, which
    # ``WITH CONSISTENT SNAPSHOT`` needs.
    begin_snapshot = (
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
    )
    begin_snapshot_statement = begin_snapshot
    lock_wait_per_connection = True
    text_index = MariadbTrigramIndex()
    count_run = COUNT_RUN
    count_changes = _count_changes()
    save_checkpoint = _save_checkpoint()

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

    def taken_names(self, cursor: Cursor, names: list[str]) -> dict[str, Sequence[Any]] | None:
        """One round trip for a chunk (of distinct names), not one per item."""
        values = {f"n{i}": name for i, name in enumerate(names)}
        return {row[1]: row for row in cursor.all(_ids_by_name(len(names)), values)}

    def export_records(self, cursor: Cursor, ids: list[int], page: dict[str, Any]) -> list[Any]:
        return cursor.all(EXPORT_RECORDS_PAGED, page)


class MariadbEngine(MysqlEngine):
    """The same engine, as SQLAlchemy names it for ``mariadb+pymysql://`` URLs."""

    name = "mariadb"


#: The strategy of each dialect of the engine (``repository.strategy.strategy_for``).
STRATEGIES: Final[dict[str, type[EngineStrategy]]] = {
    "mysql": MysqlEngine,
    "mariadb": MariadbEngine,
}
