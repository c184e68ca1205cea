"""The practical limit on MariaDB: the same operations in hand-written SQL on pymysql.

Same semantics as ``raw_sqlite`` (the reference every answer is compared with), on the driver
acti_store uses there (pymysql), without SQLAlchemy:

* one connection, kept open, in autocommit mode, with ``CLIENT.MULTI_STATEMENTS``: every operation
  is **one round trip** and at most one commit. ``create``, ``get``, ``history read`` and
  ``search`` are one statement each. MariaDB has no ``UPDATE ... RETURNING`` and no data-modifying
  CTE, so the writes that need more than one statement send them together, as one
  ``START TRANSACTION; ...; COMMIT`` batch (one packet, one commit):
  ``update`` is ``UPDATE ... SET f = COALESCE(%s, f)`` then the row read back under its lock;
  ``record_execution`` bumps the counters, inserts the record numbered with the new total
  (``seq``, read under the row lock the UPDATE took) and trims the FIFO with
  ``seq <= total - 50``. pymysql interpolates parameters on the client (it has no server-side
  prepared statements), as it does for acti_store;
* tables in ``utf8mb4`` with the ``utf8mb4_bin`` collation (names compare and sort by code
  point, which is UTF-8's byte order: SQLite's ``BINARY``), timestamps ``DATETIME(6)`` in UTC
  (the session's time zone is ``+00:00``), tools a bit mask, tags a JSON array tested with
  ``JSON_CONTAINS`` per row (MariaDB has no array type and no multi-valued index; a tags table
  would make ``create`` two statements), an index per sort with its name tie-breaker and
  ``(stratum, name)``. Word search is ``LOWER(name) LIKE ... OR LOWER(description) LIKE ...``,
  as acti_store's, which scans (MariaDB has no trigram index; ``FULLTEXT`` finds words, not
  substrings);
* export reads one ``WITH CONSISTENT SNAPSHOT`` transaction a page of agents at a time (by name)
  with that page's records; import and ``bulk_load`` are multi-row ``INSERT``s (pymysql's
  ``executemany``) in one transaction, ids given by the client.

The tables go in the database of the URL (the benchmark creates one per store). Durability is the
server's (``innodb_flush_log_at_trx_commit``), as for acti_store.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pymysql  # type: ignore[import-untyped]  # no stubs installed
from pymysql.constants import CLIENT  # type: ignore[import-untyped]
from sqlalchemy import make_url

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
    tools_mask,
)

TABLE_OPTIONS: Final = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
TABLES: Final = (
    f"""CREATE TABLE IF NOT EXISTS agents (
        id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        name VARCHAR(64) NOT NULL,
        description MEDIUMTEXT NOT NULL,
        system_prompt MEDIUMTEXT NOT NULL,
        tools TEXT NOT NULL,
        tools_mask SMALLINT NOT NULL,
        model VARCHAR(200) NOT NULL,
        stratum VARCHAR(8),
        tags TEXT NOT NULL,
        created_at DATETIME(6) NOT NULL,
        updated_at DATETIME(6) NOT NULL,
        last_executed_at DATETIME(6),
        version INT NOT NULL,
        builder VARCHAR(200) NOT NULL,
        execution_count BIGINT NOT NULL,
        success_count BIGINT NOT NULL,
        error_count BIGINT NOT NULL,
        total_executions BIGINT NOT NULL,
        UNIQUE KEY agents_name (name),
        KEY agents_created (created_at DESC, name),
        KEY agents_updated (updated_at DESC, name),
        KEY agents_runs (execution_count DESC, name),
        KEY agents_stratum (stratum, name)
    ) {TABLE_OPTIONS}""",
    f"""CREATE TABLE IF NOT EXISTS executions (
        agent_id BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        execution_id VARCHAR(64) NOT NULL,
        timestamp DATETIME(6) NOT NULL,
        task MEDIUMTEXT NOT NULL,
        result_summary MEDIUMTEXT NOT NULL,
        success BOOLEAN NOT NULL,
        duration_seconds DOUBLE NOT NULL,
        tool_calls_count INT NOT NULL,
        error_type VARCHAR(100),
        PRIMARY KEY (agent_id, seq),
        CONSTRAINT executions_agent FOREIGN KEY (agent_id) REFERENCES agents (id)
            ON DELETE CASCADE
    ) {TABLE_OPTIONS}""",
)

AGENT_COLUMNS: Final = (
    "name, description, system_prompt, tools, model, stratum, tags, created_at, updated_at, "
    "last_executed_at, version, builder, execution_count, success_count, error_count"
)
RECORD_COLUMNS: Final = (
    "execution_id, timestamp, task, result_summary, success, duration_seconds, "
    "tool_calls_count, error_type"
)
_AGENT_INSERT_COLUMNS: Final = (
    "name, description, system_prompt, tools, tools_mask, model, stratum, tags, created_at, "
    "updated_at, last_executed_at, version, builder, execution_count, success_count, "
    "error_count, total_executions"
)
INSERT_AGENT: Final = (
    f"INSERT INTO agents ({_AGENT_INSERT_COLUMNS}) VALUES ({', '.join(['%s'] * 17)})"
)
INSERT_AGENT_WITH_ID: Final = (
    f"INSERT INTO agents (id, {_AGENT_INSERT_COLUMNS}) VALUES ({', '.join(['%s'] * 18)})"
)
INSERT_RECORD: Final = (
    f"INSERT INTO executions (agent_id, seq, {RECORD_COLUMNS}) VALUES ({', '.join(['%s'] * 10)})"
)
GET: Final = f"SELECT {AGENT_COLUMNS} FROM agents WHERE name = %(name)s"
#: One round trip: the update and its row read back under the row lock, one commit.
UPDATE: Final = (
    "START TRANSACTION; "
    "UPDATE agents SET description = COALESCE(%(description)s, description), "
    "system_prompt = COALESCE(%(system_prompt)s, system_prompt), "
    "tools = COALESCE(%(tools)s, tools), tools_mask = COALESCE(%(tools_mask)s, tools_mask), "
    "model = COALESCE(%(model)s, model), stratum = COALESCE(%(stratum)s, stratum), "
    "tags = COALESCE(%(tags)s, tags), updated_at = %(at)s, version = version + 1 "
    "WHERE name = %(name)s; "
    f"{GET}; COMMIT"
)
#: One round trip: counters bumped (the row lock orders concurrent runs of one agent), the
#: record numbered with the new total, the FIFO trimmed, one commit.
RECORD: Final = (
    "START TRANSACTION; "
    "UPDATE agents SET execution_count = execution_count + 1, "
    "total_executions = total_executions + 1, success_count = success_count + %(ok)s, "
    "error_count = error_count + %(failed)s, "
    "last_executed_at = GREATEST(COALESCE(last_executed_at, %(at)s), %(at)s) "
    "WHERE name = %(name)s; "
    f"INSERT INTO executions (agent_id, seq, {RECORD_COLUMNS}) "
    "SELECT id, total_executions, %(execution_id)s, %(at)s, %(task)s, %(result_summary)s, "
    "%(success)s, %(duration_seconds)s, %(tool_calls_count)s, %(error_type)s "
    "FROM agents WHERE name = %(name)s; "
    "DELETE e FROM executions e JOIN agents a ON a.id = e.agent_id "
    f"WHERE a.name = %(name)s AND e.seq <= a.total_executions - {HISTORY_MAX}; "
    "COMMIT"
)
HISTORY: Final = (
    "SELECT a.total_executions, "
    + ", ".join(f"e.{c.strip()}" for c in RECORD_COLUMNS.split(","))
    + " FROM agents a LEFT JOIN executions e ON e.agent_id = a.id WHERE a.name = %s "
    "ORDER BY e.seq DESC LIMIT %s"
)
EXPORT_PAGE: Final = 2_000
SORTS: Final = {
    "name": "name",
    "created_at": "created_at DESC, name",
    "updated_at": "updated_at DESC, name",
    "execution_count": "execution_count DESC, name",
}


def connect_args(url: str) -> dict[str, Any]:
    """pymysql's arguments for a SQLAlchemy URL (``mysql+pymysql://`` or ``mariadb+pymysql://``)."""
    parsed = make_url(url)
    return {
        "host": parsed.host or "localhost",
        "port": parsed.port or 3306,
        "user": parsed.username or "root",
        "password": parsed.password or "",
        "database": parsed.database,
        "charset": "utf8mb4",
    }


