"""The peer: LangGraph's ``PostgresStore`` (langgraph-checkpoint-postgres) used as its docs show.

Layout, following the store docs (a namespace tuple per kind of data, one item per memory):

* each agent is an item of namespace ``("agents",)`` keyed by its name; its value is the
  contract's agent document plus ``total_executions`` (the only counter the document lacks);
* each execution record is an item of ``("history", name)``. The docs keep a *collection* of
  memories as one item per memory (``store.put((user_id, "memories"), memory_id, {...})``), not a
  list inside one item, and a list item would rewrite up to 50 records per run. The key is the
  run's number (``total_executions`` after it), zero-padded: the store orders ``search()`` by its
  own ``updated_at`` (equal for every row of one multi-row put, e.g. an import), so the run number
  is what gives the newest records and the FIFO: run ``n`` deletes the item of run ``n - 50``.

What a ``PostgresStore`` user must do by hand, it does here as such a user would:

* counters are read-modify-write (``get``, then ``put``): the store has no increment, no
  transaction and no version check, so concurrent runs of one agent lose counts (reported by the
  client-scaling probe, not a failure); a run's three writes (agent, record, the record 50 runs
  older) go in one ``batch()`` (one pipelined round trip, each statement its own commit);
* ``create`` checks with ``get`` first (``put`` is an upsert); ``update`` is get, merge, put;
* ``search()`` filters only on equality of top-level JSON fields (its ``$gt``/``$gte`` compare
  text, and it has no containment or substring match without an embedding index, nor any sort but
  its ``updated_at``): the stratum goes to the store, everything else (words, tools, tags, dates,
  minimum runs, the sort, the limit) is computed in Python over every agent listed, with the
  reference's semantics so that the answers agree. Listing is one ``search()`` with a limit above
  the store's size: paging by ``offset`` over an order with ties (``updated_at``) can skip items;
* ``jsonb`` does not keep key order, so documents are put back in the contract's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from langgraph.store.base import GetOp, Item, Op, PutOp
from langgraph.store.postgres import PostgresStore
from psycopg import Connection
from psycopg.rows import dict_row

from acti_store.documents import agent_document as acti_agent_document
from acti_store.documents import history_document as acti_history_document
from acti_store.models import AgentConfig, AgentUpdate, ExecutionRecord, SearchQuery

from ..workload import BulkItem
from . import Backend, Clock, Document, StoreSpec
from .plain import HISTORY_MAX, dumps, iso, new_agent_document, read_export, record_document
from .raw_psycopg import libpq_url

AGENTS: Final = ("agents",)
HISTORY: Final = "history"
#: A ``search()`` limit above any store's size: "every item".
EVERY: Final = 1 << 62
#: Items per ``batch()`` of an import (the insert is one statement: 4 parameters per item).
BATCH_ITEMS: Final = 10_000
AGENT_KEYS: Final = ("name", "description", "system_prompt", "tools", "model", "stratum", "tags")
META_KEYS: Final = (
    "created_at",
    "updated_at",
    "last_executed_at",
    "version",
    "builder",
    "execution_count",
    "success_count",
    "error_count",
)
RECORD_KEYS: Final = (
    "execution_id",
    "timestamp",
    "task",
    "result_summary",
    "success",
    "duration_seconds",
    "tool_calls_count",
    "error_type",
)
#: ASCII letters only: SQLite's ``LIKE`` (the reference) folds the case of ASCII only.
ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _history(name: str) -> tuple[str, str]:
    return (HISTORY, name)


def _run_key(number: int) -> str:
    return f"{number:010d}"


def _document(value: dict[str, Any]) -> Document:
    """The contract's agent document (its key order) from a stored value."""
    meta = value["_metadata"]
    return {k: value[k] for k in AGENT_KEYS} | {"_metadata": {k: meta[k] for k in META_KEYS}}


def _record(value: dict[str, Any]) -> Document:
    return {k: value[k] for k in RECORD_KEYS}


def _matches(value: dict[str, Any], query: SearchQuery, words: list[str], bounds: Any) -> bool:
    after, before = bounds
    for word in words:
        if word not in value["name"].translate(ASCII_LOWER) and word not in value[
            "description"
        ].translate(ASCII_LOWER):
            return False
    if query.tools and not set(query.tools) <= set(value["tools"]):
        return False
    if query.tags and not set(query.tags) <= set(value["tags"]):
        return False
    meta = value["_metadata"]
    if after is not None and meta["created_at"] < after:
        return False
    if before is not None and meta["created_at"] > before:
        return False
    return query.min_executions is None or meta["execution_count"] >= query.min_executions


