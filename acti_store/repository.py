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
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    Integer,
    Row,
    and_,
    bindparam,
    case,
    column,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy import exc as sa_exc
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
    BUILDER,
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
    utc_now,
)
from .schema import UtcDateTime, agent_tags, agents, executions, masks_containing, tools_mask

T = TypeVar("T")
Clock = Callable[[], datetime]
ConflictPolicy = Literal["skip", "replace", "fail"]
ImportOutcome = Literal["imported", "skipped", "replaced"]

CLONE_SUFFIX: Final = " (clone)"
#: How often a write is retried when the engine reports a lock or serialization conflict.
WRITE_ATTEMPTS: Final = 8


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


# --------------------------------------------------------------------------------------------------
# Driver errors, translated in one place
# --------------------------------------------------------------------------------------------------

_RETRYABLE_SQLSTATES: Final = {"40001", "40P01", "55P03"}


def _is_retryable(exc: sa_exc.DBAPIError) -> bool:
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in _RETRYABLE_SQLSTATES:
        return True
    message = str(exc.orig).lower()
    return "database is locked" in message or "database is busy" in message


def _is_unique_violation(exc: sa_exc.IntegrityError) -> bool:
    sqlstate = getattr(exc.orig, "sqlstate", None)
    return sqlstate == "23505" or "unique constraint failed" in str(exc.orig).lower()


@contextmanager
def _translate_errors(name: str | None = None) -> Iterator[None]:
    try:
        yield
    except AgentStoreError:
        raise
    except sa_exc.IntegrityError as exc:
        if name is not None and _is_unique_violation(exc):
            raise AgentExistsError(name) from exc
        raise AgentStoreError(f"the store refused the write: {exc.orig}") from exc
    except (sa_exc.OperationalError, sa_exc.InterfaceError) as exc:
        raise StoreUnavailableError(f"the store is unavailable: {exc.orig}") from exc


# --------------------------------------------------------------------------------------------------
# The SQLAlchemy implementation
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
#: Rows of the FTS5 trigram index (revision 0003) matching a MATCH expression.
_FTS_MATCH: Final = text("SELECT rowid FROM agents_fts WHERE agents_fts MATCH :fts_query").columns(
    column("rowid", Integer)
)
#: The trigram index serves words of at least three characters.
FTS_MIN_WORD: Final = 3
_SORTS: Final[Mapping[str, tuple[ColumnElement[Any], ...]]] = {
    "name": (agents.c.name.asc(),),
    "created_at": (agents.c.created_at.desc(), agents.c.name.asc()),
    "updated_at": (agents.c.updated_at.desc(), agents.c.name.asc()),
    "execution_count": (agents.c.execution_count.desc(), agents.c.name.asc()),
}


def _agent_from_row(row: Row[Any]) -> Agent:
    """Build the domain model from a stored row without re-validating it (it was on write)."""
    metadata = AgentMetadata.model_construct(
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_executed_at=row.last_executed_at,
        version=row.version,
        builder=row.builder,
        execution_count=row.execution_count,
        success_count=row.success_count,
        error_count=row.error_count,
    )
    return Agent.model_construct(
        name=row.name,
        description=row.description,
        system_prompt=row.system_prompt,
        tools=list(row.tools),
        model=row.model,
        stratum=row.stratum,
        tags=list(row.tags),
        metadata=metadata,
    )


