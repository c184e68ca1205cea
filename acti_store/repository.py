"""The repository: the interface every layer above talks to, and its SQLAlchemy implementation.

All invariants live here, each enforced in one transaction: version increments, counters, the
50-record FIFO, clone resets. Callers get domain models (``acti_store.models``), never rows.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    Integer,
    and_,
    bindparam,
    case,
    column,
    delete,
    exists,
    func,
    insert,
    literal_column,
    or_,
    select,
    table,
    text,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement

from .errors import (
    AgentExistsError,
    AgentNotFoundError,
    AgentStoreError,
    NoChangesError,
    StoreUnavailableError,
    VersionConflictError,
)
from .models import (
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
    escape_like,
    is_valid_name,
    trusted,
    utc_now,
)
from .schema import UtcDateTime, agent_tags, agents, executions, masks_containing, tools_mask
from .sqlexec import Connections, Cursor, Prepared, connections_for

T = TypeVar("T")
Clock = Callable[[], datetime]
ConflictPolicy = Literal["skip", "replace", "fail"]
ImportOutcome = Literal["imported", "skipped", "replaced"]

CLONE_SUFFIX: Final = " (clone)"
#: Query parameters of a database URL that hold a credential (never shown in ``location``).
_URL_SECRET_PARAMETERS: Final = frozenset({"password", "sslpassword"})
#: How often a write is retried when the engine reports a lock or serialization conflict.
WRITE_ATTEMPTS: Final = 8
#: How SQLite opens a write transaction: the write lock up front, so writers queue.
_BEGIN_WRITE: Final = "BEGIN IMMEDIATE"
#: History records ``bulk_put_stream`` stages before one ``executemany``.
BULK_RECORD_BATCH: Final = 5_000
#: Agents ``bulk_put_stream`` inserts with one statement (17 parameters each: within the 999
#: parameters older SQLite builds allow).
BULK_AGENT_BATCH: Final = 50


# --------------------------------------------------------------------------------------------------
# The interface
# --------------------------------------------------------------------------------------------------


class Mirror(Protocol):
    """Keeps files in step with the store after each committed write (see ``interchange``)."""

    def files_for(self, name: str) -> tuple[Path, Path]:
        """The agent file and the history file of ``name``."""
        ...

    def sync(self, repo: AgentRepository, names: Iterable[str]) -> None:
        """Rewrite (or remove) the files of ``names`` from the store's current state."""
        ...


@dataclass(frozen=True)
class ImportItem:
    """One agent (and/or its history) to put into the store as it is, metadata included."""

    name: str
    agent: Agent | None = None
    history: ExecutionHistory | None = None


@dataclass
class BulkPutResult:
    outcomes: dict[str, ImportOutcome] = field(default_factory=dict)