class LangGraphPostgresBackend(Backend):
    def __init__(self, spec: StoreSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        # The docs' direct-connection setup (what ``from_conn_string`` does without a pool).
        self._conn: Connection[Any] = Connection.connect(
            libpq_url(spec.location), autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        self.store = PostgresStore(self._conn)
        self.store.setup()

    def _agent(self, name: str) -> dict[str, Any]:
        item = self.store.get(AGENTS, name)
        if item is None:
            raise KeyError(name)
        value: dict[str, Any] = item.value
        return value

    # -- operations --------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Document:
        if self.store.get(AGENTS, config.name) is not None:
            raise FileExistsError(config.name)
        doc = new_agent_document(config, iso(self.clock()))
        self.store.put(AGENTS, config.name, doc | {"total_executions": 0})
        return doc

    def get(self, name: str) -> dict[str, Any]:
        return self._agent(name)

    def update(self, name: str, changes: AgentUpdate) -> dict[str, Any]:
        value = self._agent(name)
        for field, new in changes.changes().items():
            value[field] = list(new) if isinstance(new, list) else new
        meta = value["_metadata"]
        meta["updated_at"] = iso(self.clock())
        meta["version"] += 1
        self.store.put(AGENTS, name, value)
        return value

    def search(self, query: SearchQuery) -> list[dict[str, Any]]:
        native = {"stratum": query.stratum} if query.stratum is not None else None
        found = [item.value for item in self.store.search(AGENTS, filter=native, limit=EVERY)]
        words = query.query.lower().split() if query.query else []
        bounds = [iso(b) if b else None for b in (query.created_after, query.created_before)]
        chosen = [v for v in found if _matches(v, query, words, bounds)]
        chosen.sort(key=lambda v: v["name"])
        if query.sort_by == "created_at":
            chosen.sort(key=lambda v: v["_metadata"]["created_at"], reverse=True)  # stable
        elif query.sort_by == "updated_at":
            chosen.sort(key=lambda v: v["_metadata"]["updated_at"], reverse=True)
        elif query.sort_by == "execution_count":
            chosen.sort(key=lambda v: v["_metadata"]["execution_count"], reverse=True)
        return chosen[: query.limit]

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        value = self._agent(name)
        meta = value["_metadata"]
        at = iso(record.timestamp)
        meta["execution_count"] += 1
        meta["success_count" if record.success else "error_count"] += 1
        if meta["last_executed_at"] is None or meta["last_executed_at"] < at:
            meta["last_executed_at"] = at
        number = value["total_executions"] = value["total_executions"] + 1
        ops: list[Op] = [
            PutOp(AGENTS, name, value),
            PutOp(_history(name), _run_key(number), record_document(record)),
        ]
        if number > HISTORY_MAX:
            ops.append(PutOp(_history(name), _run_key(number - HISTORY_MAX), None))  # delete
        self.store.batch(ops)

    def get_history(self, name: str, limit: int) -> Document:
        total = self._agent(name)["total_executions"]
        newest = range(total, max(0, total - min(limit, HISTORY_MAX)), -1)
        found = self.store.batch([GetOp(_history(name), _run_key(n)) for n in newest])
        return {
            "agent_name": name,
            "executions": [_record(item.value) for item in found if isinstance(item, Item)],
            "total_executions": total,
        }

    # -- interchange -------------------------------------------------------------------------------

    def export_all(self, directory: Path) -> str:
        agents = self.store.search(AGENTS, limit=EVERY)
        records: dict[str, list[Item]] = {}
        for item in self.store.search((HISTORY,), limit=EVERY):
            records.setdefault(item.namespace[1], []).append(item)
        for item in agents:
            value = item.value
            name = value["name"]
            with open(directory / f"{name}.json", "w", encoding="utf-8") as out:
                out.write(dumps(_document(value)))
            if not value["total_executions"]:
                continue  # never run: no history file (created lazily, as in the contract)
            runs = sorted(records.get(name, ()), key=lambda i: i.key, reverse=True)
            history = {
                "agent_name": name,
                "executions": [_record(i.value) for i in runs[:HISTORY_MAX]],
                "total_executions": value["total_executions"],
            }
            with open(directory / f"{name}_history.json", "w", encoding="utf-8") as out:
                out.write(dumps(history))
        return "PostgresStore: search() of every agent, of every record; files in Python"

    def import_all(self, directory: Path) -> str:
        items = list(read_export(directory))
        self._put_all(items)
        return f"PostgresStore: batch() of PutOps, {BATCH_ITEMS:,} items per batch"

    def bulk_load(self, items: Sequence[BulkItem]) -> None:
        self._put_all(
            [
                (acti_agent_document(a), acti_history_document(h) if h is not None else None)
                for a, h in items
            ]
        )

    def _put_all(self, items: Sequence[tuple[Document, Document | None]]) -> None:
        ops: list[Op] = []
        for doc, history in items:
            total = history["total_executions"] if history else doc["_metadata"]["execution_count"]
            ops.append(PutOp(AGENTS, doc["name"], doc | {"total_executions": total}))
            if history:
                namespace = _history(doc["name"])
                for i, record in enumerate(history["executions"][:HISTORY_MAX]):
                    ops.append(PutOp(namespace, _run_key(total - i), record))
            if len(ops) >= BATCH_ITEMS:
                self.store.batch(ops)
                ops = []
        if ops:
            self.store.batch(ops)

    def agent_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return _document(result)

    def history_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def close(self) -> None:
        self._conn.close()


BACKEND = LangGraphPostgresBackend
