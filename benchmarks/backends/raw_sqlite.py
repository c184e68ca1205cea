"""The practical limit: the same operations in hand-written SQL on the stdlib ``sqlite3`` driver.

Same durability and integrity as acti_store's SQLite default (WAL, ``synchronous=NORMAL``, foreign
keys on, ``BEGIN IMMEDIATE`` for writes, one transaction per operation) and a similar schema: an
agent row with JSON ``tools``/``tags`` and a tools bit mask, a tags table, an executions table
with an ``(agent_id, id)`` index; counters are incremented in SQL and the 50-record FIFO is trimmed
in the same transaction as the insert. Timestamps are stored as the contract's ISO text, so
reading an agent needs no conversion. One connection, kept open.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

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

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS agents (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    system_prompt TEXT NOT NULL,
    tools TEXT NOT NULL,
    tools_mask INTEGER NOT NULL,
    model TEXT NOT NULL,
    stratum TEXT,
    tags TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_executed_at TEXT,
    version INTEGER NOT NULL,
    builder TEXT NOT NULL,
    execution_count INTEGER NOT NULL,
    success_count INTEGER NOT NULL,
    error_count INTEGER NOT NULL,
    total_executions INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_agents_stratum ON agents (stratum);
CREATE INDEX IF NOT EXISTS ix_agents_tools_mask ON agents (tools_mask);
CREATE INDEX IF NOT EXISTS ix_agents_created_at ON agents (created_at);
CREATE INDEX IF NOT EXISTS ix_agents_updated_at ON agents (updated_at);
CREATE INDEX IF NOT EXISTS ix_agents_execution_count ON agents (execution_count);
CREATE TABLE IF NOT EXISTS agent_tags (
    tag TEXT NOT NULL,
    agent_id INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, agent_id)
);
CREATE INDEX IF NOT EXISTS ix_agent_tags_agent_id ON agent_tags (agent_id);
CREATE TABLE IF NOT EXISTS executions (
    id INTEGER PRIMARY KEY,
    agent_id INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    agent_name TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    task TEXT NOT NULL,
    result_summary TEXT NOT NULL,
    success INTEGER NOT NULL,
    duration_seconds REAL NOT NULL,
    tool_calls_count INTEGER NOT NULL,
    error_type TEXT
);
CREATE INDEX IF NOT EXISTS ix_executions_agent_id_id ON executions (agent_id, id);
CREATE INDEX IF NOT EXISTS ix_executions_agent_name_id ON executions (agent_name, id);
"""

