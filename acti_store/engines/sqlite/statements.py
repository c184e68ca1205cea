"""SQLite: the engine of the default store, a file (``sqlite:///...``) on the stdlib driver.

What it does its own way: it runs one writer at a time, so a write opens with ``BEGIN
IMMEDIATE`` and a read of several statements with ``BEGIN`` (the driver opens none: the
connection policy, ``acti_store.engine``); the busy timeout is the connection's; the fast path
keeps the driver's own connections; search filters skip their indexes (``+column``) and text
queries probe the FTS5 trigram index first (``FtsTrigramIndex``); many rows go in as one
multi-row ``VALUES`` (``sqlexec.Prepared.many``). Runs are recorded in a few statements on one
connection, which costs no round trips; the version's counters by the upsert PostgreSQL shares
(``COUNT_RUN``). Error codes: ``acti_store.dberrors``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import (
    Engine,
    Integer,
    bindparam,
    column,
    func,
    literal,
    literal_column,
    select,
    table,
    text,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import SelectBase

from ...engine import wait_ms
from ...repository.feed import FeedStatements, insert_change, save_checkpoint
from ...repository.signals import ChangeSignal, PollingSignal, own_connection
from ...repository.strategy import EngineStrategy
from ...repository.version_statements import count_run
from ...schema import Counter, agents, change_counters, changes, version_stats
from ...sqlexec import Cursor, Prepared
from ...tenancy import TENANT, tenant_param
from .connection import SQLITE_BEGIN_READ, SQLITE_BEGIN_WRITE

#: The trigram index serves words of at least three characters.
FTS_MIN_WORD: Final = 3
#: How many index matches a search collects before it treats its words as common.
FTS_PROBE_CAP: Final = 1000

# The text index, as Alembic revisions 0003 and 0004 left it (migrations/versions/).
# 0003_search made ``agents_fts``, an FTS5 trigram index of the agents' name and description.
# 0004_search_log feeds it through ``agents_fts_log``: triggers log the id of each changed agent
# (with the text the index holds for it), and every 256 entries the log is moved into the index.
# Its invariant, which the two statements below rely on: an agent whose id is not in the log is
# indexed with its current text; an id in the log may be indexed with an older text, or not at all.
# A revision that changes either table or its triggers must keep this strategy in step.

#: Agents changed since the index last took in its log: search checks their current text itself.
_FTS_LOGGED: Final[Select[tuple[Any]]] = select(column("agent_id")).select_from(
    table("agents_fts_log")
)
#: Agents outside the log whose indexed text matches the MATCH expression ``:{parameter}``.
_FTS_MATCHES: Final = (
    "SELECT rowid AS id FROM agents_fts WHERE agents_fts MATCH :{parameter} "
    "AND rowid NOT IN (SELECT agent_id FROM agents_fts_log)"
)
#: ... up to the cap.
_FTS_PROBE: Final = Prepared(
    text(_FTS_MATCHES.format(parameter="fts_query") + f" LIMIT {FTS_PROBE_CAP}")
)


def fts_phrases(words: Sequence[str]) -> str:
    """The MATCH expression of agents holding every one of ``words``: each a quoted phrase."""
    return " AND ".join('"' + w.replace('"', '""') + '"' for w in words)


#: VM steps between two looks at the walk's clock (``FtsTrigramIndex.walk``): a few µs apart.
WALK_TICK: Final = 1_000
#: How long a search walks before it probes instead: about what the capped probe of a common
#: word costs, which it saves when its page fills in that time.
WALK_SECONDS: Final = 0.002


class FtsTrigramIndex:
    """``agents_fts``, probed for the words of three characters or more, up to
    ``FTS_PROBE_CAP`` matches among the agents outside the log (``search_text._text_values``).
    A search walks first (``walk``): a word common enough to fill the probe's cap fills a page
    soon in any order, and then the probe is not run at all."""

    min_word: int = FTS_MIN_WORD
    changed_ids: Select[Any] | None = _FTS_LOGGED
    exact: bool = True
    ids_as_json: bool = True
    matches: SelectBase | None = text(_FTS_MATCHES.format(parameter="matched")).columns(
        column("id", Integer())
    )
    walks_first: bool = True

    def match_value(self, words: Sequence[str]) -> str:
        return fts_phrases(words)

    def walk(
        self, cursor: Cursor, prepared: Prepared, values: Mapping[str, Any]
    ) -> list[Sequence[Any]] | None:
        """``prepared``'s rows, or None once it has run ``WALK_SECONDS``: a progress handler
        looks at the clock every ``WALK_TICK`` steps of SQLite's VM and interrupts it (a read:
        the transaction goes on)."""
        connection = cursor.driver
        deadline = time.perf_counter() + WALK_SECONDS
        stopped = False

        def tick() -> bool:
            nonlocal stopped
            stopped = time.perf_counter() > deadline
            return stopped

        connection.set_progress_handler(tick, WALK_TICK)
        try:
            return cursor.all(prepared, values)
        except sqlite3.OperationalError:
            if stopped:  # interrupted by ``tick``
                return None
            raise
        finally:
            connection.set_progress_handler(None, 0)

    def probe(self, cursor: Cursor, words: Sequence[str]) -> list[int] | None:
        found = [row[0] for row in cursor.all(_FTS_PROBE, {"fts_query": fts_phrases(words)})]
        return found if len(found) < FTS_PROBE_CAP else None


#: One run of a version counted: the upsert every engine with one shares.
COUNT_RUN: Final = Prepared(
    count_run(
        sqlite_insert,
        bindparam("agent_id", type_=Integer()),
        bindparam("version", type_=version_stats.c.version.type),
    )
)


#: How often ``data_version_signal`` asks SQLite whether another connection committed.
DATA_VERSION_INTERVAL: Final = 0.01


def data_version_signal(engine: Engine) -> PollingSignal:
    """SQLite's ``PRAGMA data_version`` on a connection of its own: it changes when another
    connection commits to the file. No table is read; the check costs microseconds."""
    connection = own_connection(engine)
    cursor = connection.cursor()

    def version() -> object:
        return cursor.execute("PRAGMA data_version").fetchone()

    return PollingSignal(connection, version, DATA_VERSION_INTERVAL)


SAVE_CHECKPOINT: Final = Prepared(save_checkpoint(sqlite_insert))

# The change feed without a counter moved by every write: SQLite runs one writer at a time from
# its BEGIN IMMEDIATE to its commit, so a change numbered after the feed's last number as the
# write's last statements run is numbered in commit order, with no row lock to order writers
# (``feed``). The feed's last number is the newest change's, or, where none is left (pruned),
# the counter row's: pruning records the last number it deleted there (``MARK_PRUNED``), and a
# store written before keeps its counter's ``last_seq``. One statement fewer per write, and
# one page fewer for the commit to write.
_counters, _changes = change_counters.c, changes.c
_NONE: Final = literal_column("0", Integer())  # in the SQL text: no parameter to bind
_LAST: Final = func.max(
    func.coalesce(select(func.max(_changes.seq)).scalar_subquery(), _NONE),
    func.coalesce(
        select(func.max(_counters.last_seq, _counters.pruned_through)).scalar_subquery(), _NONE
    ),
)
_PRUNED: Final = func.coalesce(select(_counters.pruned_through).scalar_subquery(), _NONE)
#: One change, numbered after the last (``feed.INSERT_CHANGE``'s parameters: ``count`` and
#: ``k`` are not needed; several changes, one statement each, each after the one before).
INSERT_CHANGE: Final = insert_change(_LAST + literal_column("1", Integer()), scalar=True)
#: The tenant's newest change number (0: none yet).
LAST_SEQ: Final = Prepared(select(_LAST))
#: ``feed.FEED``: the feed's figures, with the changes after ``after`` (an outer join from one
#: row: the figures alone when there are none).
_ONE: Final = select(literal(1).label("one")).subquery("feed_one")
FEED: Final = Prepared(
    select(
        _LAST,
        _PRUNED,
        _changes.seq,
        _changes.kind,
        _changes.agent,
        _changes.version,
        _changes.label,
        _changes.at,
    )
    .select_from(
        _ONE.outerjoin(changes, _changes.seq > bindparam("after", type_=_changes.seq.type))
    )
    .order_by(_changes.seq)
    .limit(bindparam("limit", type_=Integer()))
)
#: The feed marked pruned through ``through``: the counter's row made if it has none.
_marked = sqlite_insert(change_counters).from_select(
    ["last_seq", "pruned_through", TENANT],
    select(bindparam("through", type_=Counter), bindparam("through"), tenant_param()),
)
MARK_PRUNED: Final = Prepared(
    _marked.on_conflict_do_update(
        index_elements=[_counters.tenant],
        set_={
            "pruned_through": func.max(_counters.pruned_through, _marked.excluded.pruned_through)
        },
    )
)
SQLITE_FEED: Final = FeedStatements(
    None, None, insert=INSERT_CHANGE, last=LAST_SEQ, read=FEED, mark_pruned=MARK_PRUNED
)


#: A deleted agent's text taken out of the index now, not at the log's next move: the index
#: forgets the text the log says it holds for ``:agent_id`` (none if it was never moved in), and
#: the log, which holds that text too, forgets the agent.
ERASE_TEXT: Final = (
    Prepared(
        text(
            "INSERT INTO agents_fts(agents_fts, rowid, name, description) "
            "SELECT 'delete', agent_id, indexed_name, indexed_description FROM agents_fts_log "
            "WHERE agent_id = :agent_id AND indexed_name IS NOT NULL"
        )
    ),
    Prepared(text("DELETE FROM agents_fts_log WHERE agent_id = :agent_id")),
)


class SqliteEngine(EngineStrategy):
    name = "sqlite"
    begin_snapshot = (SQLITE_BEGIN_READ,)
    begin_snapshot_statement = begin_snapshot
    begin_write = (SQLITE_BEGIN_WRITE,)
    lock_wait_per_connection = True
    driver_begins = False
    writes_one_at_a_time = True
    text_index = FtsTrigramIndex()
    count_run = COUNT_RUN
    save_checkpoint = SAVE_CHECKPOINT
    erase_text = ERASE_TEXT

    def feed_statements(self) -> FeedStatements:
        return SQLITE_FEED

    def change_signal(
        self, engine: Engine, tenant: str, last_seq: Callable[[], object]
    ) -> ChangeSignal:
        return data_version_signal(engine)

    def lock_wait_sql(self, seconds: float) -> str:
        return f"PRAGMA busy_timeout = {wait_ms(seconds)}"

    def driver_connection(self, connection: Any) -> Any:
        return connection  # a kept connection is the driver's own (never autocommit here)

    def cursor(self, raw_cursor: Any, dialect: Dialect, connection: Any) -> Cursor:
        # Many rows of an INSERT as one statement: SQLite's full-text index (fed by a trigger)
        # writes out its pending terms after every statement.
        return Cursor(
            raw_cursor, dialect, driver=self.driver_connection(connection), many_rows=True
        )

    def filter_column(self, col: ColumnElement[Any]) -> ColumnElement[Any]:
        """Without statistics SQLite's planner would rather drive from a filter's index and
        sort everything it matched: ``+col`` (no index: documented SQLite idiom)."""
        return literal_column(f"+{agents.name}.{col.key}", col.type)


#: The strategy of each dialect of the engine (``repository.strategy.strategy_for``).
STRATEGIES: Final[dict[str, type[EngineStrategy]]] = {"sqlite": SqliteEngine}
