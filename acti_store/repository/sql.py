"""``SqlAgentRepository``: the repository on SQLAlchemy, SQLite (default) or PostgreSQL.

All invariants live here, each enforced in one transaction: version increments, counters, the
50-record FIFO, clone resets. The statements and the row mapping are in ``statements``, the
search query in ``search``, bulk import in ``bulk``; driver errors become the library's
exceptions in ``acti_store.dberrors``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final, TypeVar

from sqlalchemy import Engine

from ..dberrors import is_retryable, translate_errors, translated
from ..engine import POSTGRES_BEGIN_SNAPSHOT, SQLITE_BEGIN_READ, SQLITE_BEGIN_WRITE
from ..errors import (
    AgentExistsError,
    AgentNotFoundError,
    NoChangesError,
    StoreUnavailableError,
    VersionConflictError,
)
from ..models import (
    DESCRIPTION_MAX_LENGTH,
    HISTORY_LIMIT_DEFAULT,
    HISTORY_MAX_RECORDS,
    STRATA,
    Agent,
    AgentConfig,
    AgentMetadata,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    ExecutionStats,
    SearchQuery,
    is_valid_name,
    trusted,
    utc_now,
)
from ..sqlexec import Cursor, connections_for, roll_back
from .bulk import put_all
from .cursor import decode_cursor
from .interface import (
    AgentRepository,
    BulkPutResult,
    Clock,
    ConflictPolicy,
    ImportItem,
    Mirror,
    SearchPage,
)
from .paging import agent_pages, export_stream, search_page
from .search import search_statement
from .statements import (
    ALL,
    ARCHIVE_HISTORY,
    ARCHIVED,
    ARCHIVED_COUNT,
    COUNT_BY_STRATUM,
    DELETE_AGENT,
    DELETE_HISTORY,
    DELETE_TAGS,
    ERROR_COUNT,
    GET,
    GET_FOR_UPDATE,
    GET_ID,
    HISTORY,
    ID,
    INSERT_EXECUTION,
    INSERT_TAG,
    LAST_EXECUTED_AT,
    NAMES,
    RECORD_RUN,
    STATS,
    SUCCESS_COUNT,
    TOTAL_EXECUTIONS,
    TRIM,
    agent_from_row,
    config_values,
    history_from_rows,
    insert_agents,
    metadata_values,
    record_from_row,
    record_values,
    update_statement,
)

T = TypeVar("T")

CLONE_SUFFIX: Final = " (clone)"
#: Query parameters of a database URL that hold a credential (never shown in ``location``).
_URL_SECRET_PARAMETERS: Final = frozenset({"password", "sslpassword"})
#: How often a write is retried when the engine reports a lock or serialization conflict.
WRITE_ATTEMPTS: Final = 8


def _require_storable(name: str) -> None:
    """Raise ``AgentNotFoundError`` for a name no agent can have, without asking the database:
    a driver cannot even send some of them (NUL on PostgreSQL, lone surrogates on both)."""
    if not is_valid_name(name):
        raise AgentNotFoundError(name)


def _clone_description(source: str) -> str:
    room = DESCRIPTION_MAX_LENGTH - len(CLONE_SUFFIX)
    return source[:room] + CLONE_SUFFIX


class SqlAgentRepository(AgentRepository):
    """``AgentRepository`` on SQLAlchemy: SQLite (default) or PostgreSQL.

    Every write is one transaction, retried a bounded number of times when the engine reports a
    lock or serialization conflict; nothing is written by an operation that fails. Frequent
    operations run prepared statements on a DBAPI connection (``sqlexec``: kept and reused for a
    SQLite file, from the pool otherwise); search and the rare paths use SQLAlchemy Core
    connections from the engine's pool.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock | None = None,
        mirror: Mirror | None = None,
    ) -> None:
        self._engine = engine
        self._connections = connections_for(engine)
        self._dialect = engine.dialect
        self._dbapi = engine.dialect.loaded_dbapi
        self._sqlite = engine.dialect.name == "sqlite"
        # What opens a transaction that reads one snapshot, and one that writes (``_run``).
        self._begin_snapshot: str | None = None
        self._begin_write: str | None = None
        if self._sqlite:
            self._begin_snapshot, self._begin_write = SQLITE_BEGIN_READ, SQLITE_BEGIN_WRITE
        elif engine.dialect.name == "postgresql":
            self._begin_snapshot = POSTGRES_BEGIN_SNAPSHOT
        self._clock: Clock = clock or utc_now
        self.mirror = mirror

    # -- plumbing ----------------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def location(self) -> str:
        url = self._engine.url
        if self._sqlite and url.database not in (None, "", ":memory:"):
            return str(Path(url.database or "").resolve())
        # libpq also takes a password from the query string (``?password=...``): drop it too.
        secrets = [key for key in url.query if key.lower() in _URL_SECRET_PARAMETERS]
        return url.difference_update_query(secrets).render_as_string(hide_password=True)

    def now(self) -> datetime:
        return self._clock()

    def close(self) -> None:
        self._connections.close()

    def _run(self, work: Callable[[Cursor], T], *, begin: str | None) -> T:
        """Run ``work`` on a pooled DBAPI connection, committed if it returns, else rolled back.

        ``begin`` is the first statement of the transaction: ``_begin_write`` for writes (SQLite:
        ``BEGIN IMMEDIATE``), ``_begin_snapshot`` for a read of several statements that must see
        one snapshot (SQLite: ``BEGIN``; PostgreSQL: REPEATABLE READ), None for a
        single-statement read (the engine's policy, ``acti_store.engine``). PostgreSQL's driver
        begins the transaction itself.
        """
        connections = self._connections
        connection = connections.take()
        raw_cursor = connection.cursor()
        try:
            cursor = Cursor(raw_cursor, self._dialect)
            if begin is not None:
                cursor.raw(begin)
            result = work(cursor)
            if begin is not None or not self._sqlite:  # else SQLite had no transaction open
                connection.commit()
        except BaseException:
            raw_cursor.close()  # ends a half-read statement: it would hold its snapshot
            roll_back(connections, connection)
            raise
        raw_cursor.close()
        connections.give(connection)
        return result

    def _read(self, work: Callable[[Cursor], T], *, snapshot: bool = False) -> T:
        try:
            return self._run(work, begin=self._begin_snapshot if snapshot else None)
        except Exception as exc:  # not translate_errors: a context manager costs on every read
            error = translated(exc, self._dbapi)
            if error is None:
                raise
            raise error from exc

    def _write(self, work: Callable[[Cursor], T], *, name: str | None = None) -> T:
        """Run ``work`` in one write transaction; retry on lock or serialization conflicts."""
        delay = 0.01
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                return self._run(work, begin=self._begin_write)
            except Exception as exc:
                error = translated(exc, self._dbapi, name)
                if error is None:
                    raise
                if not isinstance(error, StoreUnavailableError) or not is_retryable(exc):
                    raise error from exc
                if attempt == WRITE_ATTEMPTS:
                    raise error from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        raise AssertionError("unreachable")  # pragma: no cover

    def _notify(self, *names: str) -> None:
        if self.mirror is not None:
            self.mirror.sync(self, names)

    @staticmethod
    def _locate(cursor: Cursor, name: str, *, for_update: bool = False) -> Sequence[Any]:
        _require_storable(name)
        row = cursor.first(GET_FOR_UPDATE if for_update else GET, {"name": name})
        if row is None:
            raise AgentNotFoundError(name)
        return row

    # -- agents ------------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Agent:
        now = self.now()
        meta = AgentMetadata(created_at=now, updated_at=now)
        values = config_values(config) | metadata_values(meta, 0)

        # A taken name fails the INSERT on the unique constraint: AgentExistsError, nothing written.
        self._write(lambda cursor: insert_agents(cursor, [values]), name=config.name)
        self._notify(config.name)
        return trusted(Agent, **dict(config), metadata=meta)

    def get(self, name: str) -> Agent:
        return self._read(lambda cursor: agent_from_row(self._locate(cursor, name)))

    def exists(self, name: str) -> bool:
        if not is_valid_name(name):
            return False
        return self._read(lambda cursor: cursor.first(GET_ID, {"name": name}) is not None)

    def list_agents(self) -> list[Agent]:
        return self._read(lambda cursor: [agent_from_row(r) for r in cursor.all(ALL)])

    def iter_agents(self, page_size: int = 500) -> Iterator[Agent]:
        return agent_pages(self._read, page_size)

    def list_names(self) -> list[str]:
        return self._read(lambda cursor: [r[0] for r in cursor.all(NAMES)])

    def update(self, name: str, changes: AgentUpdate, expected_version: int | None = None) -> Agent:
        fields = changes.changes()
        if not fields:
            raise NoChangesError(name)

        def work(cursor: Cursor) -> Agent:
            row = self._locate(cursor, name, for_update=True)
            current = agent_from_row(row)
            version = current.metadata.version
            if expected_version is not None and version != expected_version:
                raise VersionConflictError(name, expected_version, version)
            # Validate the merged result with the same model as create: one set of rules.
            merged = AgentConfig.model_validate(dict(current.config) | fields)
            meta = current.metadata.model_copy(
                update={"updated_at": self.now(), "version": version + 1}
            )
            values = config_values(merged) | {
                "updated_at": meta.updated_at,
                "version": meta.version,
                "where_id": row[ID],
                "where_version": version,
            }
            changed = cursor.execute(update_statement(fields), values)
            # Exactly one row, always: _locate locked it (FOR UPDATE; on SQLite the write lock
            # came with BEGIN IMMEDIATE), so its version is still the one read above. The
            # version condition stays in the UPDATE so that, were that ever not so, the write
            # would fail here instead of overwriting a concurrent update.
            if changed != 1:
                raise AssertionError(f"update of locked agent {name!r} changed {changed} rows")
            if "tags" in fields:
                cursor.execute(DELETE_TAGS, {"agent_id": row[ID]})
                if merged.tags:
                    cursor.executemany(
                        INSERT_TAG, [{"agent_id": row[ID], "tag": t} for t in merged.tags]
                    )
            return trusted(Agent, **dict(merged), metadata=meta)

        agent = self._write(work)
        self._notify(name)
        return agent

    def delete(self, name: str, delete_history: bool = True) -> Agent:
        def work(cursor: Cursor) -> Agent:
            row = self._locate(cursor, name, for_update=True)
            if delete_history:
                cursor.execute(DELETE_HISTORY, {"agent_id": row[ID]})
            else:
                cursor.execute(ARCHIVE_HISTORY, {"archived_id": row[ID]})
            cursor.execute(DELETE_TAGS, {"agent_id": row[ID]})
            cursor.execute(DELETE_AGENT, {"agent_id": row[ID]})
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
            source = agent_from_row(self._locate(cursor, source_name))
            overrides: dict[str, Any] = {
                "name": new_name,
                "description": description
                if description is not None
                else _clone_description(source.description),
            }
            if tags is not None:
                overrides["tags"] = tags
            config = AgentConfig.model_validate(dict(source.config) | overrides)
            if cursor.first(GET_ID, {"name": new_name}) is not None:
                raise AgentExistsError(new_name)
            now = self.now()
            meta = AgentMetadata(created_at=now, updated_at=now)
            insert_agents(cursor, [config_values(config) | metadata_values(meta, 0)])
            return trusted(Agent, **dict(config), metadata=meta)

        agent = self._write(work, name=new_name)
        self._notify(new_name)
        return agent

    # -- search ------------------------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Agent]:
        """Filters combine with AND; results come in the sort's order, at most ``limit``
        (the query and its plan: ``search``)."""
        # One connection, one read transaction: the text probe and the query see one snapshot.
        with translate_errors(self._dbapi), self._engine.connect() as conn:
            stmt = search_statement(conn, query, sqlite=self._sqlite)
            return [agent_from_row(row) for row in conn.execute(stmt)]

    def search_page(self, query: SearchQuery, cursor: str | None = None) -> SearchPage:
        after = None if cursor is None else decode_cursor(cursor, query)
        with translate_errors(self._dbapi), self._engine.connect() as conn:
            return search_page(conn, query, after, sqlite=self._sqlite)

    def count_by_stratum(self) -> dict[str | None, int]:
        counts: dict[str | None, int] = dict.fromkeys(STRATA, 0)
        for stratum, count in self._read(lambda cursor: cursor.all(COUNT_BY_STRATUM)):
            counts[stratum] = int(count)
        return counts

    # -- history -----------------------------------------------------------------------------------

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        _require_storable(name)
        bump = {
            "name": name,
            "succeeded": int(record.success),
            "failed": int(not record.success),
            "timestamp": record.timestamp,
        }

        def work(cursor: Cursor) -> None:
            bumped = cursor.first(RECORD_RUN, bump)
            if bumped is None:
                raise AgentNotFoundError(name)
            (agent_id,) = bumped
            cursor.execute(INSERT_EXECUTION, record_values(agent_id, name, record))
            cursor.execute(TRIM, {"agent_id": agent_id})

        self._write(work)
        self._notify(name)

    def get_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory:
        _require_storable(name)
        limit = max(1, min(limit, HISTORY_MAX_RECORDS))
        rows = self._read(
            lambda cursor: cursor.all(HISTORY[errors_only], {"name": name, "limit": limit})
        )
        if not rows:
            raise AgentNotFoundError(name)
        return history_from_rows(name, rows)

    def get_with_history(self, name: str) -> tuple[Agent, ExecutionHistory]:
        page = {"name": name, "limit": HISTORY_MAX_RECORDS}

        def work(cursor: Cursor) -> tuple[Agent, ExecutionHistory]:
            agent = agent_from_row(self._locate(cursor, name))
            return agent, history_from_rows(name, cursor.all(HISTORY[False], page))

        return self._read(work, snapshot=True)

    def execution_stats(self, name: str) -> ExecutionStats:
        def work(cursor: Cursor) -> tuple[Sequence[Any], Sequence[Any]]:
            row = self._locate(cursor, name)
            stats = cursor.first(STATS, {"agent_id": row[ID]})
            assert stats is not None
            return row, stats

        row, (retained, average) = self._read(work, snapshot=True)
        return ExecutionStats(
            total_executions=row[TOTAL_EXECUTIONS],
            success_count=row[SUCCESS_COUNT],
            error_count=row[ERROR_COUNT],
            retained=retained,
            average_duration_seconds=None if average is None else float(average),
            last_executed_at=row[LAST_EXECUTED_AT],
        )

    def archived_history(self, name: str) -> ExecutionHistory:
        if not is_valid_name(name):
            return trusted(ExecutionHistory, agent_name=name, executions=[], total_executions=0)

        def work(cursor: Cursor) -> ExecutionHistory:
            total = cursor.first(ARCHIVED_COUNT, {"name": name})
            records = cursor.all(ARCHIVED, {"name": name})
            return trusted(
                ExecutionHistory,
                agent_name=name,
                executions=[record_from_row(r) for r in records],
                total_executions=total[0] if total else 0,
            )

        return self._read(work, snapshot=True)

    # -- interchange -------------------------------------------------------------------------------

    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        return export_stream(
            self._connections, self._dialect, self._dbapi, self._begin_snapshot, page_size
        )

    def bulk_put(
        self, items: Sequence[ImportItem], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        return self.bulk_put_stream(lambda: items, on_conflict)

    def bulk_put_stream(
        self, items: Callable[[], Iterable[ImportItem]], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        result = self._write(lambda cursor: put_all(cursor, items(), on_conflict))
        self._notify(*(n for n, outcome in result.outcomes.items() if outcome != "skipped"))
        return result