def _utc(value: datetime) -> datetime:
    """An instant as the session's ``DATETIME(6)`` takes it (naive UTC)."""
    return value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)


def _text_time(value: str | None) -> datetime | None:
    return None if value is None else _utc(datetime.fromisoformat(value))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else iso(value.replace(tzinfo=UTC))


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
            "created_at": _iso(row[7]),
            "updated_at": _iso(row[8]),
            "last_executed_at": _iso(row[9]),
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
        "timestamp": _iso(row[1]),
        "task": row[2],
        "result_summary": row[3],
        "success": bool(row[4]),
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
        json.dumps(doc["tools"]),
        tools_mask(doc["tools"]),
        doc["model"],
        doc["stratum"],
        json.dumps(doc["tags"], ensure_ascii=False),
        _text_time(meta["created_at"]),
        _text_time(meta["updated_at"]),
        _text_time(meta["last_executed_at"]),
        meta["version"],
        meta["builder"],
        meta["execution_count"],
        meta["success_count"],
        meta["error_count"],
        meta["execution_count"] if total is None else total,
    )


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class RawPymysqlBackend(Backend):
    def __init__(self, spec: StoreSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        self._db = pymysql.connect(
            **connect_args(spec.location),
            autocommit=True,
            client_flag=CLIENT.MULTI_STATEMENTS,
            init_command="SET time_zone = '+00:00'",
        )
        with self._db.cursor() as cur:
            for statement in TABLES:
                cur.execute(statement)

    def _batch(self, sql: str, params: dict[str, Any]) -> list[tuple[int, tuple[Any, ...]]]:
        """Run the ``START TRANSACTION; ...; COMMIT`` batch ``sql`` (one round trip); every
        statement's ``(affected rows, rows)``. A failed statement ends the batch: rolled back."""
        cur = self._db.cursor()
        results = []
        try:
            cur.execute(sql, params)
            results.append((cur.rowcount, cur.fetchall()))
            while cur.nextset():
                results.append((cur.rowcount, cur.fetchall()))
        except BaseException:
            self._db.rollback()
            raise
        finally:
            cur.close()
        return results

    # -- operations --------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Document:
        doc = new_agent_document(config, iso(self.clock()))
        with self._db.cursor() as cur:
            cur.execute(INSERT_AGENT, _agent_values(doc, 0))
        return doc

    def get(self, name: str) -> Document:
        with self._db.cursor() as cur:
            cur.execute(GET, {"name": name})
            found = cur.fetchone()
        if found is None:
            raise KeyError(name)
        return _agent(found)

    def update(self, name: str, changes: AgentUpdate) -> Document:
        fields = changes.changes()
        tools = fields.get("tools")
        tags = fields.get("tags")
        results = self._batch(
            UPDATE,
            {
                "description": fields.get("description"),
                "system_prompt": fields.get("system_prompt"),
                "tools": None if tools is None else json.dumps(list(tools)),
                "tools_mask": None if tools is None else tools_mask(tools),
                "model": fields.get("model"),
                "stratum": fields.get("stratum"),
                "tags": None if tags is None else json.dumps(list(tags), ensure_ascii=False),
                "at": _utc(self.clock()),
                "name": name,
            },
        )
        rows = results[2][1]  # START TRANSACTION, UPDATE, SELECT, COMMIT
        if not rows:
            raise KeyError(name)
        return _agent(rows[0])

    def search(self, query: SearchQuery) -> list[Document]:
        where: list[str] = []
        params: list[Any] = []
        if query.query:
            for word in query.query.lower().split():
                where.append("(LOWER(name) LIKE %s OR LOWER(description) LIKE %s)")
                pattern = f"%{_escape_like(word)}%"
                params += [pattern, pattern]
        if query.stratum is not None:
            where.append("stratum = %s")
            params.append(query.stratum)
        if query.tools:
            where.append("tools_mask IN %s")
            params.append(tuple(masks_containing(query.tools)))
        if query.tags:
            where.append("JSON_CONTAINS(tags, %s)")
            params.append(json.dumps(list(query.tags), ensure_ascii=False))
        if query.created_after is not None:
            where.append("created_at >= %s")
            params.append(_utc(query.created_after))
        if query.created_before is not None:
            where.append("created_at <= %s")
            params.append(_utc(query.created_before))
        if query.min_executions is not None:
            where.append("execution_count >= %s")
            params.append(query.min_executions)
        sql = f"SELECT {AGENT_COLUMNS} FROM agents"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {SORTS[query.sort_by]} LIMIT %s"
        params.append(query.limit)
        with self._db.cursor() as cur:
            cur.execute(sql, params)
            return [_agent(row) for row in cur.fetchall()]

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        results = self._batch(
            RECORD,
            {
                "ok": int(record.success),
                "failed": int(not record.success),
                "at": _utc(record.timestamp),
                "name": name,
                "execution_id": record.execution_id,
                "task": record.task,
                "result_summary": record.result_summary,
                "success": record.success,
                "duration_seconds": record.duration_seconds,
                "tool_calls_count": record.tool_calls_count,
                "error_type": record.error_type,
            },
        )
        if results[1][0] == 0:  # START TRANSACTION, UPDATE (its affected rows), ...
            raise KeyError(name)

    def get_history(self, name: str, limit: int) -> Document:
        with self._db.cursor() as cur:
            cur.execute(HISTORY, (name, limit))
            rows = cur.fetchall()
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
        with db.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            try:
                last = ""
                while True:
                    cur.execute(
                        f"SELECT id, total_executions, {AGENT_COLUMNS} FROM agents "
                        f"WHERE name > %s ORDER BY name LIMIT {EXPORT_PAGE}",
                        (last,),
                    )
                    agents = cur.fetchall()
                    if not agents:
                        break
                    last = agents[-1][2]
                    cur.execute(
                        f"SELECT agent_id, {RECORD_COLUMNS} FROM executions "
                        "WHERE agent_id IN %s ORDER BY agent_id, seq DESC",
                        (tuple(row[0] for row in agents),),
                    )
                    records: dict[int, list[Document]] = {}
                    for row in cur.fetchall():
                        records.setdefault(row[0], []).append(_record(row[1:]))
                    self._write_page(directory, agents, records)
            finally:
                db.commit()
        return "hand-written: one snapshot, pages of agents by name, each page's records"

    @staticmethod
    def _write_page(
        directory: Path, agents: Sequence[Sequence[Any]], records: dict[int, list[Document]]
    ) -> None:
        for row in agents:
            doc = _agent(row[2:])
            name = doc["name"]
            with open(directory / f"{name}.json", "w", encoding="utf-8") as out:
                out.write(dumps(doc))
            if not row[1]:
                continue  # never run: no history file (created lazily, as in the contract)
            history = {
                "agent_name": name,
                "executions": records.get(row[0], []),
                "total_executions": row[1],
            }
            with open(directory / f"{name}_history.json", "w", encoding="utf-8") as out:
                out.write(dumps(history))

    def import_all(self, directory: Path) -> str:
        self._insert_all(list(read_export(directory)))
        return "hand-written: json.loads + multi-row INSERTs (executemany), one transaction"

    def bulk_load(self, items: Sequence[BulkItem]) -> None:
        self._insert_all(
            [
                (acti_agent_document(a), acti_history_document(h) if h is not None else None)
                for a, h in items
            ]
        )
        with self._db.cursor() as cur:
            cur.execute("ANALYZE TABLE agents")
            cur.fetchall()

    def _insert_all(self, items: Sequence[tuple[Document, Document | None]]) -> None:
        db = self._db
        db.begin()
        try:
            with db.cursor() as cur:
                cur.execute("SELECT COALESCE(MAX(id), 0) FROM agents FOR UPDATE")
                first = cur.fetchone()[0] + 1
                agents, records = [], []
                for agent_id, (doc, history) in enumerate(items, start=first):
                    total = history["total_executions"] if history else None
                    agents.append((agent_id, *_agent_values(doc, total)))
                    if not history:
                        continue
                    total = history["total_executions"]
                    for i, r in enumerate(history["executions"][:HISTORY_MAX]):
                        records.append(
                            (
                                agent_id,
                                total - i,
                                r["execution_id"],
                                _text_time(r["timestamp"]),
                                r["task"],
                                r["result_summary"],
                                r["success"],
                                r["duration_seconds"],
                                r["tool_calls_count"],
                                r["error_type"],
                            )
                        )
                if agents:
                    cur.executemany(INSERT_AGENT_WITH_ID, agents)
                if records:
                    cur.executemany(INSERT_RECORD, records)
            db.commit()
        except BaseException:
            db.rollback()
            raise

    def agent_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def history_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def close(self) -> None:
        self._db.close()


BACKEND = RawPymysqlBackend
