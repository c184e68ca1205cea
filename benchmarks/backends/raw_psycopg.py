"""The practical limit on PostgreSQL: the same operations in hand-written SQL on psycopg 3.

Same semantics as ``raw_sqlite`` (the reference every answer is compared with), written the way a
PostgreSQL expert would, without SQLAlchemy, and writing the rows acti_store writes (its tables,
``raw_psycopg_schema``; every row carries acti_store's default tenant, every lookup asks for it):

* one connection, kept open, in autocommit mode: every operation is **one statement** (its own
  transaction, one round trip), server-side prepared on first use (``prepare_threshold=0``);
* ``create`` and ``update`` are one statement of data-modifying CTEs each, writing what
  acti_store's transaction writes: the agent row (``update``: ``SET f = COALESCE(%s, f) ...
  RETURNING``, no read first), the version's **snapshot** in ``agent_versions`` (its
  configuration, from the row just written), the tenant's change **counter** moved by one in
  ``agent_change_counters`` (its row lock orders the numbers as the commits) and the **change**
  row numbered with it in ``agent_changes`` (``created`` / ``updated``), then ``pg_notify`` for
  the feed's listeners, as acti_store sends in the same transaction;
* ``record_execution`` is one statement of data-modifying CTEs: bump the counters (the row lock
  serialises concurrent runs of one agent, and ``RETURNING`` gives the new total and the version
  that runs), insert the record numbered with that total (``seq``, with the version that ran),
  move that version's **run counters** (``agent_version_stats``: runs, successes, errors, total
  duration, last run; an upsert), trim the FIFO to the 50 newest (``seq <= total - 50``, which
  does not depend on what the statement's snapshot sees, so concurrent runs trim exactly); no
  change row: acti_store writes none for a run;
* tags are a ``text[]`` with a GIN index (``@>``; acti_store keeps a row per tag in
  ``agent_tags`` for the same job), the tools a bit mask; word search is a ``LIKE``
  on ``lower(name || '\\n' || description)`` with a ``pg_trgm`` GIN index on that expression.
  ``name`` and ``description`` use the ``"C"`` collation, so ``lower()`` folds ASCII only and
  ``ORDER BY name`` is byte order: exactly SQLite's ``LIKE`` and ``BINARY`` semantics. Word
  patterns contain no whitespace, so a match cannot straddle the newline between the two fields;
* reads (get, history, search, export) write nothing, as acti_store's; searches run unprepared
  so that every one gets a plan for its own patterns (a generic plan cannot tell a selective word
  from ``%``);
* export reads one ``REPEATABLE READ`` snapshot through two server-side cursors (agents, and
  every record in the same order); import and ``bulk_load`` write, in one transaction, what
  acti_store's ``bulk_put`` does: ``COPY`` of the agents, of a snapshot of each one's current
  version (message ``imported``) and of the records, then the counter moved by the number of
  agents, a ``created`` change per agent (``COPY``) and one ``pg_notify``.

Its tables go in the schema the run selects (``options=-csearch_path=...`` in the URL); ``pg_trgm``
is created once per database in ``public`` when missing (or used from wherever it is installed).
Durability is the server's default (``synchronous_commit=on``), as for acti_store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import psycopg

from acti_store.documents import agent_document as acti_agent_document
from acti_store.documents import history_document as acti_history_document
from acti_store.models import AgentConfig, AgentUpdate, ExecutionRecord, SearchQuery
from acti_store.tenancy import DEFAULT_TENANT
from acti_store.versioning import IMPORT_MESSAGE

from ..workload import BulkItem
from . import Backend, Clock, Document, StoreSpec
from .plain import (
    HISTORY_MAX,
    dumps,
    iso,
    masks_containing,
    new_agent_document,
    read_export,
    tools_mask,
)
from .raw_psycopg_schema import (
    AGENT_COLUMNS,
    CONFIG_COLUMNS,
    COPY_AGENTS,
    COPY_CHANGES,
    COPY_RECORDS,
    COPY_VERSIONS,
    COUNT_CHANGES,
    CREATE,
    CREATE_TRGM,
    DDL_LOCK,
    LAST_TABLE,
    NOTIFY,
    RECORD,
    RECORD_COLUMNS,
    TABLES,
    TEXT,
    TRGM_INDEX,
    UPDATE,
)

#: The tenant every row belongs to: acti_store's when none is given.
TENANT: Final = DEFAULT_TENANT
CONFIG: Final = [c.strip() for c in CONFIG_COLUMNS.split(",")]
RECORD_FIELDS: Final = [c.strip() for c in RECORD_COLUMNS.split(",")]

GET: Final = f"SELECT {AGENT_COLUMNS} FROM agents WHERE tenant = %s AND name = %s"
HISTORY: Final = (
    "SELECT a.total_executions, "
    + ", ".join(f"e.{c}" for c in RECORD_FIELDS)
    + " FROM agents a LEFT JOIN LATERAL (SELECT * FROM executions x WHERE x.agent_id = a.id "
    "ORDER BY x.seq DESC LIMIT %s) e ON true WHERE a.tenant = %s AND a.name = %s "
    "ORDER BY e.seq DESC"
)
EXPORT_RECORDS: Final = (
    "SELECT e.agent_id, "
    + ", ".join(f"e.{c}" for c in RECORD_FIELDS)
    + " FROM executions e JOIN agents a ON a.id = e.agent_id WHERE a.tenant = %s "
    "ORDER BY a.name, e.seq DESC"
)
SORTS: Final = {
    "name": "name",
    "created_at": "created_at DESC, name",
    "updated_at": "updated_at DESC, name",
    "execution_count": "execution_count DESC, name",
}


def libpq_url(url: str) -> str:
    """A SQLAlchemy URL (``postgresql+psycopg://...``) as libpq takes it (``postgresql://...``)."""
    return re.sub(r"^postgresql\+\w+://", "postgresql://", url)


def _ts(value: Any) -> str | None:
    return None if value is None else iso(value)


def _agent(row: Sequence[Any]) -> Document:
    return {
        "name": row[0],
        "description": row[1],
        "system_prompt": row[2],
        "tools": row[3],
        "model": row[4],
        "stratum": row[5],
        "tags": row[6],
        "_metadata": {
            "created_at": iso(row[7]),
            "updated_at": iso(row[8]),
            "last_executed_at": _ts(row[9]),
            "version": row[10],
            "builder": row[11],
            "execution_count": row[12],
            "success_count": row[13],
            "error_count": row[14],
        },
    }


def _record(row: Sequence[Any]) -> Document:
    return {
        "execution_id": row[0],
        "timestamp": iso(row[1]),
        "task": row[2],
        "result_summary": row[3],
        "success": row[4],
        "duration_seconds": row[5],
        "tool_calls_count": row[6],
        "error_type": row[7],
    }


def _agent_values(doc: Document, total: int | None) -> tuple[Any, ...]:
    """The row of ``doc`` (``INSERT_AGENT``'s columns); ``total`` defaults to its run count."""
    meta = doc["_metadata"]
    return (
        doc["name"],
        doc["description"],
        doc["system_prompt"],
        doc["tools"],
        tools_mask(doc["tools"]),
        doc["model"],
        doc["stratum"],
        doc["tags"],
        meta["created_at"],
        meta["updated_at"],
        meta["last_executed_at"],
        meta["version"],
        meta["builder"],
        meta["execution_count"],
        meta["success_count"],
        meta["error_count"],
        meta["execution_count"] if total is None else total,
    )


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class RawPsycopgBackend(Backend):
    def __init__(self, spec: StoreSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        self._db = psycopg.connect(libpq_url(spec.location), autocommit=True, prepare_threshold=0)
        self._db.execute("SET TIME ZONE 'UTC'", prepare=False)
        self._ensure_tables()

    def _ensure_tables(self) -> None:
        db = self._db
        found = db.execute("SELECT to_regclass(%s) IS NOT NULL", (LAST_TABLE,), prepare=False)
        found = found.fetchone()
        if found and found[0]:
            return
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,), prepare=False)
            for statement in TABLES:
                db.execute(statement, prepare=False)
            ops = self._trigram_ops()
            if ops is not None:
                db.execute(TRGM_INDEX.format(text=TEXT, ops=ops), prepare=False)

    def _trigram_ops(self) -> str | None:
        """The qualified ``gin_trgm_ops`` of ``pg_trgm`` (created in ``public`` if missing), or
        None when the extension cannot be had: word search then scans, with the same answers."""
        db = self._db
        query = (
            "SELECT n.nspname FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace "
            "WHERE x.extname = 'pg_trgm'"
        )
        row = db.execute(query, prepare=False).fetchone()
        if row is None:
            try:
                with db.transaction():  # a savepoint: a refusal must not abort the DDL
                    db.execute(CREATE_TRGM, prepare=False)
            except psycopg.Error:
                return None
            row = db.execute(query, prepare=False).fetchone()
        return None if row is None else f'"{row[0]}".gin_trgm_ops'

    # -- operations --------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Document:
        doc = new_agent_document(config, iso(self.clock()))
        self._db.execute(CREATE, (TENANT, *_agent_values(doc, 0)))
        return doc

    def get(self, name: str) -> Document:
        found = self._db.execute(GET, (TENANT, name)).fetchone()
        if found is None:
            raise KeyError(name)
        return _agent(found)

    def update(self, name: str, changes: AgentUpdate) -> Document:
        fields = changes.changes()
        tools = fields.get("tools")
        tags = fields.get("tags")
        row = self._db.execute(
            UPDATE,
            {
                "description": fields.get("description"),
                "system_prompt": fields.get("system_prompt"),
                "tools": None if tools is None else list(tools),
                "tools_mask": None if tools is None else tools_mask(tools),
                "model": fields.get("model"),
                "stratum": fields.get("stratum"),
                "tags": None if tags is None else list(tags),
                "at": self.clock(),
                "tenant": TENANT,
                "name": name,
            },
        ).fetchone()
        if row is None:
            raise KeyError(name)
        return _agent(row)

    def search(self, query: SearchQuery) -> list[Document]:
        where = ["tenant = %s"]
        params: list[Any] = [TENANT]
        if query.query:
            for word in query.query.lower().split():
                where.append(f"{TEXT} LIKE %s")
                params.append(f"%{_escape_like(word)}%")
        if query.stratum is not None:
            where.append("stratum = %s")
            params.append(query.stratum)
        if query.tools:
            where.append("tools_mask = ANY(%s::smallint[])")
            params.append(masks_containing(query.tools))
        if query.tags:
            where.append("tags @> %s::text[]")
            params.append(list(query.tags))
        if query.created_after is not None:
            where.append("created_at >= %s")
            params.append(query.created_after)
        if query.created_before is not None:
            where.append("created_at <= %s")
            params.append(query.created_before)
        if query.min_executions is not None:
            where.append("execution_count >= %s")
            params.append(query.min_executions)
        sql = f"SELECT {AGENT_COLUMNS} FROM agents WHERE " + " AND ".join(where)
        sql += f" ORDER BY {SORTS[query.sort_by]} LIMIT %s"
        params.append(query.limit)
        return [_agent(row) for row in self._db.execute(sql, params, prepare=False)]

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        row = self._db.execute(
            RECORD,
            {
                "ok": int(record.success),
                "failed": int(not record.success),
                "at": record.timestamp,
                "tenant": TENANT,
                "name": name,
                "execution_id": record.execution_id,
                "task": record.task,
                "result_summary": record.result_summary,
                "success": record.success,
                "duration_seconds": record.duration_seconds,
                "tool_calls_count": record.tool_calls_count,
                "error_type": record.error_type,
            },
        ).fetchone()
        if row is None:
            raise KeyError(name)

    def get_history(self, name: str, limit: int) -> Document:
        rows = self._db.execute(HISTORY, (limit, TENANT, name)).fetchall()
        if not rows:
            raise KeyError(name)
        return {
            "agent_name": name,
            "executions": [_record(row[1:]) for row in rows if row[1] is not None],
            "total_executions": rows[0][0],
        }

    # -- interchange -------------------------------------------------------------------------------

    def export_all(self, directory: Path) -> str:
        db = self._db
        with db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", prepare=False)
            agents = db.cursor(name="export_agents")
            agents.itersize = 2_000
            agents.execute(
                f"SELECT id, total_executions, {AGENT_COLUMNS} FROM agents WHERE tenant = %s "
                "ORDER BY name",
                (TENANT,),
            )
            records = db.cursor(name="export_records")
            records.itersize = 5_000
            records.execute(EXPORT_RECORDS, (TENANT,))
            pending = next(records, None)
            for row in agents:
                doc = _agent(row[2:])
                name = doc["name"]
                with open(directory / f"{name}.json", "w", encoding="utf-8") as out:
                    out.write(dumps(doc))
                executions = []
                while pending is not None and pending[0] == row[0]:
                    executions.append(_record(pending[1:]))
                    pending = next(records, None)
                if not row[1]:
                    continue  # never run: no history file (created lazily, as in the contract)
                history = {
                    "agent_name": name,
                    "executions": executions,
                    "total_executions": row[1],
                }
                with open(directory / f"{name}_history.json", "w", encoding="utf-8") as out:
                    out.write(dumps(history))
            agents.close()
            records.close()
        return "hand-written: one snapshot, two server-side cursors (agents, records) merged"

    def import_all(self, directory: Path) -> str:
        items = list(read_export(directory))
        self._copy_in(items)
        return (
            "hand-written: json.loads + COPY agents, snapshots, records, changes; one transaction"
        )

    def bulk_load(self, items: Sequence[BulkItem]) -> None:
        self._copy_in(
            [
                (acti_agent_document(a), acti_history_document(h) if h is not None else None)
                for a, h in items
            ]
        )
        self._db.execute("ANALYZE agents", prepare=False)

    def _copy_in(self, items: Sequence[tuple[Document, Document | None]]) -> None:
        db = self._db
        with db.transaction(), db.cursor() as cur:
            cur.execute(
                "SELECT nextval(pg_get_serial_sequence('agents', 'id')) "
                "FROM generate_series(1, %s)",
                (len(items),),
                prepare=False,
            )
            ids = [row[0] for row in cur]
            with cur.copy(COPY_AGENTS) as copy:
                for agent_id, (doc, history) in zip(ids, items, strict=True):
                    total = history["total_executions"] if history else None
                    copy.write_row((agent_id, TENANT, *_agent_values(doc, total)))
            with cur.copy(COPY_VERSIONS) as copy:  # each agent's current version, as imported
                for agent_id, (doc, _) in zip(ids, items, strict=True):
                    meta = doc["_metadata"]
                    config = [doc[c] for c in CONFIG]
                    row = (agent_id, meta["version"], TENANT, *config, meta["updated_at"])
                    copy.write_row((*row, IMPORT_MESSAGE))
            with cur.copy(COPY_RECORDS) as copy:
                for agent_id, (doc, history) in zip(ids, items, strict=True):
                    if not history:
                        continue
                    total = history["total_executions"]
                    for i, r in enumerate(history["executions"][:HISTORY_MAX]):
                        fields = [r[c] for c in RECORD_FIELDS]
                        copy.write_row((agent_id, total - i, TENANT, doc["name"], None, *fields))
            # The feed, last (the counter's row lock is held until the commit): one "created"
            # change per agent, numbered after the tenant's last, and the listeners woken.
            cur.execute(COUNT_CHANGES, (TENANT, len(items)))
            last = cur.fetchone()
            assert last is not None
            first, at = last[0] - len(items), self.clock()
            with cur.copy(COPY_CHANGES) as copy:
                for k, (doc, _) in enumerate(items, 1):
                    version = doc["_metadata"]["version"]
                    copy.write_row((TENANT, first + k, "created", doc["name"], version, at))
            cur.execute(NOTIFY, (TENANT,))

    def agent_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def history_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def close(self) -> None:
        self._db.close()


BACKEND = RawPsycopgBackend