class AgentRepository(ABC):
    """Storage of agent configurations, their metadata and execution history."""

    mirror: Mirror | None = None

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the records live, fit to show a user (no password)."""

    @abstractmethod
    def now(self) -> datetime:
        """The store's clock: timezone-aware UTC."""

    def location_of(self, name: str) -> str:
        """Where the record of ``name`` lives: its mirror file when there is one."""
        if self.mirror is not None:
            return str(self.mirror.files_for(name)[0])
        return self.location

    def history_location_of(self, name: str) -> str:
        """Where the history of ``name`` lives: its mirror file when there is one."""
        if self.mirror is not None:
            return str(self.mirror.files_for(name)[1])
        return self.location

    @abstractmethod
    def create(self, config: AgentConfig) -> Agent:
        """Store a new agent at version 1. Raises ``AgentExistsError``."""

    @abstractmethod
    def get(self, name: str) -> Agent:
        """The agent called ``name``. Raises ``AgentNotFoundError``."""

    @abstractmethod
    def exists(self, name: str) -> bool: ...

    @abstractmethod
    def list_agents(self) -> list[Agent]:
        """Every agent, by name."""

    @abstractmethod
    def list_names(self) -> list[str]:
        """Every agent's name, sorted."""

    @abstractmethod
    def update(self, name: str, changes: AgentUpdate, expected_version: int | None = None) -> Agent:
        """Apply a partial update and bump the version.

        Raises ``AgentNotFoundError``, ``NoChangesError``, and ``VersionConflictError`` when
        ``expected_version`` is given and the stored version differs.
        """

    @abstractmethod
    def delete(self, name: str, delete_history: bool = True) -> Agent:
        """Delete an agent; returns it as it was. With ``delete_history=False`` its history is
        archived (see ``archived_history``)."""

    @abstractmethod
    def clone(
        self,
        source_name: str,
        new_name: str,
        description: str | None = None,
        tags: list[str] | None = None,
    ) -> Agent:
        """Copy an agent under a new name with fresh metadata and no history."""

    @abstractmethod
    def search(self, query: SearchQuery) -> list[Agent]: ...

    @abstractmethod
    def count_by_stratum(self) -> dict[str | None, int]:
        """Agents per stratum: every stratum of the contract, plus ``None`` if any have none."""

    @abstractmethod
    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        """Append a run to the history (keeping the newest 50) and move the counters."""

    @abstractmethod
    def get_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory: ...

    @abstractmethod
    def execution_stats(self, name: str) -> ExecutionStats: ...

    @abstractmethod
    def archived_history(self, name: str) -> ExecutionHistory:
        """Records kept from deleted agents called ``name`` (``delete_history=False``)."""

    @abstractmethod
    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        """Every agent with its history (None when never run), streamed page by page."""

    @abstractmethod
    def bulk_put(
        self, items: Sequence[ImportItem], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        """Put agents and histories exactly as given, in one transaction (all or nothing)."""

    def bulk_put_stream(
        self, items: Callable[[], Iterable[ImportItem]], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        """``bulk_put`` for more items than fit in memory: still one transaction, fed by
        ``items()``, which is called again if the transaction is retried."""
        return self.bulk_put(list(items()), on_conflict)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


def _require_storable(name: str) -> None:
    """Raise ``AgentNotFoundError`` for a name no agent can have, without asking the database:
    a driver cannot even send some of them (NUL on PostgreSQL, lone surrogates on both)."""
    if not is_valid_name(name):
        raise AgentNotFoundError(name)


# --------------------------------------------------------------------------------------------------
# Driver errors, translated in one place
# --------------------------------------------------------------------------------------------------

_RETRYABLE_SQLSTATES: Final = {"40001", "40P01", "55P03"}


def _driver_error(exc: BaseException) -> BaseException:
    """The DBAPI exception behind ``exc`` (SQLAlchemy wraps them; our fast path does not)."""
    return exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc


def _is_retryable(exc: BaseException) -> bool:
    """A lock timeout (SQLite), serialization failure or deadlock (PostgreSQL)."""
    orig = _driver_error(exc)
    if getattr(orig, "sqlstate", None) in _RETRYABLE_SQLSTATES:
        return True
    message = str(orig).lower()
    return "database is locked" in message or "database is busy" in message


def _is_unique_violation(orig: BaseException) -> bool:
    return (
        getattr(orig, "sqlstate", None) == "23505"
        or "unique constraint failed" in str(orig).lower()
    )


def _translated(exc: BaseException, dbapi: Any, name: str | None = None) -> BaseException | None:
    """The library's exception for a driver error (raw or wrapped by SQLAlchemy), else None."""
    if not isinstance(exc, sa_exc.DBAPIError | dbapi.Error):
        return None
    orig = _driver_error(exc)
    if isinstance(orig, dbapi.IntegrityError):
        if name is not None and _is_unique_violation(orig):
            return AgentExistsError(name)
        return AgentStoreError(f"the store refused the write: {orig}")
    if isinstance(orig, dbapi.DataError | dbapi.ProgrammingError):
        return AgentStoreError(f"the store rejected the statement: {orig}")
    return StoreUnavailableError(f"the store is unavailable: {orig}")


@contextmanager
def _translate_errors(dbapi: Any, name: str | None = None) -> Iterator[None]:
    """Turn driver errors into the library's exception tree (``_translated``)."""
    try:
        yield
    except Exception as exc:
        error = _translated(exc, dbapi, name)
        if error is None:
            raise
        raise error from exc


# --------------------------------------------------------------------------------------------------
# Statements: built once, compiled once per dialect (see sqlexec)
# --------------------------------------------------------------------------------------------------

_AGENT_COLUMNS: Final = (
    agents.c.id,
    agents.c.name,
    agents.c.description,
    agents.c.system_prompt,
    agents.c.tools,
    agents.c.model,
    agents.c.stratum,
    agents.c.tags,
    agents.c.created_at,
    agents.c.updated_at,
    agents.c.last_executed_at,
    agents.c.version,
    agents.c.builder,
    agents.c.execution_count,
    agents.c.success_count,
    agents.c.error_count,
    agents.c.total_executions,
)
_EXECUTION_COLUMNS: Final = (
    executions.c.execution_id,
    executions.c.timestamp,
    executions.c.task,
    executions.c.result_summary,
    executions.c.success,
    executions.c.duration_seconds,
    executions.c.tool_calls_count,
    executions.c.error_type,
)
_CONFIG_KEYS: Final = (
    "name",
    "description",
    "system_prompt",
    "tools",
    "tools_mask",
    "model",
    "stratum",
    "tags",
)
_METADATA_KEYS: Final = (
    "created_at",
    "updated_at",
    "last_executed_at",
    "version",
    "builder",
    "execution_count",
    "success_count",
    "error_count",
    "total_executions",
)
_RECORD_KEYS: Final = ("agent_id", "agent_name", *(c.name for c in _EXECUTION_COLUMNS))

_by_name = agents.c.name == bindparam("name")
_of_agent = executions.c.agent_id == bindparam("agent_id")

_GET: Final = Prepared(select(*_AGENT_COLUMNS).where(_by_name))
_GET_FOR_UPDATE: Final = Prepared(select(*_AGENT_COLUMNS).where(_by_name).with_for_update())
_ID: Final = Prepared(select(agents.c.id).where(_by_name))
_ALL: Final = Prepared(select(*_AGENT_COLUMNS).order_by(agents.c.name))
_NAMES: Final = Prepared(select(agents.c.name).order_by(agents.c.name))
_COUNT_BY_STRATUM: Final = Prepared(
    select(agents.c.stratum, func.count()).group_by(agents.c.stratum)
)
#: Run for one row or many at once (``Cursor.insert_rows``): the name maps returned ids back.
_INSERT_AGENT: Final = Prepared(
    insert(agents).returning(agents.c.id, agents.c.name), columns=_CONFIG_KEYS + _METADATA_KEYS
)
_UPDATES: dict[frozenset[str], Prepared] = {}


def _update_statement(fields: Iterable[str]) -> Prepared:
    """The UPDATE of an agent that sets ``fields`` (config fields), its version and update time.

    Only the fields given: assigning a column, even its own value, rewrites its index entries.
    One statement per set of fields, built when first needed (at most 2**6).
    """
    key = frozenset(fields)
    found = _UPDATES.get(key)
    if found is None:
        columns = [k for k in _CONFIG_KEYS if k in key or (k == "tools_mask" and "tools" in key)]
        found = _UPDATES[key] = Prepared(
            update(agents).where(
                agents.c.id == bindparam("where_id"),
                agents.c.version == bindparam("where_version"),
            ),
            columns=(*columns, "updated_at", "version"),
        )
    return found


_DELETE_AGENT: Final = Prepared(delete(agents).where(agents.c.id == bindparam("agent_id")))
_INSERT_TAG: Final = Prepared(insert(agent_tags), columns=("agent_id", "tag"))
_DELETE_TAGS: Final = Prepared(
    delete(agent_tags).where(agent_tags.c.agent_id == bindparam("agent_id"))
)
_INSERT_EXECUTION: Final = Prepared(insert(executions), columns=_RECORD_KEYS)
_DELETE_HISTORY: Final = Prepared(delete(executions).where(_of_agent))
_ARCHIVE_HISTORY: Final = Prepared(
    update(executions)
    .where(executions.c.agent_id == bindparam("archived_id"))
    .values(agent_id=None)
)
_HAS_HISTORY: Final = Prepared(select(executions.c.id).where(_of_agent).limit(1))
_SET_TOTAL: Final = Prepared(
    update(agents).where(agents.c.id == bindparam("agent_id")), columns=("total_executions",)
)
_timestamp = bindparam("timestamp", type_=UtcDateTime())
_RECORD_RUN: Final = Prepared(
    update(agents)
    .where(_by_name)
    .values(
        execution_count=agents.c.execution_count + 1,
        total_executions=agents.c.total_executions + 1,
        success_count=agents.c.success_count + bindparam("succeeded", type_=Integer()),
        error_count=agents.c.error_count + bindparam("failed", type_=Integer()),
        last_executed_at=case(
            (
                or_(agents.c.last_executed_at.is_(None), agents.c.last_executed_at < _timestamp),
                _timestamp,
            ),
            else_=agents.c.last_executed_at,
        ),
    )
    .returning(agents.c.id)
)
#: Keep the newest HISTORY_MAX_RECORDS of one agent: flat cost on the (agent_id, id) index.
_TRIM: Final = Prepared(
    delete(executions).where(
        _of_agent,
        executions.c.id
        <= select(executions.c.id)
        .where(executions.c.agent_id == bindparam("agent_id"))
        .order_by(executions.c.id.desc())
        .limit(1)
        .offset(HISTORY_MAX_RECORDS)
        .scalar_subquery(),
    )
)


def _history_statement(errors_only: bool) -> Prepared:
    """One statement for the total and the newest records: a consistent read on any engine."""
    joined = executions.c.agent_id == agents.c.id
    if errors_only:
        joined = and_(joined, executions.c.success.is_(False))
    return Prepared(
        select(agents.c.total_executions, *_EXECUTION_COLUMNS)
        .select_from(agents.outerjoin(executions, joined))
        .where(_by_name)
        .order_by(executions.c.id.desc())
        .limit(bindparam("limit", type_=Integer()))
    )


_HISTORY: Final = {False: _history_statement(False), True: _history_statement(True)}
_STATS: Final = Prepared(
    select(func.count(executions.c.id), func.avg(executions.c.duration_seconds)).where(_of_agent)
)
_archived = and_(executions.c.agent_id.is_(None), executions.c.agent_name == bindparam("name"))
_ARCHIVED_COUNT: Final = Prepared(select(func.count()).where(_archived))
_ARCHIVED: Final = Prepared(
    select(*_EXECUTION_COLUMNS)
    .where(_archived)
    .order_by(executions.c.id.desc())
    .limit(HISTORY_MAX_RECORDS)
)
_page = (
    select(agents.c.id)
    .where(agents.c.name > bindparam("after"))
    .order_by(agents.c.name)
    .limit(bindparam("page_size", type_=Integer()))
)
_EXPORT_AGENTS: Final = Prepared(
    select(*_AGENT_COLUMNS)
    .where(agents.c.name > bindparam("after"))
    .order_by(agents.c.name)
    .limit(bindparam("page_size", type_=Integer()))
)
_EXPORT_RECORDS: Final = Prepared(
    select(executions.c.agent_id, *_EXECUTION_COLUMNS)
    .where(executions.c.agent_id.in_(_page.scalar_subquery()))
    .order_by(executions.c.agent_id, executions.c.id.desc())
)

#: The trigram index serves words of at least three characters.
FTS_MIN_WORD: Final = 3
#: How many index matches a search collects before it treats its words as common (see search).
FTS_PROBE_CAP: Final = 1000
#: Agents changed since the trigram index last took in its log (revision 0004): the index may
#: hold an older text for them, or none, so search checks their current text itself.
_FTS_LOGGED: Final[Select[tuple[Any]]] = select(column("agent_id")).select_from(
    table("agents_fts_log")
)
#: Agents outside the log whose indexed text matches a MATCH expression, up to the cap.
_FTS_PROBE: Final = text(
    "SELECT rowid FROM agents_fts WHERE agents_fts MATCH :fts_query "
    f"AND rowid NOT IN (SELECT agent_id FROM agents_fts_log) LIMIT {FTS_PROBE_CAP}"
)
_SORTS: Final[Mapping[str, tuple[ColumnElement[Any], ...]]] = {
    "name": (agents.c.name.asc(),),
    "created_at": (agents.c.created_at.desc(), agents.c.name.asc()),
    "updated_at": (agents.c.updated_at.desc(), agents.c.name.asc()),
    "execution_count": (agents.c.execution_count.desc(), agents.c.name.asc()),
}


# --------------------------------------------------------------------------------------------------
# Rows <-> domain models (stored rows were validated on the way in: no re-validation here)
# --------------------------------------------------------------------------------------------------


def _agent_from_row(row: Sequence[Any]) -> Agent:
    metadata = trusted(
        AgentMetadata,
        created_at=row[8],
        updated_at=row[9],
        last_executed_at=row[10],
        version=row[11],
        builder=row[12],
        execution_count=row[13],
        success_count=row[14],
        error_count=row[15],
    )
    return trusted(
        Agent,
        name=row[1],
        description=row[2],
        system_prompt=row[3],
        tools=list(row[4]),
        model=row[5],
        stratum=row[6],
        tags=list(row[7]),
        metadata=metadata,
    )


def _record_from_row(row: Sequence[Any], offset: int = 0) -> ExecutionRecord:
    return trusted(
        ExecutionRecord,
        execution_id=row[offset],
        timestamp=row[offset + 1],
        task=row[offset + 2],
        result_summary=row[offset + 3],
        success=bool(row[offset + 4]),
        duration_seconds=row[offset + 5],
        tool_calls_count=row[offset + 6],
        error_type=row[offset + 7],
    )


def _config_values(config: AgentConfig) -> dict[str, Any]:
    return {
        "name": config.name,
        "description": config.description,
        "system_prompt": config.system_prompt,
        "tools": list(config.tools),
        "tools_mask": tools_mask(config.tools),
        "model": config.model,
        "stratum": config.stratum,
        "tags": list(config.tags),
    }


def _metadata_values(meta: AgentMetadata, total_executions: int) -> dict[str, Any]:
    return {
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "last_executed_at": meta.last_executed_at,
        "version": meta.version,
        "builder": meta.builder,
        "execution_count": meta.execution_count,
        "success_count": meta.success_count,
        "error_count": meta.error_count,
        "total_executions": total_executions,
    }


def _record_values(agent_id: int, name: str, record: ExecutionRecord) -> dict[str, Any]:
    return {
        "agent_id": agent_id,
        "agent_name": name,
        "execution_id": record.execution_id,
        "timestamp": record.timestamp,
        "task": record.task,
        "result_summary": record.result_summary,
        "success": record.success,
        "duration_seconds": record.duration_seconds,
        "tool_calls_count": record.tool_calls_count,
        "error_type": record.error_type,
    }


def _contains_word(word: str) -> ColumnElement[bool]:
    """The agent's name or description contains ``word`` (lower case), case-insensitively."""
    pattern = f"%{escape_like(word)}%"
    return or_(
        func.lower(agents.c.name).like(pattern, escape="\\"),
        func.lower(agents.c.description).like(pattern, escape="\\"),
    )


def _insert_agents(cursor: Cursor, rows: list[dict[str, Any]]) -> dict[str, int]:
    """Insert agent rows (one statement where the driver allows) and their tags; their ids by
    name."""
    ids = {name: agent_id for agent_id, name in cursor.insert_rows(_INSERT_AGENT, rows)}
    tags = [
        {"agent_id": ids[values["name"]], "tag": tag} for values in rows for tag in values["tags"]
    ]
    if tags:
        cursor.executemany(_INSERT_TAG, tags)
    return ids


def _roll_back(connections: Connections, connection: Any) -> None:
    """Roll back after a failure; a connection that cannot even do that is closed, not reused."""
    try:
        connection.rollback()
    except Exception:
        connections.discard(connection)
    else:
        connections.give(connection)


def _export_page(cursor: Cursor, page: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """One page of agents (by name) and all their records, in one snapshot."""
    return cursor.all(_EXPORT_AGENTS, page), cursor.all(_EXPORT_RECORDS, page)


def _clone_description(source: str) -> str:
    room = DESCRIPTION_MAX_LENGTH - len(CLONE_SUFFIX)
    return source[:room] + CLONE_SUFFIX


# --------------------------------------------------------------------------------------------------
# The SQLAlchemy implementation
# --------------------------------------------------------------------------------------------------


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

        ``begin`` is what SQLite opens the transaction with: ``"BEGIN IMMEDIATE"`` for writes (the
        write lock up front, so writers queue on the busy timeout), ``"BEGIN"`` for a read that
        needs one snapshot, None for a single-statement read. PostgreSQL begins implicitly.
        """
        connections = self._connections
        connection = connections.take()
        raw_cursor = connection.cursor()
        try:
            cursor = Cursor(raw_cursor, self._dialect)
            if begin is not None and self._sqlite:
                cursor.raw(begin)
            result = work(cursor)
            if begin is not None or not self._sqlite:  # else SQLite had no transaction open
                connection.commit()
        except BaseException:
            raw_cursor.close()  # ends a half-read statement: it would hold its snapshot
            _roll_back(connections, connection)
            raise
        raw_cursor.close()
        connections.give(connection)
        return result

    def _read(self, work: Callable[[Cursor], T], *, snapshot: bool = False) -> T:
        try:
            return self._run(work, begin="BEGIN" if snapshot else None)
        except Exception as exc:  # not _translate_errors: a context manager costs on every read
            error = _translated(exc, self._dbapi)
            if error is None:
                raise
            raise error from exc

    def _write(self, work: Callable[[Cursor], T], *, name: str | None = None) -> T:
        """Run ``work`` in one write transaction; retry on lock or serialization conflicts."""
        delay = 0.01
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                return self._run(work, begin=_BEGIN_WRITE)
            except Exception as exc:
                error = _translated(exc, self._dbapi, name)
                if error is None:
                    raise
                if not isinstance(error, StoreUnavailableError) or not _is_retryable(exc):
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
        row = cursor.first(_GET_FOR_UPDATE if for_update else _GET, {"name": name})
        if row is None:
            raise AgentNotFoundError(name)
        return row

    # -- agents ------------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Agent:
        now = self.now()
        meta = AgentMetadata(created_at=now, updated_at=now)
        values = _config_values(config) | _metadata_values(meta, 0)

        # A taken name fails the INSERT on the unique constraint: AgentExistsError, nothing written.
        self._write(lambda cursor: _insert_agents(cursor, [values]), name=config.name)
        self._notify(config.name)
        return trusted(Agent, **dict(config), metadata=meta)

    def get(self, name: str) -> Agent:
        return self._read(lambda cursor: _agent_from_row(self._locate(cursor, name)))

    def exists(self, name: str) -> bool:
        if not is_valid_name(name):
            return False
        return self._read(lambda cursor: cursor.first(_ID, {"name": name}) is not None)

    def list_agents(self) -> list[Agent]:
        return self._read(lambda cursor: [_agent_from_row(r) for r in cursor.all(_ALL)])

    def list_names(self) -> list[str]:
        return self._read(lambda cursor: [r[0] for r in cursor.all(_NAMES)])

    def update(self, name: str, changes: AgentUpdate, expected_version: int | None = None) -> Agent:
        fields = changes.changes()
        if not fields:
            raise NoChangesError(name)

        def work(cursor: Cursor) -> Agent:
            row = self._locate(cursor, name, for_update=True)
            current = _agent_from_row(row)
            version = current.metadata.version
            if expected_version is not None and version != expected_version:
                raise VersionConflictError(name, expected_version, version)
            # Validate the merged result with the same model as create: one set of rules.
            merged = AgentConfig.model_validate(dict(current.config) | fields)
            meta = current.metadata.model_copy(
                update={"updated_at": self.now(), "version": version + 1}
            )
            values = _config_values(merged) | {
                "updated_at": meta.updated_at,
                "version": meta.version,
                "where_id": row[0],
                "where_version": version,
            }
            if cursor.execute(_update_statement(fields), values) != 1:  # no row lock here
                raise VersionConflictError(name, version, version + 1)
            if "tags" in fields:
                cursor.execute(_DELETE_TAGS, {"agent_id": row[0]})
                if merged.tags:
                    cursor.executemany(
                        _INSERT_TAG, [{"agent_id": row[0], "tag": t} for t in merged.tags]
                    )
            return trusted(Agent, **dict(merged), metadata=meta)

        agent = self._write(work)
        self._notify(name)
        return agent

    def delete(self, name: str, delete_history: bool = True) -> Agent:
        def work(cursor: Cursor) -> Agent:
            row = self._locate(cursor, name, for_update=True)
            if delete_history:
                cursor.execute(_DELETE_HISTORY, {"agent_id": row[0]})
            else:
                cursor.execute(_ARCHIVE_HISTORY, {"archived_id": row[0]})
            cursor.execute(_DELETE_TAGS, {"agent_id": row[0]})
            cursor.execute(_DELETE_AGENT, {"agent_id": row[0]})
            return _agent_from_row(row)

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
            source = _agent_from_row(self._locate(cursor, source_name))
            overrides: dict[str, Any] = {
                "name": new_name,
                "description": description
                if description is not None
                else _clone_description(source.description),
            }
            if tags is not None:
                overrides["tags"] = tags
            config = AgentConfig.model_validate(dict(source.config) | overrides)
            if cursor.first(_ID, {"name": new_name}) is not None:
                raise AgentExistsError(new_name)
            now = self.now()
            meta = AgentMetadata(created_at=now, updated_at=now)
            _insert_agents(cursor, [_config_values(config) | _metadata_values(meta, 0)])
            return trusted(Agent, **dict(config), metadata=meta)

        agent = self._write(work, name=new_name)
        self._notify(new_name)
        return agent

    # -- search ------------------------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Agent]:
        """Filters combine with AND; results come in the sort's order, at most ``limit``.

        Every sort has an index, so the plan wanted is "walk the sort's index, test each row,
        stop at ``limit``", which stays cheap whatever a filter matches, except a text query
        selective enough to hand over a short id list. PostgreSQL's planner finds that from its
        statistics. SQLite's, without statistics, would rather drive from a filter's index and sort
        everything it matched, so there the filter columns are read through ``+column`` (no
        index: documented SQLite idiom) and tags are tested with ``EXISTS`` per row.
        """
        column = self._filter_column
        conditions: list[ColumnElement[bool]] = []
        if query.stratum is not None:
            conditions.append(column(agents.c.stratum) == query.stratum)
        if query.tools:
            conditions.append(column(agents.c.tools_mask).in_(masks_containing(query.tools)))
        for tag in query.tags or ():
            conditions.append(
                exists().where(agent_tags.c.agent_id == agents.c.id, agent_tags.c.tag == tag)
            )
        if query.created_after is not None:
            conditions.append(column(agents.c.created_at) >= query.created_after)
        if query.created_before is not None:
            conditions.append(column(agents.c.created_at) <= query.created_before)
        if query.min_executions is not None:
            conditions.append(column(agents.c.execution_count) >= query.min_executions)
        # One connection, one read transaction: the text probe and the query see one snapshot.
        with _translate_errors(self._dbapi), self._engine.connect() as conn:
            if query.query:
                conditions.extend(self._text_conditions(conn, query.query))
            stmt = (
                select(*_AGENT_COLUMNS)
                .where(and_(True, *conditions))
                .order_by(*_SORTS[query.sort_by])
                .limit(query.limit)
            )
            return [_agent_from_row(row) for row in conn.execute(stmt)]

    def _filter_column(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        """``column`` as a search filter reads it: on SQLite ``+column``, which no index serves."""
        if not self._sqlite:
            return column
        return literal_column(f"+{agents.name}.{column.key}", column.type)

    def _text_conditions(self, conn: Connection, query: str) -> list[ColumnElement[bool]]:
        """Every word must be a case-insensitive substring of the name or the description.

        PostgreSQL: ``LIKE`` on ``lower()``, served by the pg_trgm indexes. SQLite: the FTS5
        trigram index is probed for the words of three characters or more, up to
        ``FTS_PROBE_CAP`` matches. Fewer matches (a selective query) become an id list; a probe
        that fills up means the words are common, and then an ordered scan that checks ``LIKE``
        row by row finds ``limit`` hits sooner than collecting every match would.
        """
        words = query.lower().split()
        conditions: list[ColumnElement[bool]] = []
        if self._sqlite:
            indexed = [w for w in words if len(w) >= FTS_MIN_WORD]
            if indexed:
                phrases = " AND ".join('"' + w.replace('"', '""') + '"' for w in indexed)
                ids: list[int] = list(conn.execute(_FTS_PROBE, {"fts_query": phrases}).scalars())
                if len(ids) < FTS_PROBE_CAP:
                    logged = agents.c.id.in_(_FTS_LOGGED)
                    contain = [_contains_word(w) for w in indexed]
                    conditions.append(or_(agents.c.id.in_(ids), and_(logged, *contain)))
                    words = [w for w in words if len(w) < FTS_MIN_WORD]
        conditions.extend(_contains_word(word) for word in words)
        return conditions

    def count_by_stratum(self) -> dict[str | None, int]:
        counts: dict[str | None, int] = dict.fromkeys(STRATA, 0)
        for stratum, count in self._read(lambda cursor: cursor.all(_COUNT_BY_STRATUM)):
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
            row = cursor.first(_RECORD_RUN, bump)
            if row is None:
                raise AgentNotFoundError(name)
            cursor.execute(_INSERT_EXECUTION, _record_values(row[0], name, record))
            cursor.execute(_TRIM, {"agent_id": row[0]})

        self._write(work)
        self._notify(name)

    def get_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory:
        _require_storable(name)
        limit = max(1, min(limit, HISTORY_MAX_RECORDS))
        rows = self._read(
            lambda cursor: cursor.all(_HISTORY[errors_only], {"name": name, "limit": limit})
        )
        if not rows:
            raise AgentNotFoundError(name)
        return trusted(
            ExecutionHistory,
            agent_name=name,
            executions=[_record_from_row(r, 1) for r in rows if r[1] is not None],
            total_executions=rows[0][0],
        )

    def execution_stats(self, name: str) -> ExecutionStats:
        def work(cursor: Cursor) -> tuple[Sequence[Any], Sequence[Any]]:
            row = self._locate(cursor, name)
            stats = cursor.first(_STATS, {"agent_id": row[0]})
            assert stats is not None
            return row, stats

        row, (retained, average) = self._read(work, snapshot=True)
        return ExecutionStats(
            total_executions=row[16],
            success_count=row[14],
            error_count=row[15],
            retained=retained,
            average_duration_seconds=None if average is None else float(average),
            last_executed_at=row[10],
        )

    def archived_history(self, name: str) -> ExecutionHistory:
        if not is_valid_name(name):
            return trusted(ExecutionHistory, agent_name=name, executions=[], total_executions=0)

        def work(cursor: Cursor) -> ExecutionHistory:
            total = cursor.first(_ARCHIVED_COUNT, {"name": name})
            records = cursor.all(_ARCHIVED, {"name": name})
            return trusted(
                ExecutionHistory,
                agent_name=name,
                executions=[_record_from_row(r) for r in records],
                total_executions=total[0] if total else 0,
            )

        return self._read(work, snapshot=True)

    # -- interchange -------------------------------------------------------------------------------

    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        after = ""
        while True:
            page = {"after": after, "page_size": page_size}
            rows, records = self._read(partial(_export_page, page=page), snapshot=True)
            if not rows:
                return
            by_id: dict[int, list[ExecutionRecord]] = {row[0]: [] for row in rows}
            for record in records:
                by_id[record[0]].append(_record_from_row(record, 1))
            for row in rows:
                history = by_id[row[0]]
                yield (
                    _agent_from_row(row),
                    trusted(
                        ExecutionHistory,
                        agent_name=row[1],
                        executions=history,
                        total_executions=row[16],
                    )
                    if history or row[16]
                    else None,
                )
            after = rows[-1][1]

    def bulk_put(
        self, items: Sequence[ImportItem], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        return self.bulk_put_stream(lambda: items, on_conflict)

    def bulk_put_stream(
        self, items: Callable[[], Iterable[ImportItem]], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        def work(cursor: Cursor) -> BulkPutResult:
            result = BulkPutResult()
            staging = _BulkStaging(cursor)
            for item in items():
                result.outcomes[item.name] = self._put(cursor, item, on_conflict, staging)
            staging.flush()
            return result

        result = self._write(work)
        self._notify(*(n for n, outcome in result.outcomes.items() if outcome != "skipped"))
        return result

    def _put(
        self,
        cursor: Cursor,
        item: ImportItem,
        on_conflict: ConflictPolicy,
        staging: _BulkStaging,
    ) -> ImportOutcome:
        """Stage one item: its agent row and records go in with the next batch."""
        if item.name in staging.agents:  # put twice in one call: the first must be in the table
            staging.flush()
        existing = cursor.first(_ID, {"name": item.name})
        outcome: ImportOutcome = "imported"
        # Records are stored oldest first so that ids order them newest-last, as live runs do.
        newest = item.history.executions[:HISTORY_MAX_RECORDS] if item.history else []
        if item.agent is not None:
            if existing is not None:
                if on_conflict == "fail":
                    raise AgentExistsError(item.name)
                if on_conflict == "skip":
                    return "skipped"
                for statement in (_DELETE_HISTORY, _DELETE_TAGS, _DELETE_AGENT):
                    cursor.execute(statement, {"agent_id": existing[0]})
                outcome = "replaced"
            total = (
                item.history.total_executions
                if item.history is not None
                else item.agent.metadata.execution_count
            )
            values = _config_values(item.agent) | _metadata_values(item.agent.metadata, total)
            staging.add_agent(values, newest[::-1])
            return outcome
        if existing is None:
            raise AgentNotFoundError(item.name)
        agent_id = existing[0]
        if cursor.first(_HAS_HISTORY, {"agent_id": agent_id}) is not None:
            if on_conflict == "fail":
                raise AgentExistsError(item.name)
            if on_conflict == "skip":
                return "skipped"
            cursor.execute(_DELETE_HISTORY, {"agent_id": agent_id})
            outcome = "replaced"
        if item.history is not None:
            total = item.history.total_executions
            cursor.execute(_SET_TOTAL, {"agent_id": agent_id, "total_executions": total})
            staging.add_records(agent_id, item.name, newest[::-1])
        return outcome


class _BulkStaging:
    """A bulk put's rows on their way in: agents by ``BULK_AGENT_BATCH`` per INSERT statement
    (their tags and records follow once their ids are known), records by ``BULK_RECORD_BATCH``
    per ``executemany``. Memory stays bounded however many items come through."""

    __slots__ = ("_cursor", "agents", "records")

    def __init__(self, cursor: Cursor) -> None:
        self._cursor = cursor
        #: Staged agent rows by name, with their records (oldest first).
        self.agents: dict[str, tuple[dict[str, Any], list[ExecutionRecord]]] = {}
        self.records: list[dict[str, Any]] = []

    def add_agent(self, values: dict[str, Any], records: list[ExecutionRecord]) -> None:
        self.agents[values["name"]] = (values, records)
        if len(self.agents) >= BULK_AGENT_BATCH:
            self._insert_agents()

    def add_records(self, agent_id: int, name: str, records: Iterable[ExecutionRecord]) -> None:
        self.records.extend(_record_values(agent_id, name, r) for r in records)
        if len(self.records) >= BULK_RECORD_BATCH:
            self._insert_records()

    def flush(self) -> None:
        self._insert_agents()
        self._insert_records()

    def _insert_agents(self) -> None:
        if not self.agents:
            return
        staged, self.agents = self.agents, {}
        ids = _insert_agents(self._cursor, [values for values, _ in staged.values()])
        for name, (_, records) in staged.items():
            self.add_records(ids[name], name, records)

    def _insert_records(self) -> None:
        if self.records:
            self._cursor.executemany(_INSERT_EXECUTION, self.records)
            self.records = []


__all__ = [
    "AgentRepository",
    "BulkPutResult",
    "ConflictPolicy",
    "ImportItem",
    "Mirror",
    "SqlAgentRepository",
]
