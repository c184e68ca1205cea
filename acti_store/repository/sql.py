"""``SqlAgentRepository``: the repository on SQLAlchemy, SQLite (default) or PostgreSQL.

All invariants live here, each enforced in one transaction: version increments, counters, the
50-record FIFO, clone resets. The statements and the row mapping are in ``statements``, the
search query in ``search``, pages and the export's snapshot in ``paging``, bulk import in
``bulk``; what differs between engines in ``engines`` (one strategy per engine: this module
never asks which engine it runs on); driver errors become the library's exceptions in
``acti_store.dberrors``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Engine

from ..dberrors import translated
from ..engine import LOCK_TIMEOUT_DEFAULT, make_async_engine, store_location, store_schema
from ..errors import (
    AgentExistsError,
    AgentNotFoundError,
    InvalidInputError,
    NoChangesError,
    ReadOnlyStoreError,
)
from ..models import (
    HISTORY_LIMIT_DEFAULT,
    HISTORY_MAX_RECORDS,
    NAIVE_DATETIME_RULE,
    STRATA,
    Agent,
    AgentConfig,
    AgentMetadata,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    ExecutionStats,
    SearchQuery,
    trusted,
    utc_now,
)
from ..sqlexec import Cursor, connections_for
from ..validation import flag, instances, integer, optional_message, optional_version
from ..versioning import VersionLog, clone_message
from .arguments import (
    checked_config,
    checked_history_request,
    checked_policy,
    checked_query,
    checked_record,
    checked_source,
    checked_update,
    require_storable,
    storable,
    store_options,
)
from .asynchronous import DIRECT, Dispatch, GreenletDispatch, StoreThreads, Waits
from .bulk import put_all
from .cursor import decode_cursor
from .deadline import within_deadline
from .engines import strategy_for
from .interface import (
    AgentRepository,
    BulkPutResult,
    Clock,
    ConflictPolicy,
    ImportItem,
    Mirror,
    SearchPage,
    UpdateResult,
)
from .paging import Entry, agent_pages, export_entry, export_stream, search_page, versions_entry
from .search import count_matches, needs_snapshot, search_rows
from .statements import (
    ALL,
    ARCHIVE_HISTORY,
    ARCHIVED,
    ARCHIVED_COUNT,
    COUNT_BY_STRATUM,
    DELETE_AGENT,
    DELETE_HISTORY,
    DELETE_TAGS,
    FIRST_BY_STRATUM,
    GET_ID,
    HISTORY,
    ID,
    NAMES,
    STATS,
    agent_from_row,
    archived_from_rows,
    config_values,
    history_from_rows,
    metadata_values,
    stats_from_rows,
)
from .transaction import run_transaction
from .updating import apply_update, clone_config
from .versions import VersionMethods, forget_versions, insert_agent, record_snapshot

T = TypeVar("T")


class SqlAgentRepository(VersionMethods, AgentRepository):
    """``AgentRepository`` on SQLAlchemy: SQLite (default) or PostgreSQL.

    Every write is one transaction, retried when the engine reports a lock or serialization
    conflict, all within ``lock_timeout`` seconds (``deadline``); nothing is written by an
    operation that fails. Frequent operations run prepared statements on a DBAPI connection
    (``sqlexec``: kept and reused for a SQLite file, from the pool otherwise); search and the rare
    paths use SQLAlchemy Core connections from the engine's pool. The coroutines (``aget``, ...)
    run on an engine of this URL on psycopg's async driver (PostgreSQL) or on the store's threads;
    ``waits``: how pauses and mirror writes wait (``asynchronous``).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock | None = None,
        mirror: Mirror | None = None,
        read_only: bool = False,
        lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
        keep_versions: int | None = None,
        waits: Waits = DIRECT,
    ) -> None:
        read_only, lock_timeout, keep_versions = store_options(
            read_only, lock_timeout, keep_versions
        )
        self._engine = engine
        # What differs between engines; an engine the repository does not run on is refused.
        self._engine_kind = strategy_for(engine.dialect.name)
        self.keep_versions = keep_versions  # snapshots kept besides current and labelled ones
        self.read_only = read_only
        self._lock_timeout = lock_timeout
        self._connections = connections_for(engine)
        self._dialect = engine.dialect
        self._dbapi = engine.dialect.loaded_dbapi
        self._clock: Clock = clock or utc_now
        self.mirror = mirror
        self._waits = waits

    # -- plumbing ----------------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def location(self) -> str:
        return store_location(self._engine.url)

    def now(self) -> datetime:
        value = self._clock()
        if value.tzinfo is None:  # it would be stored as UTC, hours off in most time zones
            raise InvalidInputError("clock", [("the time it returned", NAIVE_DATETIME_RULE)])
        return value

    def close(self) -> None:
        self._connections.close()

    def _run(
        self,
        work: Callable[[Cursor], T],
        *,
        begin: str | None,
        lock_wait: float | None = None,
        autocommit: bool = False,
        pipelined: bool = True,
    ) -> T:
        return run_transaction(
            self._connections,
            self._dialect,
            work,
            engine=self._engine_kind,
            begin=begin,
            lock_wait=lock_wait,
            lock_timeout=self._lock_timeout,
            autocommit=autocommit,
            pipelined=pipelined,
        )

    def _read(self, work: Callable[[Cursor], T], *, snapshot: bool = False) -> T:
        kind = self._engine_kind
        try:
            return self._run(
                work, begin=kind.read_begin(snapshot), autocommit=kind.reads_in_autocommit
            )
        except Exception as exc:  # not translate_errors: a context manager costs on every read
            error = translated(exc, self._dbapi)
            if error is None:
                raise
            raise error from exc

    def _write(
        self,
        work: Callable[[Cursor], T],
        *,
        name: str | None = None,
        pipelined: bool = True,
        then: Callable[[T], None] | None = None,
    ) -> T:
        """Run ``work`` in one write transaction; retry on lock or serialization conflicts
        until the lock timeout (``deadline.within_deadline``); ``pipelined``: ``run_transaction``.
        ``then`` checks each attempt's result once its transaction is over; it raises
        ``TryAgain`` for another attempt within the same deadline.
        """
        if self.read_only:
            raise ReadOnlyStoreError.opened_read_only(self.location)

        def attempt(wait: float | None) -> T:
            result = self._run(
                work, begin=self._engine_kind.begin_write, lock_wait=wait, pipelined=pipelined
            )
            if then is not None:
                then(result)
            return result

        return within_deadline(
            attempt,
            lock_timeout=self._lock_timeout,
            dbapi=self._dbapi,
            name=name,
            sleep=self._waits.sleep,
        )

    def _notify(self, *names: str) -> None:
        if self.mirror is not None:
            self._waits.sync_mirror(self.mirror, self, names)

    def _make_dispatch(self) -> Dispatch:
        """The coroutines run on an ``AsyncEngine`` per loop where the engine has an async
        driver (PostgreSQL), else on the store's threads (SQLite)."""
        if not self._engine_kind.async_engine:
            return super()._make_dispatch()
        options: dict[str, Any] = {"read_only": self.read_only, "lock_timeout": self._lock_timeout}
        # The store's schema, or "" for the default one (not ACTI_STORE_SCHEMA read again).
        schema = store_schema(self._engine) or ""
        engine = partial(make_async_engine, self._engine.url, schema=schema, **options)
        options |= {
            "clock": self._clock,
            "mirror": self.mirror,
            "keep_versions": self.keep_versions,
        }
        return GreenletDispatch(engine, partial(type(self), **options), self, StoreThreads())

    # -- agents ------------------------------------------------------------------------------------

    def create(self, config: AgentConfig | Mapping[str, Any], message: str | None = None) -> Agent:
        config = checked_config(config)
        message = optional_message(message, "message")
        values, agent = self._new_agent(config)
        # A taken name fails the INSERT on the unique constraint: AgentExistsError.
        self._write(
            lambda cursor: insert_agent(cursor, values, agent, message, self.keep_versions),
            name=config.name,
        )
        self._notify(config.name)
        return agent

    def _new_agent(self, config: AgentConfig) -> tuple[dict[str, Any], Agent]:
        """A new agent's row values and model: version 1 (``metadata_values``), made now."""
        now = self.now()
        meta = AgentMetadata(created_at=now, updated_at=now)
        agent = trusted(Agent, **dict(config), metadata=meta)
        return config_values(config) | metadata_values(meta, 0), agent

    def get(self, name: str) -> Agent:
        return self._read(lambda cursor: agent_from_row(self._agent_row(cursor, name)))

    def exists(self, name: str) -> bool:
        if not storable(name):
            return False
        return self._read(lambda cursor: cursor.first(GET_ID, {"name": name}) is not None)

    def list_agents(self) -> list[Agent]:
        return self._read(lambda cursor: [agent_from_row(r) for r in cursor.all(ALL)])

    def iter_agents(self, page_size: int = 500) -> Iterator[Agent]:
        return agent_pages(self._read, integer(page_size, "page_size", 1))

    def list_names(self) -> list[str]:
        return self._read(lambda cursor: [r[0] for r in cursor.all(NAMES)])

    def update_returning_previous(
        self,
        name: str,
        changes: AgentUpdate | Mapping[str, Any],
        expected_version: int | None = None,
        message: str | None = None,
    ) -> UpdateResult:
        fields = checked_update(name, changes).changes()
        expected_version = optional_version(expected_version, "expected_version")
        if not fields:
            raise NoChangesError(name)
        message = optional_message(message, "message")

        def work(cursor: Cursor) -> UpdateResult:
            row = self._agent_row(cursor, name, for_update=True)
            result = apply_update(cursor, row, fields, expected_version, self.now)
            record_snapshot(cursor, row[ID], result.agent, message, self.keep_versions)
            return result

        result = self._write(work)
        self._notify(name)
        return result

    def delete(self, name: str, delete_history: bool = True) -> Agent:
        delete_history = flag(delete_history, "delete_history")

        def work(cursor: Cursor) -> Agent:
            row = self._agent_row(cursor, name, for_update=True)
            if delete_history:
                cursor.send(DELETE_HISTORY, {"agent_id": row[ID]})
            else:
                cursor.send(ARCHIVE_HISTORY, {"archived_id": row[ID]})
            forget_versions(cursor, row[ID], name, archive=not delete_history)
            cursor.send(DELETE_TAGS, {"agent_id": row[ID]})
            cursor.send(DELETE_AGENT, {"agent_id": row[ID]})
            return agent_from_row(row)

        agent = self._write(work)
        self._notify(name)
        return agent

    def clone(
        self,
        source_name: str,
        new_name: str,
        description: str | None = None,
        tags: list[str] | None = None,
    ) -> Agent:
        def work(cursor: Cursor) -> Agent:
            source = agent_from_row(self._agent_row(cursor, source_name))
            config = clone_config(source, new_name, description, tags)
            if cursor.first(GET_ID, {"name": new_name}) is not None:
                raise AgentExistsError(new_name)
            values, clone = self._new_agent(config)
            message = clone_message(source_name, source.metadata.version)
            insert_agent(cursor, values, clone, message, self.keep_versions)
            return clone

        agent = self._write(work, name=new_name)
        self._notify(new_name)
        return agent

    # -- search ------------------------------------------------------------------------------------

    def search(self, query: SearchQuery | Mapping[str, Any]) -> list[Agent]:
        """Filters combine with AND; results come in the sort's order, at most ``limit``
        (the query and its plan: ``search``)."""
        query = checked_query(query)
        kind = self._engine_kind
        rows = self._read(
            lambda cursor: search_rows(cursor, query, kind), snapshot=needs_snapshot(query, kind)
        )
        return [agent_from_row(row) for row in rows]

    def count(self, query: SearchQuery | Mapping[str, Any]) -> int:
        query = checked_query(query)
        kind = self._engine_kind
        return self._read(
            lambda cursor: count_matches(cursor, query, kind), snapshot=needs_snapshot(query, kind)
        )

    def search_page(
        self, query: SearchQuery | Mapping[str, Any], cursor: str | None = None
    ) -> SearchPage:
        query = checked_query(query)
        after = None if cursor is None else decode_cursor(cursor, query)
        kind = self._engine_kind
        return self._read(lambda cursor: search_page(cursor, query, after, kind), snapshot=True)

    def count_by_stratum(self) -> dict[str | None, int]:
        counts: dict[str | None, int] = dict.fromkeys(STRATA, 0)
        for stratum, count in self._read(lambda cursor: cursor.all(COUNT_BY_STRATUM)):
            counts[stratum] = int(count)
        return counts

    def first_by_stratum(self, limit: int) -> dict[str | None, list[Agent]]:
        limit = integer(limit, "limit", 1)
        rows = self._read(lambda cursor: cursor.all(FIRST_BY_STRATUM, {"limit": limit}))
        groups: dict[str | None, list[Agent]] = {}
        for row in rows:
            agent = agent_from_row(row)
            groups.setdefault(agent.stratum, []).append(agent)
        return groups

    # -- history -----------------------------------------------------------------------------------

    def record_execution(
        self, name: str, record: ExecutionRecord | Mapping[str, Any], *, version: int | None = None
    ) -> None:
        record = checked_record(record)
        version = optional_version(version, "version")
        require_storable(name)
        self._engine_kind.record_execution(self._write, self._read, name, record, version)
        self._notify(name)

    def get_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory:
        limit, errors_only = checked_history_request(limit, errors_only)
        require_storable(name)
        rows = self._read(
            lambda cursor: cursor.all(HISTORY[errors_only], {"name": name, "limit": limit})
        )
        if not rows:
            raise AgentNotFoundError(name)
        return history_from_rows(name, rows)

    def get_with_history(self, name: str) -> tuple[Agent, ExecutionHistory]:
        page = {"name": name, "limit": HISTORY_MAX_RECORDS}

        def work(cursor: Cursor) -> tuple[Agent, ExecutionHistory]:
            agent = agent_from_row(self._agent_row(cursor, name))
            return agent, history_from_rows(name, cursor.all(HISTORY[False], page))

        return self._read(work, snapshot=True)

    def execution_stats(self, name: str) -> ExecutionStats:
        def work(cursor: Cursor) -> ExecutionStats:
            row = self._agent_row(cursor, name)
            stats = cursor.first(STATS, {"agent_id": row[ID]})
            assert stats is not None
            return stats_from_rows(row, stats)

        return self._read(work, snapshot=True)

    def archived_history(self, name: str) -> ExecutionHistory:
        if not storable(name):
            return archived_from_rows(name, None, [])
        return self._read(
            lambda cursor: archived_from_rows(
                name,
                cursor.first(ARCHIVED_COUNT, {"name": name}),
                cursor.all(ARCHIVED, {"name": name}),
            ),
            snapshot=True,
        )

    # -- interchange -------------------------------------------------------------------------------

    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        return self._export(page_size, export_entry)

    def iter_export_versions(
        self, page_size: int = 500
    ) -> Iterator[tuple[Agent, ExecutionHistory | None, VersionLog]]:
        return self._export(page_size, versions_entry)

    def _export(self, page_size: int, entry: Entry[T]) -> Iterator[T]:
        size = integer(page_size, "page_size", 1)
        return export_stream(
            self._connections, self._dialect, self._dbapi, self._engine_kind, size, entry
        )

    def bulk_put(
        self, items: Sequence[ImportItem], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        instances(items, ImportItem, "items")
        return self.bulk_put_stream(lambda: items, on_conflict)

    def bulk_put_stream(
        self, items: Callable[[], Iterable[ImportItem]], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        on_conflict = checked_policy(on_conflict)  # before any write: a typo must not replace
        checked_source(items)
        # Not pipelined: its records, snapshots and tags go by COPY (``Cursor.executemany``).
        taken = self._engine_kind.taken_names
        result = self._write(
            lambda cursor: put_all(cursor, items(), on_conflict, taken), pipelined=False
        )
        written = [n for n, outcome in result.outcomes.items() if outcome != "skipped"]
        self._engine_kind.after_bulk_put(self._engine, len(written))
        self._notify(*written)
        return result