def _record_from_row(row: Row[Any]) -> ExecutionRecord:
    return ExecutionRecord.model_construct(
        execution_id=row.execution_id,
        timestamp=row.timestamp,
        task=row.task,
        result_summary=row.result_summary,
        success=bool(row.success),
        duration_seconds=row.duration_seconds,
        tool_calls_count=row.tool_calls_count,
        error_type=row.error_type,
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


def _record_values(record: ExecutionRecord) -> dict[str, Any]:
    return {
        "execution_id": record.execution_id,
        "timestamp": record.timestamp,
        "task": record.task,
        "result_summary": record.result_summary,
        "success": record.success,
        "duration_seconds": record.duration_seconds,
        "tool_calls_count": record.tool_calls_count,
        "error_type": record.error_type,
    }


def _clone_description(source: str) -> str:
    room = DESCRIPTION_MAX_LENGTH - len(CLONE_SUFFIX)
    return source[:room] + CLONE_SUFFIX


class SqlAgentRepository(AgentRepository):
    """``AgentRepository`` on SQLAlchemy: SQLite (default) or PostgreSQL.

    Every write is one transaction, retried a bounded number of times when the engine reports a
    lock or serialization conflict; nothing is written by an operation that fails.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock | None = None,
        mirror: Mirror | None = None,
    ) -> None:
        self._engine = engine
        self._clock: Clock = clock or utc_now
        self.mirror = mirror
        self._writer = engine.execution_options(acti_write=True)

    # -- plumbing ----------------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def location(self) -> str:
        url = self._engine.url
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
            return str(Path(url.database or "").resolve())
        return url.render_as_string(hide_password=True)

    def now(self) -> datetime:
        return self._clock()

    def close(self) -> None:
        self._engine.dispose()

    def _write(self, work: Callable[[Connection], T], *, name: str | None = None) -> T:
        """Run ``work`` in one write transaction; retry on lock or serialization conflicts."""
        delay = 0.01
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with _translate_errors(name), self._writer.begin() as conn:
                    return work(conn)
            except StoreUnavailableError as exc:
                cause = exc.__cause__
                retryable = isinstance(cause, sa_exc.DBAPIError) and _is_retryable(cause)
                if not retryable or attempt == WRITE_ATTEMPTS:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with _translate_errors(), self._engine.connect() as conn:
            yield conn

    def _notify(self, *names: str) -> None:
        if self.mirror is not None:
            self.mirror.sync(self, names)

    @staticmethod
    def _locate(conn: Connection, name: str, *, for_update: bool = False) -> Row[Any]:
        stmt = select(*_AGENT_COLUMNS).where(agents.c.name == name)
        if for_update:
            stmt = stmt.with_for_update()
        row = conn.execute(stmt).first()
        if row is None:
            raise AgentNotFoundError(name)
        return row

    @staticmethod
    def _insert_agent(conn: Connection, values: dict[str, Any]) -> int:
        agent_id: int = conn.execute(insert(agents).returning(agents.c.id), values).scalar_one()
        if values["tags"]:
            conn.execute(
                insert(agent_tags), [{"agent_id": agent_id, "tag": t} for t in values["tags"]]
            )
        return agent_id

    # -- agents ------------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Agent:
        now = self.now()
        meta = AgentMetadata(created_at=now, updated_at=now)
        values = _config_values(config) | _metadata_values(meta, 0)

        def work(conn: Connection) -> None:
            if conn.execute(select(agents.c.id).where(agents.c.name == config.name)).first():
                raise AgentExistsError(config.name)
            self._insert_agent(conn, values)

        self._write(work, name=config.name)
        self._notify(config.name)
        return Agent.model_construct(**dict(config), metadata=meta)

    def get(self, name: str) -> Agent:
        with self._read() as conn:
            return _agent_from_row(self._locate(conn, name))

    def exists(self, name: str) -> bool:
        with self._read() as conn:
            return (
                conn.execute(select(agents.c.id).where(agents.c.name == name)).first() is not None
            )

    def list_agents(self) -> list[Agent]:
        with self._read() as conn:
            rows = conn.execute(select(*_AGENT_COLUMNS).order_by(agents.c.name))
            return [_agent_from_row(row) for row in rows]

    def list_names(self) -> list[str]:
        with self._read() as conn:
            return list(conn.execute(select(agents.c.name).order_by(agents.c.name)).scalars())

    def update(self, name: str, changes: AgentUpdate, expected_version: int | None = None) -> Agent:
        fields = changes.changes()
        if not fields:
            raise NoChangesError(name)

        def work(conn: Connection) -> Agent:
            row = self._locate(conn, name, for_update=True)
            if expected_version is not None and row.version != expected_version:
                raise VersionConflictError(name, expected_version, row.version)
            current = _agent_from_row(row)
            # Validate the merged result with the same model as create: one set of rules.
            merged = AgentConfig.model_validate(dict(current.config) | fields)
            values = _config_values(merged)
            values["updated_at"] = self.now()
            values["version"] = row.version + 1
            result = conn.execute(
                update(agents)
                .where(agents.c.id == row.id, agents.c.version == row.version)
                .values(values)
            )
            if result.rowcount != 1:  # someone else got in between (no row lock on this engine)
                raise VersionConflictError(name, row.version, row.version + 1)
            if "tags" in fields:
                conn.execute(delete(agent_tags).where(agent_tags.c.agent_id == row.id))
                if merged.tags:
                    conn.execute(
                        insert(agent_tags), [{"agent_id": row.id, "tag": t} for t in merged.tags]
                    )
            meta = current.metadata.model_copy(
                update={"updated_at": values["updated_at"], "version": values["version"]}
            )
            return Agent.model_construct(**dict(merged), metadata=meta)

        agent = self._write(work)
        self._notify(name)
        return agent

    def delete(self, name: str, delete_history: bool = True) -> Agent:
        def work(conn: Connection) -> Agent:
            row = self._locate(conn, name, for_update=True)
            if delete_history:
                conn.execute(delete(executions).where(executions.c.agent_id == row.id))
            else:
                conn.execute(
                    update(executions).where(executions.c.agent_id == row.id).values(agent_id=None)
                )
            conn.execute(delete(agent_tags).where(agent_tags.c.agent_id == row.id))
            conn.execute(delete(agents).where(agents.c.id == row.id))
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
        def work(conn: Connection) -> Agent:
            source = _agent_from_row(self._locate(conn, source_name))
            overrides: dict[str, Any] = {
                "name": new_name,
                "description": description
                if description is not None
                else _clone_description(source.description),
            }
            if tags is not None:
                overrides["tags"] = tags
            config = AgentConfig.model_validate(dict(source.config) | overrides)
            if conn.execute(select(agents.c.id).where(agents.c.name == new_name)).first():
                raise AgentExistsError(new_name)
            now = self.now()
            meta = AgentMetadata(created_at=now, updated_at=now)
            self._insert_agent(conn, _config_values(config) | _metadata_values(meta, 0))
            return Agent.model_construct(**dict(config), metadata=meta)

        agent = self._write(work, name=new_name)
        self._notify(new_name)
        return agent

    # -- search ------------------------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Agent]:
        stmt = select(*_AGENT_COLUMNS)
        conditions: list[ColumnElement[bool]] = []
        if query.query:
            conditions.extend(self._text_conditions(query.query))
        if query.stratum is not None:
            conditions.append(agents.c.stratum == query.stratum)
        if query.tools:
            conditions.append(agents.c.tools_mask.in_(masks_containing(query.tools)))
        for tag in query.tags or ():
            conditions.append(
                agents.c.id.in_(select(agent_tags.c.agent_id).where(agent_tags.c.tag == tag))
            )
        if query.created_after is not None:
            conditions.append(agents.c.created_at >= query.created_after)
        if query.created_before is not None:
            conditions.append(agents.c.created_at <= query.created_before)
        if query.min_executions is not None:
            conditions.append(agents.c.execution_count >= query.min_executions)
        stmt = stmt.where(and_(True, *conditions)).order_by(*_SORTS[query.sort_by])
        with self._read() as conn:
            return [_agent_from_row(row) for row in conn.execute(stmt.limit(query.limit))]

    def _text_conditions(self, query: str) -> list[ColumnElement[bool]]:
        """Every word must be a case-insensitive substring of the name or the description.

        On SQLite, words of three characters or more go through the FTS5 trigram index (one
        MATCH for all of them); on PostgreSQL the pg_trgm indexes serve the LIKE on ``lower()``.
        """
        words = query.lower().split()
        conditions: list[ColumnElement[bool]] = []
        if self._engine.dialect.name == "sqlite":
            indexed = [w for w in words if len(w) >= FTS_MIN_WORD]
            if indexed:
                phrases = " AND ".join('"' + w.replace('"', '""') + '"' for w in indexed)
                conditions.append(agents.c.id.in_(_FTS_MATCH.bindparams(fts_query=phrases)))
            words = [w for w in words if len(w) < FTS_MIN_WORD]
        for word in words:
            pattern = f"%{escape_like(word)}%"
            conditions.append(
                or_(
                    func.lower(agents.c.name).like(pattern, escape="\\"),
                    func.lower(agents.c.description).like(pattern, escape="\\"),
                )
            )
        return conditions

    def count_by_stratum(self) -> dict[str | None, int]:
        counts: dict[str | None, int] = dict.fromkeys(STRATA, 0)
        with self._read() as conn:
            rows = (
                conn.execute(select(agents.c.stratum, func.count()).group_by(agents.c.stratum))
                .tuples()
                .all()
            )
        for stratum, count in rows:
            counts[stratum] = int(count)
        return counts

    # -- history -----------------------------------------------------------------------------------

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        ts = bindparam("ts", record.timestamp, type_=UtcDateTime())
        bump = (
            update(agents)
            .where(agents.c.name == name)
            .values(
                execution_count=agents.c.execution_count + 1,
                total_executions=agents.c.total_executions + 1,
                success_count=agents.c.success_count + int(record.success),
                error_count=agents.c.error_count + int(not record.success),
                last_executed_at=case(
                    (
                        or_(agents.c.last_executed_at.is_(None), agents.c.last_executed_at < ts),
                        ts,
                    ),
                    else_=agents.c.last_executed_at,
                ),
            )
            .returning(agents.c.id)
        )

        def work(conn: Connection) -> None:
            agent_id = conn.execute(bump).scalar_one_or_none()
            if agent_id is None:
                raise AgentNotFoundError(name)
            conn.execute(
                insert(executions),
                {"agent_id": agent_id, "agent_name": name} | _record_values(record),
            )
            self._trim(conn, agent_id)

        self._write(work)
        self._notify(name)

    @staticmethod
    def _trim(conn: Connection, agent_id: int) -> None:
        """Drop all but the newest ``HISTORY_MAX_RECORDS`` records of one agent."""
        boundary = (
            select(executions.c.id)
            .where(executions.c.agent_id == agent_id)
            .order_by(executions.c.id.desc())
            .limit(1)
            .offset(HISTORY_MAX_RECORDS)
            .scalar_subquery()
        )
        conn.execute(
            delete(executions).where(executions.c.agent_id == agent_id, executions.c.id <= boundary)
        )

    def get_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory:
        limit = max(1, min(limit, HISTORY_MAX_RECORDS))
        with self._read() as conn, conn.begin():
            row = conn.execute(
                select(agents.c.id, agents.c.total_executions).where(agents.c.name == name)
            ).first()
            if row is None:
                raise AgentNotFoundError(name)
            stmt = select(*_EXECUTION_COLUMNS).where(executions.c.agent_id == row.id)
            if errors_only:
                stmt = stmt.where(executions.c.success.is_(False))
            records = conn.execute(stmt.order_by(executions.c.id.desc()).limit(limit))
            return ExecutionHistory.model_construct(
                agent_name=name,
                executions=[_record_from_row(r) for r in records],
                total_executions=row.total_executions,
            )

    def execution_stats(self, name: str) -> ExecutionStats:
        with self._read() as conn, conn.begin():
            row = self._locate(conn, name)
            retained, average = (
                conn.execute(
                    select(func.count(), func.avg(executions.c.duration_seconds)).where(
                        executions.c.agent_id == row.id
                    )
                )
                .tuples()
                .one()
            )
        return ExecutionStats(
            total_executions=row.total_executions,
            success_count=row.success_count,
            error_count=row.error_count,
            retained=retained,
            average_duration_seconds=None if average is None else float(average),
            last_executed_at=row.last_executed_at,
        )

    def archived_history(self, name: str) -> ExecutionHistory:
        archived = and_(executions.c.agent_id.is_(None), executions.c.agent_name == name)
        with self._read() as conn, conn.begin():
            total = conn.execute(select(func.count()).where(archived)).scalar_one()
            rows = conn.execute(
                select(*_EXECUTION_COLUMNS)
                .where(archived)
                .order_by(executions.c.id.desc())
                .limit(HISTORY_MAX_RECORDS)
            )
            return ExecutionHistory.model_construct(
                agent_name=name,
                executions=[_record_from_row(r) for r in rows],
                total_executions=total,
            )

    # -- interchange -------------------------------------------------------------------------------

    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        last_name = ""
        while True:
            with self._read() as conn, conn.begin():
                rows = conn.execute(
                    select(*_AGENT_COLUMNS)
                    .where(agents.c.name > last_name)
                    .order_by(agents.c.name)
                    .limit(page_size)
                ).all()
                if not rows:
                    return
                by_id: dict[int, list[ExecutionRecord]] = {row.id: [] for row in rows}
                records = conn.execute(
                    select(executions.c.agent_id, *_EXECUTION_COLUMNS)
                    .where(executions.c.agent_id.in_(list(by_id)))
                    .order_by(executions.c.agent_id, executions.c.id.desc())
                )
                for record in records:
                    by_id[record.agent_id].append(_record_from_row(record))
            for row in rows:
                history = by_id[row.id]
                yield (
                    _agent_from_row(row),
                    ExecutionHistory.model_construct(
                        agent_name=row.name,
                        executions=history,
                        total_executions=row.total_executions,
                    )
                    if history or row.total_executions
                    else None,
                )
            last_name = rows[-1].name

    def bulk_put(
        self, items: Sequence[ImportItem], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        return self.bulk_put_stream(lambda: items, on_conflict)

    def bulk_put_stream(
        self, items: Callable[[], Iterable[ImportItem]], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        def work(conn: Connection) -> BulkPutResult:
            result = BulkPutResult()
            for item in items():
                result.outcomes[item.name] = self._put(conn, item, on_conflict)
            return result

        result = self._write(work)
        self._notify(*(n for n, outcome in result.outcomes.items() if outcome != "skipped"))
        return result

    def _put(
        self, conn: Connection, item: ImportItem, on_conflict: ConflictPolicy
    ) -> ImportOutcome:
        existing = conn.execute(select(agents.c.id).where(agents.c.name == item.name)).first()
        outcome: ImportOutcome = "imported"
        agent_id: int
        if item.agent is not None:
            if existing is not None:
                if on_conflict == "fail":
                    raise AgentExistsError(item.name)
                if on_conflict == "skip":
                    return "skipped"
                conn.execute(delete(executions).where(executions.c.agent_id == existing.id))
                conn.execute(delete(agent_tags).where(agent_tags.c.agent_id == existing.id))
                conn.execute(delete(agents).where(agents.c.id == existing.id))
                outcome = "replaced"
            total = (
                item.history.total_executions
                if item.history is not None
                else item.agent.metadata.execution_count
            )
            values = _config_values(item.agent) | _metadata_values(item.agent.metadata, total)
            agent_id = self._insert_agent(conn, values)
        else:
            if existing is None:
                raise AgentNotFoundError(item.name)
            agent_id = existing.id
            has_history = conn.execute(
                select(executions.c.id).where(executions.c.agent_id == agent_id).limit(1)
            ).first()
            if has_history is not None:
                if on_conflict == "fail":
                    raise AgentExistsError(item.name)
                if on_conflict == "skip":
                    return "skipped"
                conn.execute(delete(executions).where(executions.c.agent_id == agent_id))
                outcome = "replaced"
            if item.history is not None:
                conn.execute(
                    update(agents)
                    .where(agents.c.id == agent_id)
                    .values(total_executions=item.history.total_executions)
                )
        if item.history is not None and item.history.executions:
            # Stored oldest first so that ids order the records newest-last, as live runs do.
            newest = item.history.executions[:HISTORY_MAX_RECORDS]
            conn.execute(
                insert(executions),
                [
                    {"agent_id": agent_id, "agent_name": item.name} | _record_values(r)
                    for r in reversed(newest)
                ],
            )
        return outcome


__all__ = [
    "BUILDER",
    "AgentRepository",
    "BulkPutResult",
    "ConflictPolicy",
    "ImportItem",
    "Mirror",
    "SqlAgentRepository",
]