AGENT_COLUMNS: Final = (
    "name, description, system_prompt, tools, model, stratum, tags, created_at, updated_at, "
    "last_executed_at, version, builder, execution_count, success_count, error_count"
)
RECORD_COLUMNS: Final = (
    "execution_id, timestamp, task, result_summary, success, duration_seconds, "
    "tool_calls_count, error_type"
)
INSERT_AGENT: Final = (
    "INSERT INTO agents (name, description, system_prompt, tools, tools_mask, model, stratum, "
    "tags, created_at, updated_at, last_executed_at, version, builder, execution_count, "
    "success_count, error_count, total_executions) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
)
INSERT_TAG: Final = "INSERT INTO agent_tags (tag, agent_id) VALUES (?, ?)"
INSERT_RECORD: Final = (
    f"INSERT INTO executions (agent_id, agent_name, {RECORD_COLUMNS}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
BUMP: Final = (
    "UPDATE agents SET execution_count = execution_count + 1, "
    "total_executions = total_executions + 1, success_count = success_count + ?, "
    "error_count = error_count + ?, last_executed_at = CASE "
    "WHEN last_executed_at IS NULL OR last_executed_at < ? THEN ? ELSE last_executed_at END "
    "WHERE name = ? RETURNING id"
)
TRIM: Final = (
    "DELETE FROM executions WHERE agent_id = ? AND id <= "
    f"(SELECT id FROM executions WHERE agent_id = ? ORDER BY id DESC LIMIT 1 OFFSET {HISTORY_MAX})"
)
HISTORY: Final = (
    "SELECT a.total_executions, "
    + ", ".join(f"e.{c.strip()}" for c in RECORD_COLUMNS.split(","))
    + " FROM agents a LEFT JOIN executions e ON e.agent_id = a.id WHERE a.name = ? "
    "ORDER BY e.id DESC LIMIT ?"
)
SORTS: Final = {
    "name": "name",
    "created_at": "created_at DESC, name",
    "updated_at": "updated_at DESC, name",
    "execution_count": "execution_count DESC, name",
}


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


def _record_values(agent_id: int, name: str, record: Document) -> tuple[Any, ...]:
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
    )


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

    def _put(self, db: sqlite3.Connection, doc: Document, history: Document | None) -> None:
        total = history["total_executions"] if history else doc["_metadata"]["execution_count"]
        (agent_id,) = db.execute(INSERT_AGENT, _agent_values(doc, total)).fetchone()
        if doc["tags"]:
            db.executemany(INSERT_TAG, [(tag, agent_id) for tag in doc["tags"]])
        if history and history["executions"]:
            name = doc["name"]
            db.executemany(
                INSERT_RECORD,
                [
                    _record_values(agent_id, name, r)
                    for r in reversed(history["executions"][:HISTORY_MAX])
                ],
            )

    # -- operations --------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Document:
        doc = new_agent_document(config, iso(self.clock()))
        with self._write() as db:
            self._put(db, doc, None)
        return doc

    def get(self, name: str) -> Document:
        row = self._db.execute(f"SELECT {AGENT_COLUMNS} FROM agents WHERE name = ?", (name,))
        found = row.fetchone()
        if found is None:
            raise KeyError(name)
        return _agent(found)

    def update(self, name: str, changes: AgentUpdate) -> Document:
        fields = changes.changes()
        now = iso(self.clock())
        with self._write() as db:
            row = db.execute(
                f"SELECT id, {AGENT_COLUMNS} FROM agents WHERE name = ?", (name,)
            ).fetchone()
            if row is None:
                raise KeyError(name)
            agent_id = row[0]
            doc = _agent(row[1:])
            for field, value in fields.items():
                doc[field] = list(value) if isinstance(value, list) else value
            meta = doc["_metadata"]
            meta["updated_at"] = now
            meta["version"] += 1
            db.execute(
                "UPDATE agents SET description = ?, system_prompt = ?, tools = ?, tools_mask = ?, "
                "model = ?, stratum = ?, tags = ?, updated_at = ?, version = ? WHERE id = ?",
                (
                    doc["description"],
                    doc["system_prompt"],
                    json.dumps(doc["tools"]),
                    tools_mask(doc["tools"]),
                    doc["model"],
                    doc["stratum"],
                    json.dumps(doc["tags"]),
                    now,
                    meta["version"],
                    agent_id,
                ),
            )
            if "tags" in fields:
                db.execute("DELETE FROM agent_tags WHERE agent_id = ?", (agent_id,))
                db.executemany(INSERT_TAG, [(tag, agent_id) for tag in doc["tags"]])
        return doc

    def search(self, query: SearchQuery) -> list[Document]:
        where: list[str] = []
        params: list[Any] = []
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
        sql = f"SELECT {AGENT_COLUMNS} FROM agents"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {SORTS[query.sort_by]} LIMIT ?"
        params.append(query.limit)
        return [_agent(row) for row in self._db.execute(sql, params)]

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        ts = iso(record.timestamp)
        with self._write() as db:
            row = db.execute(
                BUMP, (int(record.success), int(not record.success), ts, ts, name)
            ).fetchone()
            if row is None:
                raise KeyError(name)
            agent_id = row[0]
            db.execute(INSERT_RECORD, _record_values(agent_id, name, record_document(record)))
            db.execute(TRIM, (agent_id, agent_id))

    def get_history(self, name: str, limit: int) -> Document:
        rows = self._db.execute(HISTORY, (name, limit)).fetchall()
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
            agents = db.execute(
                f"SELECT id, total_executions, {AGENT_COLUMNS} FROM agents ORDER BY name"
            )
            for row in agents:
                doc = _agent(row[2:])
                name = doc["name"]
                with open(directory / f"{name}.json", "w", encoding="utf-8") as out:
                    out.write(dumps(doc))
                if not row[1]:
                    continue  # never run: no history file (created lazily, as in the contract)
                records = db.execute(
                    f"SELECT {RECORD_COLUMNS} FROM executions WHERE agent_id = ? ORDER BY id DESC",
                    (row[0],),
                )
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
        with self._write() as db:
            for doc, history in read_export(directory):
                self._put(db, doc, history)
        return "hand-written: json.loads + INSERTs, one transaction"

    def bulk_load(self, items: Sequence[BulkItem]) -> None:
        with self._write() as db:
            for agent, history in items:
                self._put(
                    db,
                    acti_agent_document(agent),
                    acti_history_document(history) if history is not None else None,
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
