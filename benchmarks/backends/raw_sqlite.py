"""The practical limit: the same operations in hand-written SQL on the stdlib ``sqlite3`` driver.

Same durability and integrity as acti_store's SQLite default (WAL, ``synchronous=NORMAL``, foreign
keys on, ``BEGIN IMMEDIATE`` for writes, one transaction per operation, several statements in it)
and the same tables, keys and side tables as an acti_store SQLite store (``raw_sqlite_schema``):
an agent row with JSON ``tools``/``tags`` and a tools bit mask, a tags table, an executions table
with an ``(agent_id, id)`` index, and a ``tenant`` column on every table, leading the keys
acti_store leads with it (acti_store's default tenant, ``'default'``). Counters are incremented in
SQL and the 50-record FIFO is trimmed in the same transaction as the insert. Timestamps are stored
as the contract's ISO text, so reading an agent needs no conversion. One connection, kept open.

What each operation writes, row for row what acti_store writes on SQLite (its statements traced
with ``sqlite3``'s trace callback; the rows compared table by table after the same workload):

- create: the agent row; one ``agent_tags`` row per tag; its version snapshot (``agent_versions``:
  description, system prompt, tools and tags as JSON, model, stratum, as of version 1, at its
  ``updated_at``); the change feed: the tenant's ``agent_change_counters`` row bumped (an upsert
  returning the new number) and one ``agent_changes`` row (``created``, the agent, its version).
- update: the agent row (``version + 1``, ``updated_at``); the tags replaced if they changed; the
  new version's snapshot; one ``updated`` change with its counter bump.
- record_execution: the agent's counters; one ``executions`` row (with the ``agent_version`` that
  ran); the per-version run counter (``agent_version_stats`` upsert: runs, successes, errors,
  total duration, last run, keyed by ``(agent_id, version)``); the FIFO trim.
- import / bulk_load: per agent its row, tags, snapshot (message ``'imported'``) and records
  (``agent_version`` NULL), then one ``created`` change per agent numbered by one counter bump, all
  in one transaction. No run counters (acti_store writes none on import either).
- The search index: acti_store's FTS5 trigram table ``agents_fts`` and its log ``agents_fts_log``,
  maintained by the same triggers (a log row per created agent and per update that changes the
  description; every 256th log row moves the log into the index, in that write's transaction).
  Search still reads with ``LIKE`` (its answers are every other backend's reference).
- get, history, search, export: write nothing; they read the tenant's rows (``tenant = ?``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from acti_store.documents import agent_document as acti_agent_document
from acti_store.documents import history_document as acti_history_document
from acti_store.models import AgentConfig, AgentUpdate, ExecutionRecord, SearchQuery

from ..workload import BulkItem
from . import Backend, Clock, Document, StoreSpec
from .plain import (
    HISTORY_MAX,
    dumps,
    iso,
    masks_containing,
    new_agent_document,
    read_export,
    record_document,
    tools_mask,
)
from .raw_sqlite_schema import (
    AGENT_COLUMNS,
    BUMP,
    BUMP_CHANGE_COUNTER,
    BUMP_VERSION_STATS,
    EXPORT_AGENTS,
    EXPORT_RECORDS,
    GET,
    GET_FOR_UPDATE,
    HISTORY,
    INSERT_AGENT,
    INSERT_CHANGE,
    INSERT_RECORD,
    INSERT_TAG,
    INSERT_VERSION,
    SCHEMA,
    SORTS,
    TENANT,
    TRIM,
    UPDATE_AGENT,
)


def _agent(row: Sequence[Any]) -> Document:
    return {
        "name": row[0],
        "description": row[1],
        "system_prompt": row[2],
        "tools": json.loads(row[3]),
        "model": row[4],
        "stratum": row[5],
        "tags": json.loads(row[6]),
        "_metadata": {
            "created_at": row[7],
            "updated_at": row[8],
            "last_executed_at": row[9],
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
        "timestamp": row[1],
        "task": row[2],
        "result_summary": row[3],
        "success": bool(row[4]),
        "duration_seconds": row[5],
        "tool_calls_count": row[6],
        "error_type": row[7],
    }


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _agent_values(doc: Document, total: int) -> tuple[Any, ...]:
    meta = doc["_metadata"]
    return (
        TENANT,
        doc["name"],
        doc["description"],
        doc["system_prompt"],
        json.dumps(doc["tools"]),
        tools_mask(doc["tools"]),
        doc["model"],
        doc["stratum"],
        json.dumps(doc["tags"]),
        meta["created_at"],
        meta["updated_at"],
        meta["last_executed_at"],
        meta["version"],
        meta["builder"],
        meta["execution_count"],
        meta["success_count"],
        meta["error_count"],
        total,
    )


def _version_values(agent_id: int, agent: tuple[Any, ...], message: str | None) -> tuple[Any, ...]:
    """The snapshot row of ``agent`` (``_agent_values`` order), as acti_store's ``agent_versions``:
    the configuration (tools and tags as the same JSON text) as of its version, at its
    ``updated_at``."""
    description, prompt, tools, _, model, stratum, tags = agent[2:9]
    updated_at, version = agent[10], agent[12]
    config = (description, prompt, tools, model, stratum, tags)
    return (agent_id, version, *config, updated_at, message, TENANT)


def _record_values(
    agent_id: int, name: str, record: Document, version: int | None
) -> tuple[Any, ...]:
    return (
        agent_id,
        name,
        record["execution_id"],
        record["timestamp"],
        record["task"],
        record["result_summary"],
        record["success"],
        record["duration_seconds"],
        record["tool_calls_count"],
        record["error_type"],
        version,
        TENANT,
    )


def _feed(db: sqlite3.Connection, kind: str, changed: Sequence[tuple[str, int]], at: str) -> None:
    """Append one change row per ``(agent, version)`` to the tenant's feed, numbered from its
    counter (taken once for all of them), in the caller's transaction: acti_store's change feed."""
    (last,) = db.execute(BUMP_CHANGE_COUNTER, (TENANT, len(changed))).fetchone()
    first = last - len(changed) + 1
    rows = [
        (TENANT, first + i, kind, name, version, at) for i, (name, version) in enumerate(changed)
    ]
    if len(rows) == 1:
        db.execute(INSERT_CHANGE, rows[0])
    else:
        db.executemany(INSERT_CHANGE, rows)


class RawSqliteBackend(Backend):
    def __init__(self, spec: StoreSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        self._db = sqlite3.connect(spec.location, isolation_level=None)
        for pragma in (
            "busy_timeout = 30000",
            "journal_mode = WAL",
            "synchronous = NORMAL",
            "foreign_keys = ON",
        ):
            self._db.execute(f"PRAGMA {pragma}")
        self._db.executescript(SCHEMA)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _put(
        self, db: sqlite3.Connection, doc: Document, history: Document | None, message: str | None
    ) -> tuple[str, int]:
        """The agent row, its tags, its version snapshot and its records; ``(name, version)``."""
        total = history["total_executions"] if history else doc["_metadata"]["execution_count"]
        values = _agent_values(doc, total)
        (agent_id,) = db.execute(INSERT_AGENT, values).fetchone()
        if doc["tags"]:
            db.executemany(INSERT_TAG, [(tag, agent_id, TENANT) for tag in doc["tags"]])
        db.execute(INSERT_VERSION, _version_values(agent_id, values, message))
        name = doc["name"]
        if history and history["executions"]:
            db.executemany(
                INSERT_RECORD,
                [
                    _record_values(agent_id, name, r, None)
                    for r in reversed(history["executions"][:HISTORY_MAX])
                ],
            )
        return name, doc["_metadata"]["version"]

    def _put_all(self, items: Iterable[tuple[Document, Document | None]]) -> None:
        """Import: every agent as ``_put`` writes it (snapshot message ``'imported'``), then one
        ``created`` change per agent, numbered by one counter bump, in one transaction."""
        with self._write() as db:
            changed = [self._put(db, doc, history, "imported") for doc, history in items]
            if changed:
                _feed(db, "created", changed, iso(self.clock()))

    # -- operations --------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Document:
        now = iso(self.clock())
        doc = new_agent_document(config, now)
        with self._write() as db:
            _feed(db, "created", [self._put(db, doc, None, None)], now)
        return doc

    def get(self, name: str) -> Document:
        found = self._db.execute(GET, (TENANT, name)).fetchone()
        if found is None:
            raise KeyError(name)
        return _agent(found)

    def update(self, name: str, changes: AgentUpdate) -> Document:
        fields = changes.changes()
        now = iso(self.clock())
        with self._write() as db:
            row = db.execute(GET_FOR_UPDATE, (TENANT, name)).fetchone()
            if row is None:
                raise KeyError(name)
            agent_id = row[0]
            doc = _agent(row[1:])
            for field, value in fields.items():
                doc[field] = list(value) if isinstance(value, list) else value
            meta = doc["_metadata"]
            meta["updated_at"] = now
            meta["version"] += 1
            tools = json.dumps(doc["tools"])
            tags = json.dumps(doc["tags"])
            db.execute(
                UPDATE_AGENT,
                (
                    doc["description"],
                    doc["system_prompt"],
                    tools,
                    tools_mask(doc["tools"]),
                    doc["model"],
                    doc["stratum"],
                    tags,
                    now,
                    meta["version"],
                    agent_id,
                ),
            )
            if "tags" in fields:
                db.execute("DELETE FROM agent_tags WHERE agent_id = ?", (agent_id,))
                db.executemany(INSERT_TAG, [(tag, agent_id, TENANT) for tag in doc["tags"]])
            db.execute(
                INSERT_VERSION,
                (
                    agent_id,
                    meta["version"],
                    doc["description"],
                    doc["system_prompt"],
                    tools,
                    doc["model"],
                    doc["stratum"],
                    tags,
                    now,
                    None,
                    TENANT,
                ),
            )
            _feed(db, "updated", [(name, meta["version"])], now)
        return doc

    def search(self, query: SearchQuery) -> list[Document]:
        where: list[str] = ["tenant = ?"]
        params: list[Any] = [TENANT]
        if query.query:
            # SQLite's LIKE is case-insensitive for ASCII, as lower() is: same semantics.
            for word in query.query.lower().split():
                pattern = f"%{_escape_like(word)}%"
                where.append("(name LIKE ? ESCAPE '\\' OR description LIKE ? ESCAPE '\\')")
                params += (pattern, pattern)
        if query.stratum is not None:
            where.append("stratum = ?")
            params.append(query.stratum)
        if query.tools:
            masks = masks_containing(query.tools)
            where.append(f"tools_mask IN ({', '.join('?' * len(masks))})")
            params += masks
        for tag in query.tags or ():
            where.append("id IN (SELECT agent_id FROM agent_tags WHERE tag = ?)")
            params.append(tag)
        if query.created_after is not None:
            where.append("created_at >= ?")
            params.append(iso(query.created_after))
        if query.created_before is not None:
            where.append("created_at <= ?")
            params.append(iso(query.created_before))
        if query.min_executions is not None:
            where.append("execution_count >= ?")
            params.append(query.min_executions)
        sql = f"SELECT {AGENT_COLUMNS} FROM agents WHERE " + " AND ".join(where)
        sql += f" ORDER BY {SORTS[query.sort_by]} LIMIT ?"
        params.append(query.limit)
        return [_agent(row) for row in self._db.execute(sql, params)]

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        ts = iso(record.timestamp)
        with self._write() as db:
            success, error = int(record.success), int(not record.success)
            row = db.execute(BUMP, (success, error, ts, ts, TENANT, name)).fetchone()
            if row is None:
                raise KeyError(name)
            agent_id, version = row
            db.execute(
                INSERT_RECORD, _record_values(agent_id, name, record_document(record), version)
            )
            db.execute(
                BUMP_VERSION_STATS,
                (agent_id, version, success, error, record.duration_seconds, ts, TENANT),
            )
            db.execute(TRIM, (agent_id, agent_id))

    def get_history(self, name: str, limit: int) -> Document:
        rows = self._db.execute(HISTORY, (TENANT, name, limit)).fetchall()
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
        db.execute("BEGIN")  # one snapshot for the whole export
        try:
            agents = db.execute(EXPORT_AGENTS, (TENANT,))
            for row in agents:
                doc = _agent(row[2:])
                name = doc["name"]
                with open(directory / f"{name}.json", "w", encoding="utf-8") as out:
                    out.write(dumps(doc))
                if not row[1]:
                    continue  # never run: no history file (created lazily, as in the contract)
                records = db.execute(EXPORT_RECORDS, (row[0],))
                history = {
                    "agent_name": name,
                    "executions": [_record(r) for r in records],
                    "total_executions": row[1],
                }
                with open(directory / f"{name}_history.json", "w", encoding="utf-8") as out:
                    out.write(dumps(history))
        finally:
            db.execute("COMMIT")
        return "hand-written: one SELECT over agents, one per run agent's history"

    def import_all(self, directory: Path) -> str:
        self._put_all(read_export(directory))
        return "hand-written: json.loads + INSERTs, one transaction"

    def bulk_load(self, items: Sequence[BulkItem]) -> None:
        self._put_all(
            (acti_agent_document(a), acti_history_document(h) if h is not None else None)
            for a, h in items
        )

    def agent_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def history_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def close(self) -> None:
        self._db.close()


BACKEND = RawSqliteBackend
