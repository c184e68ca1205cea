"""The practical limit on MariaDB: the same operations in hand-written SQL on pymysql.

Same semantics as ``raw_sqlite`` (the reference every answer is compared with), on the driver
acti_store uses there (pymysql), without SQLAlchemy, writing the rows acti_store writes (its
tables, as ``raw_pymysql_schema`` spells them, every one with acti_store's default tenant):

* ``create``: the agent (tenant first in its unique name and its sort indexes), its tags
  (``agent_tags``), its name and description's trigrams (``agent_trigrams``: acti_store's
  trigger, as one ``INSERT IGNORE ... SELECT`` over ``seq_1_to_600``), the snapshot of its
  configuration as of version 1 (``agent_versions``), the tenant's change counter moved
  (``agent_change_counters``, upserted) and a ``created`` change numbered with it
  (``agent_changes``);
* ``update``: ``UPDATE ... SET f = COALESCE(%s, f), version = version + 1``, its tags replaced when
  given, its trigrams re-indexed when a description is given (acti_store's trigger: when name
  or description differ), the new version's snapshot, the counter and an ``updated`` change,
  then the row read back under its lock;
* ``record_execution``: the agent's counters, the record (numbered with the new total, ``seq``,
  read under the row lock the UPDATE took; with the agent's name, version and tenant), the
  version's run counters (``agent_version_stats``: runs, successes, errors, total duration,
  last run; ``INSERT ... ON DUPLICATE KEY UPDATE``), the FIFO trimmed (``seq <= total - 50``);
* ``get``, ``history read``, ``search``, export: reads, scoped to the tenant; search tests tags
  with ``EXISTS`` in ``agent_tags`` (as acti_store), words with ``LOWER(name) LIKE ... OR
  LOWER(description) LIKE ...`` (a scan: it does not probe the trigrams acti_store probes);
* import and ``bulk_load``: multi-row ``INSERT``s (pymysql's ``executemany``) in one
  transaction, ids given by the client: agents, tags, trigrams, an ``imported`` snapshot each,
  records (no version, as acti_store's ``bulk_put``), the counter moved by their number and a
  ``created`` change each.

Round trips: one connection, kept open, in autocommit mode, with ``CLIENT.MULTI_STATEMENTS``.
``get``, ``history read`` and ``search`` are one statement each. MariaDB has no ``UPDATE ...
RETURNING`` and no data-modifying CTE, so each write sends its statements together as one
``START TRANSACTION; ...; COMMIT`` batch: **one round trip and one commit** per operation, the
practical limit for acti_store's several statements and round trips in one transaction.
pymysql interpolates parameters on the client (it has no server-side prepared statements), as it
does for acti_store. Tables in ``utf8mb4`` with the ``utf8mb4_bin`` collation (names compare and
sort by code point, which is UTF-8's byte order: SQLite's ``BINARY``), timestamps ``DATETIME(6)``
in UTC (the session's time zone is ``+00:00``), tools a bit mask. Export reads one ``WITH
CONSISTENT SNAPSHOT`` transaction a page of agents at a time (by name) with that page's records.

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
from .raw_pymysql_schema import (
    AGENT_COLUMNS,
    EXPORT_PAGE,
    GET,
    HISTORY,
    INSERT_AGENT_COLUMNS,
    INSERT_AGENT_WITH_ID,
    INSERT_CHANGE,
    INSERT_IMPORTED_VERSION,
    INSERT_RECORD,
    INSERT_TAG,
    RECORD,
    RECORD_COLUMNS,
    SORTS,
    TABLES,
    TENANT,
    create_sql,
    trigrams_of,
    update_sql,
)


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
    """The row of ``doc`` (``INSERT_AGENT_WITH_ID``'s columns but the id); ``total`` defaults to
    its run count."""
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
        TENANT,
    )


_AGENT_KEYS: Final = tuple(c.strip() for c in INSERT_AGENT_COLUMNS.split(","))


def _records(agent_id: int, name: str, history: Document) -> list[tuple[Any, ...]]:
    """``INSERT_RECORD``'s rows of an imported history (its newest ``HISTORY_MAX``; numbered
    down from its total; no version, as acti_store's ``bulk_put`` writes them)."""
    total = history["total_executions"]
    return [
        (
            agent_id,
            total - i,
            TENANT,
            name,
            None,
            r["execution_id"],
            _text_time(r["timestamp"]),
            r["task"],
            r["result_summary"],
            r["success"],
            r["duration_seconds"],
            r["tool_calls_count"],
            r["error_type"],
        )
        for i, r in enumerate(history["executions"][:HISTORY_MAX])
    ]


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
        params = dict(zip(_AGENT_KEYS, _agent_values(doc, 0), strict=True))
        params.update({f"tag{i}": tag for i, tag in enumerate(doc["tags"])})
        params.update(kind="created", at=params["created_at"])
        self._batch(create_sql(len(doc["tags"])), params)
        return doc

    def get(self, name: str) -> Document:
        with self._db.cursor() as cur:
            cur.execute(GET, {"tenant": TENANT, "name": name})
            found = cur.fetchone()
        if found is None:
            raise KeyError(name)
        return _agent(found)

    def update(self, name: str, changes: AgentUpdate) -> Document:
        fields = changes.changes()
        tools = fields.get("tools")
        tags = fields.get("tags")
        params = {f"tag{i}": tag for i, tag in enumerate(tags or ())}
        results = self._batch(
            update_sql(None if tags is None else len(tags), "description" in fields),
            params
            | {
                "description": fields.get("description"),
                "system_prompt": fields.get("system_prompt"),
                "tools": None if tools is None else json.dumps(list(tools)),
                "tools_mask": None if tools is None else tools_mask(tools),
                "model": fields.get("model"),
                "stratum": fields.get("stratum"),
                "tags": None if tags is None else json.dumps(list(tags), ensure_ascii=False),
                "at": _utc(self.clock()),
                "name": name,
                "tenant": TENANT,
                "kind": "updated",
            },
        )
        rows = results[-2][1]  # ..., the SELECT, COMMIT
        if not rows:
            raise KeyError(name)
        return _agent(rows[0])

    def search(self, query: SearchQuery) -> list[Document]:
        where: list[str] = ["tenant = %s"]
        params: list[Any] = [TENANT]
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
        for tag in query.tags or ():
            where.append(
                "EXISTS (SELECT 1 FROM agent_tags t WHERE t.agent_id = agents.id AND t.tag = %s)"
            )
            params.append(tag)
        if query.created_after is not None:
            where.append("created_at >= %s")
            params.append(_utc(query.created_after))
        if query.created_before is not None:
            where.append("created_at <= %s")
            params.append(_utc(query.created_before))
        if query.min_executions is not None:
            where.append("execution_count >= %s")
            params.append(query.min_executions)
        sql = f"SELECT {AGENT_COLUMNS} FROM agents WHERE " + " AND ".join(where)
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
                "tenant": TENANT,
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
            cur.execute(HISTORY, (TENANT, name, limit))
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
                        f"WHERE tenant = %s AND name > %s ORDER BY name LIMIT {EXPORT_PAGE}",
                        (TENANT, last),
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
        """The agents with their tags, trigrams, snapshots (``imported``), records and one
        ``created`` change each, numbered from the tenant's counter: one transaction."""
        db = self._db
        db.begin()
        try:
            with db.cursor() as cur:
                cur.execute("SELECT COALESCE(MAX(id), 0) FROM agents FOR UPDATE")
                first = cur.fetchone()[0] + 1
                agents, tags, records = [], [], []
                for agent_id, (doc, history) in enumerate(items, start=first):
                    total = history["total_executions"] if history else None
                    agents.append((agent_id, *_agent_values(doc, total)))
                    tags += [(tag, agent_id, TENANT) for tag in doc["tags"]]
                    if history:
                        records += _records(agent_id, doc["name"], history)
                if not agents:
                    db.commit()
                    return
                cur.executemany(INSERT_AGENT_WITH_ID, agents)
                if tags:
                    cur.executemany(INSERT_TAG, tags)
                cur.execute(trigrams_of("a.tenant = %s AND a.id >= %s"), (TENANT, first))
                cur.execute(INSERT_IMPORTED_VERSION, (TENANT, first))
                if records:
                    cur.executemany(INSERT_RECORD, records)
                self._changes(cur, [(doc["name"], doc["_metadata"]["version"]) for doc, _ in items])
            db.commit()
        except BaseException:
            db.rollback()
            raise

    def _changes(self, cur: Any, agents: Sequence[tuple[str, int]]) -> None:
        """A ``created`` change per agent ``(name, version)``, numbered from the tenant's
        counter (moved by their number under its row lock)."""
        cur.execute(
            "INSERT INTO agent_change_counters (tenant, last_seq, pruned_through) "
            "VALUES (%s, %s, 0) ON DUPLICATE KEY UPDATE last_seq = last_seq + VALUES(last_seq)",
            (TENANT, len(agents)),
        )
        cur.execute("SELECT last_seq FROM agent_change_counters WHERE tenant = %s", (TENANT,))
        start = cur.fetchone()[0] - len(agents) + 1
        at = _utc(self.clock())
        cur.executemany(
            INSERT_CHANGE,
            [(TENANT, seq, name, v, at) for seq, (name, v) in enumerate(agents, start)],
        )

    def agent_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def history_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def close(self) -> None:
        self._db.close()


BACKEND = RawPymysqlBackend
