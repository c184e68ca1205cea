"""PostgreSQL: a store on a server (``postgresql+psycopg://...``), on psycopg 3.

What it does its own way: reads run with the driver in autocommit (one round trip for a read of
one statement; ``BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY`` for a snapshot), writes in
psycopg's pipeline mode with ``SET LOCAL lock_timeout``; a run is recorded by one statement of
data-modifying CTEs (``RECORD_AT_ONCE``) with the upsert of its version's counters
(``version_statements.count_run``), sent with the FIFO trim in one round trip; lists of values
go as one array (``= ANY``); bulk loading streams rows by ``COPY`` and gathers the statistics
after a large import; the coroutines run on an async engine of the store's URL. Its text search
is served by the pg_trgm indexes of revision 0003 (no probe: every word is tested by ``LIKE``).
Connection policy: ``acti_store.engine``; error codes: ``acti_store.dberrors``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final

from sqlalchemy import (
    Engine,
    Integer,
    String,
    bindparam,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.engine import URL, Dialect
from sqlalchemy.pool import NullPool

from ...engine import LISTEN_OPTION, make_engine, store_schema, wait_ms
from ...models import ExecutionRecord
from ...repository.feed import count_changes, save_checkpoint
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
from ...repository.signals import (
    POLL_INTERVAL,
    ChangeSignal,
    PollingSignal,
    interruptible_wait,
    own_connection,
)
from ...repository.statements import (
    AGENT_KEYS,
    BY_NAME,
    insert_tags,
    record_values,
    records_of,
)
from ...repository.strategy import EngineStrategy, Read, Statement, Write
from ...repository.version_statements import count_run
from ...schema import agents, executions
from ...sqlexec import Answer, Compiled, Cursor, Prepared
from ...tenancy import TENANT_SETTING, tenant_param
from .connection import TransactionSettings, pooled_settings
from .logins import POSTGRESQL_LOGINS
from .pipeline import BridgedConnection, psycopg_async_connection, psycopg_connection

logger = logging.getLogger(__name__)

#: Writes (an import, a thousand creates) that changed at least this share of the agents since
#: their last analysis have PostgreSQL gather the tables' statistics at once (autovacuum's
#: default scale factor, without its wait of up to a minute): a search planned on the
#: statistics of a much smaller store walks the wrong index.
ANALYZE_SHARE: Final = 0.1

# -- runs ------------------------------------------------------------------------------------------


#: The agent's counters moved, where the pinned version (if any) exists; its id and the version
#: that ran.
_bumped = (
    update(agents)
    .where(BY_NAME, PINNED_EXISTS)
    .values(RUN_COUNTERS)
    .returning(agents.c.id, RAN.label("ran"))
    .cte("bumped")
)
_inserted = insert(executions).from_select(
    list(RUN_RECORD_KEYS), run_record(_bumped.c.id, _bumped.c.ran)
)
#: A run counted for its agent and its version, and its record inserted; returns the agent's id
#: (no row: nothing was recorded).
RECORD_AT_ONCE: Final = Prepared(
    select(_bumped.c.id).add_cte(
        _inserted.cte("inserted"),
        count_run(postgresql_insert, _bumped.c.id, _bumped.c.ran).cte("counted"),
    )
)


def send_run(cursor: Cursor, name: str, record: ExecutionRecord, pinned: int | None) -> Answer:
    """``recording.record_run`` sent without waiting for an answer (``pinned``: ``could_run``):
    one statement does all but the trim, and the trim follows it in the same transaction, both
    sent at once: one round trip. The trim is a statement of its own because a CTE's statements
    share one snapshot: it would not see the record just inserted, nor one a concurrent run of
    the agent committed while this one waited for the row lock. The answer has a row when the
    run was recorded; else ``recording.why_unrecorded`` says why."""
    values = record_values(0, name, record) | counter_values(record)
    values |= {"name": name, "pinned": pinned, "duration": record.duration_seconds}
    answer = cursor.later(RECORD_AT_ONCE, values)
    cursor.send(TRIM_BY_NAME, {"name": name})
    return answer


# -- lists of values -------------------------------------------------------------------------------

#: The ids of those of a list of names that are taken (``= ANY`` of one array). Planned for
#: its values each time: an import into an empty store asks it every 50 agents while the table
#: fills, and the generic plan of a prepared statement, made on the first few, scans the table
#: (25 ms a call by 10,000 agents, 1.5 ms at first: the import's time grew with its square).
IDS_BY_NAME: Final = Prepared(
    select(agents.c.id, agents.c.name).where(
        agents.c.name == func.any(bindparam("names", type_=postgresql.ARRAY(String())))
    ),
    planned_each_time=True,
)
#: The export's records of a page's ids (a prepared statement's generic plan of the page's
#: subquery expects a page of any size and reads every record: 40 ms a page at 100,000 agents,
#: not 1).
EXPORT_RECORDS_OF: Final = records_of(
    executions.c.agent_id == func.any(bindparam("ids", type_=postgresql.ARRAY(Integer())))
)

# -- bulk loading ----------------------------------------------------------------------------------

#: Agents an import stages per batch on PostgreSQL (``PostgresqlEngine.bulk_batch``).
POSTGRES_BULK_BATCH: Final = 1_000
#: The fewest rows ``copy_rows`` sends as one ``COPY``.
COPY_MIN_ROWS: Final = 16


#: Whether row-level security applies to this session's rows of the store (every tenant table
#: has the same policy, ``tenancy``): to a role held to its tenant (docs/tenants.md), not to the
#: superuser or a role that bypasses it.
_ROW_SECURITY_ACTIVE: Final = "SELECT row_security_active('agents')"
#: ``connection.info``'s record of whether ``COPY FROM`` may load rows on that connection.
COPY_ALLOWED: Final = "acti.copy_allowed"


def copy_rows(
    raw_cursor: Any,
    compiled: Compiled,
    rows: Sequence[Mapping[str, Any]],
    *,
    info: dict[str, Any],
) -> bool:
    """``Cursor.executemany``'s bulk load: a plain INSERT of ``COPY_MIN_ROWS`` rows or more on
    psycopg's sync cursors goes as one ``COPY``, the rows streamed in with no statement per row
    (``COPY`` has no RETURNING: ids are not read). False (nothing done) for fewer rows, a
    statement that is not such an INSERT (``copy_sql``), or a session that row-level security
    applies to, where PostgreSQL refuses ``COPY FROM`` (asked once per connection, whose
    ``info`` keeps the answer): the rows then go by statement."""
    if len(rows) < COPY_MIN_ROWS:
        return False
    copy = copy_sql(compiled)
    if copy is None:
        return False
    allowed = info.get(COPY_ALLOWED)
    if allowed is None:
        raw_cursor.execute(_ROW_SECURITY_ACTIVE)
        allowed = info[COPY_ALLOWED] = not raw_cursor.fetchone()[0]
    if not allowed:
        return False
    with raw_cursor.copy(copy) as stream:
        for row in rows:
            stream.write_row(compiled.values(row))
    return True


#: Ids for ``count`` new agents, taken from the agents' sequence at once (``insert_agents``).
NEW_AGENT_IDS: Final = Prepared(
    text(
        "SELECT nextval(pg_get_serial_sequence('agents', 'id')) FROM generate_series(1, :count)"
    ).bindparams(bindparam("count", type_=Integer()))
)
#: A new agent's row with its id given: a plain INSERT, which ``copy_rows`` loads by ``COPY``.
INSERT_AGENT_WITH_ID: Final = Prepared(insert(agents), columns=("id", *AGENT_KEYS))


def copy_sql(compiled: Compiled) -> str | None:
    """This INSERT as a ``COPY ... FROM STDIN`` of its columns, in the plan's order
    (``Compiled.values``); None for a statement that is not a ``sqlexec.PlainInsert`` (values
    that are not the plan's parameters one by one: literal ones, expressions, a SELECT)."""
    plain = compiled.plain_insert
    if plain is None:
        return None
    quote = compiled.dialect.identifier_preparer
    columns = ", ".join(quote.quote(plain.table.c[key].name) for key in plain.keys)
    return f"COPY {quote.format_table(plain.table)} ({columns}) FROM STDIN"


# -- statistics ------------------------------------------------------------------------------------

#: The agents table's estimated rows (-1: never analyzed) and its rows changed since its last
#: analysis (the server's count, reported at the end of each transaction).
_SINCE_ANALYZED: Final = text(
    "SELECT c.reltuples, s.n_mod_since_analyze FROM pg_catalog.pg_class c "
    "LEFT JOIN pg_catalog.pg_stat_user_tables s ON s.relid = c.oid "
    "WHERE c.oid = 'agents'::regclass"
)


#: The first statement of a PostgreSQL transaction that reads with several statements and must
#: see one snapshot (an export, a history with its totals): READ COMMITTED, the default, gives
#: each statement its own. A read-only REPEATABLE READ transaction never blocks writers and never
#: fails on their account. Single-statement reads do without it (one round trip fewer).
POSTGRES_BEGIN_SNAPSHOT: Final = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
#: The same as one statement, for a connection in autocommit (no BEGIN of the driver's own).
POSTGRES_BEGIN_SNAPSHOT_STATEMENT: Final = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"


def refresh_statistics(engine: Engine, written: int) -> None:
    """After writes of ``written`` agents: ANALYZE the agents and their tags when the agents
    changed since their last analysis (these writes, and what the server counted before them)
    are ``ANALYZE_SHARE`` of the store or more, or the tables were never analyzed: autovacuum's
    rule, without its wait. The writes are committed already: a failure here is logged, not
    raised."""
    if not written:
        return
    try:
        # A transaction of its own (not autocommit): one that a store behind a transaction
        # pooler makes its settings in, its schema's search path among them.
        with engine.begin() as conn:
            found: Any = conn.execute(_SINCE_ANALYZED).one()
            rows, changed = float(found[0]), max(int(found[1] or 0), written)
            if rows < 0 or changed >= ANALYZE_SHARE * rows:
                conn.execute(text("ANALYZE agents, agent_tags"))
    except Exception:
        logger.warning("could not gather the statistics of the new agents", exc_info=True)


# -- the strategy ----------------------------------------------------------------------------------


#: Row-level security's key kept by the session (``PostgresqlEngine.tenant_sql``).
SET_TENANT: Final = f"SELECT set_config('{TENANT_SETTING}', %s, false)"

#: The channel of the change feed's notifications; the payload names the store's schema and the
#: tenant (``ListenSignal``).
CHANNEL: Final = "acti_changes"
COUNT_CHANGES: Final = Prepared(count_changes(postgresql_insert))
SAVE_CHECKPOINT: Final = Prepared(save_checkpoint(postgresql_insert))
#: Sent by each write with changes: delivered to the listeners when (and if) it commits.
NOTIFY_CHANGES: Final = Prepared(
    select(func.pg_notify(CHANNEL, func.current_schema().concat(" ").concat(tenant_param())))
)


class ListenSignal:
    """``LISTEN`` on a connection of its own: each write with changes notifies the channel
    (``NOTIFY_CHANGES``) as it commits; the watcher sends no query while nothing changes."""

    def __init__(self, engine: Engine, tenant: str, *, schema: str | None = None) -> None:
        self._connection = driver = own_connection(engine)
        driver.autocommit = True
        if schema is None:
            schema = driver.execute("SELECT current_schema()").fetchone()[0]
        driver.execute(f"LISTEN {CHANNEL}")
        self._driver = driver
        self._payload = f"{schema} {tenant}"
        self._engine: Engine | None = None

    @classmethod
    def on_url(cls, listen_url: URL, store: Engine, tenant: str) -> ListenSignal:
        """``LISTEN`` on a connection to ``listen_url`` (a direct URL of the store's database,
        where the store's own reach it through a transaction pooler), for the notifications of
        the store on ``store`` (its schema: the store's, else the database's default one)."""
        schema = store_schema(store) or store.dialect.default_schema_name
        engine = make_engine(listen_url, schema="", poolclass=NullPool)
        try:
            signal = cls(engine, tenant, schema=schema)
        except BaseException:
            engine.dispose()
            raise
        signal._engine = engine
        return signal

    def arm(self) -> None:
        """Nothing to do: a notification that comes before ``wait`` waits for it."""

    @interruptible_wait
    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            for notify in self._driver.notifies(timeout=left, stop_after=1):
                if notify.payload == self._payload:
                    return

    def close(self) -> None:
        self._connection.close()
        if self._engine is not None:
            self._engine.dispose()


#: The WAL position a read replica must have replayed to show what was committed before it
#: (as a byte offset), and a server's replay position: a standby's last replayed, a primary's
#: (a promoted standby) current one.
COMMIT_POSITION: Final = Prepared(text("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint"))
REPLAY_POSITION: Final = Prepared(
    text(
        "SELECT (coalesce(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
        "ELSE pg_current_wal_lsn() END, '0/0'::pg_lsn) - '0/0'::pg_lsn)::bigint"
    )
)


class PostgresqlEngine(EngineStrategy):
    name = "postgresql"
    commit_position = COMMIT_POSITION
    replay_position = REPLAY_POSITION
    tenant_logins = POSTGRESQL_LOGINS
    begin_snapshot = (POSTGRES_BEGIN_SNAPSHOT,)
    begin_snapshot_statement = (POSTGRES_BEGIN_SNAPSHOT_STATEMENT,)
    reads_in_autocommit = True
    count_changes = COUNT_CHANGES
    save_checkpoint = SAVE_CHECKPOINT
    notify_changes = NOTIFY_CHANGES
    #: An import's agents by the thousand: its names go as one array and its rows by ``COPY``,
    #: with no parameter limit, and each batch costs round trips (``bulk_batch``).
    bulk_batch = POSTGRES_BULK_BATCH

    def change_signal(
        self, engine: Engine, tenant: str, last_seq: Callable[[], object]
    ) -> ChangeSignal:
        return ListenSignal(engine, tenant)

    def lock_wait_sql(self, seconds: float) -> str:
        return f"SET LOCAL lock_timeout = {wait_ms(seconds)}"

    def tenant_sql(self, tenant: str) -> Statement | None:
        """Row-level security's key (migration 0009): kept by the session, set when a
        connection first serves the tenant."""
        return SET_TENANT, (tenant,)

    def for_engine(self, engine: Engine) -> EngineStrategy:
        settings = pooled_settings(engine)
        listen_url = engine.get_execution_options().get(LISTEN_OPTION)
        if settings is None:
            return self if listen_url is None else DirectPostgresqlEngine(listen_url)
        return PooledPostgresqlEngine(settings, listen_url)

    def record_execution(
        self, write: Write, read: Read, name: str, record: ExecutionRecord, version: int | None
    ) -> None:

        def recorded(answer: Answer) -> None:
            if not answer.rows:  # raises why, or TryAgain (a pinned version made meanwhile)
                read(lambda cursor: why_unrecorded(cursor, name, version))

        write(lambda cursor: send_run(cursor, name, record, version), then=recorded)

    def pipeline_connection(self, connection: Any) -> Any | None:
        """psycopg's connection (a pooled one's driver's); psycopg's async one (the async
        API's twin, in the greenlet bridge) as a sync one, ``BridgedConnection``."""
        driver = getattr(connection, "driver_connection", None)
        if isinstance(driver, psycopg_async_connection()):
            return BridgedConnection(driver)
        if isinstance(driver, psycopg_connection()):
            return driver
        return None

    def cursor(self, raw_cursor: Any, dialect: Dialect, connection: Any) -> Cursor:
        driver = connection.driver_connection
        if dialect.is_async:  # psycopg's async cursor through SQLAlchemy's adapter: no batches
            return Cursor(raw_cursor, dialect, driver=driver)  # of RETURNING, no COPY
        load = partial(copy_rows, info=connection.info)
        return Cursor(raw_cursor, dialect, driver=driver, returning_batches=True, load=load)

    def export_records(
        self, cursor: Cursor, ids: list[int], page: dict[str, Any]
    ) -> list[Sequence[Any]]:
        return cursor.all(EXPORT_RECORDS_OF, {"ids": ids})

    def taken_names(self, cursor: Cursor, names: list[str]) -> dict[str, Sequence[Any]] | None:
        """One round trip for a chunk (of distinct names), not one per item."""
        return {row[1]: row for row in cursor.all(IDS_BY_NAME, {"names": names})}

    def insert_agents(self, cursor: Cursor, rows: list[dict[str, Any]]) -> dict[str, int]:
        """Their ids taken from the agents' sequence first (one statement), the rows then go in
        by ``COPY`` (``Cursor.executemany``), which returns nothing, where an INSERT ...
        RETURNING would run a statement per row."""
        if len(rows) < COPY_MIN_ROWS:
            return super().insert_agents(cursor, rows)
        found = cursor.all(NEW_AGENT_IDS, {"count": len(rows)})
        ids = {values["name"]: row[0] for values, row in zip(rows, found, strict=True)}
        cursor.executemany(INSERT_AGENT_WITH_ID, [v | {"id": ids[v["name"]]} for v in rows])
        insert_tags(cursor, rows, ids)
        return ids

    def after_growth(self, engine: Engine, written: int) -> None:
        refresh_statistics(engine, written)


class DirectPostgresqlEngine(PostgresqlEngine):
    """A store whose change feed listens on a URL of its own (``listen_url``)."""

    def __init__(self, listen_url: URL) -> None:
        self.listen_url = listen_url

    def change_signal(
        self, engine: Engine, tenant: str, last_seq: Callable[[], object]
    ) -> ChangeSignal:
        return ListenSignal.on_url(self.listen_url, engine, tenant)


class PooledPostgresqlEngine(PostgresqlEngine):
    """A store reached through a pooler in transaction mode (PgBouncer's ``pool_mode =
    transaction``), which may give each transaction another server session: every read and
    write is one transaction of its own, sent in pipeline mode (``BEGIN``, the settings, the
    statements, ``COMMIT``: a read costs the round trip of its answer and one for its end), the
    store's settings and tenant made anew in it (``postgresql.TransactionSettings``), never
    kept by the session; no server-side prepared statements (``engine.make_engine``). The
    change feed listens on ``listen_url`` (a direct URL), else it reads the tenant's counter
    every ``signals.POLL_INTERVAL`` (``LISTEN`` needs a session of its own)."""

    reads_in_autocommit = False

    def __init__(self, settings: TransactionSettings, listen_url: URL | None) -> None:
        self.settings = settings
        self.listen_url = listen_url
        self._warned = False

    def tenant_sql(self, tenant: str) -> Statement | None:
        return None

    def transaction_sql(self, tenant: str, lock_wait: float | None) -> Statement | None:
        return self.settings.statement(tenant, None if lock_wait is None else wait_ms(lock_wait))

    def change_signal(
        self, engine: Engine, tenant: str, last_seq: Callable[[], object]
    ) -> ChangeSignal:
        if self.listen_url is not None:
            return ListenSignal.on_url(self.listen_url, engine, tenant)
        if not self._warned:
            self._warned = True
            logger.warning(
                "the change feed of a store behind a transaction pooler is polled every %g s: "
                "give a direct URL of the database (listen_url=, ACTI_STORE_LISTEN_URL or "
                "--listen-url) to be told of each change as it commits",
                POLL_INTERVAL,
            )
        return PollingSignal(None, last_seq, POLL_INTERVAL)


#: The strategy of each dialect of the engine (``repository.strategy.strategy_for``).
STRATEGIES: Final[dict[str, type[EngineStrategy]]] = {"postgresql": PostgresqlEngine}
