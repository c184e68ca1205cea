"""Bulk import: agents and histories put into the store as they are, inside the caller's one
write transaction, staged so that rows go in by the batch and memory stays bounded."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from itertools import islice
from typing import Any, Final

from ..errors import AgentExistsError, AgentNotFoundError
from ..models import HISTORY_MAX_RECORDS, ExecutionRecord
from ..sqlexec import Cursor, Prepared
from ..validation import instance
from .feed import APPEND_BATCH, FeedStatements, append_changes, changed
from .import_gates import protected_moves
from .port import BulkPutResult, ConflictPolicy, ImportItem, ImportOutcome
from .statements import (
    DELETE_AGENT,
    DELETE_HISTORY,
    DELETE_TAGS,
    GET_ID,
    HAS_HISTORY,
    INSERT_EXECUTION,
    SET_TOTAL,
    config_values,
    metadata_values,
    record_values,
)
from .version_statements import (
    GATES,
    INSERT_MOVE,
    LABELS,
    SHARES,
    gate_from_row,
    move_values,
    splits_from_rows,
)
from .versions import forget_versions, imported_rows

#: A row to insert once its agent's id is known: the statement and its parameters.
_Row = tuple[Prepared, dict[str, Any]]

#: History records a bulk put stages before one ``executemany``.
BULK_RECORD_BATCH: Final = 5_000
#: Agents a bulk put stages per batch by default (``EngineStrategy.bulk_batch``): one INSERT
#: statement of 17 parameters each, within the 999 parameters older SQLite builds allow.
BULK_AGENT_BATCH: Final = 50


#: How an engine asks which of a chunk's names are taken, at once (``EngineStrategy.taken_names``):
#: their id rows by name, or None for "ask per item".
TakenNames = Callable[[Cursor, list[str]], dict[str, Sequence[Any]] | None]
#: How an engine inserts new agent rows and their tags (``EngineStrategy.insert_agents``): their
#: ids by name.
InsertAgents = Callable[[Cursor, list[dict[str, Any]]], dict[str, int]]


def put_all(
    cursor: Cursor,
    items: Iterable[ImportItem],
    on_conflict: ConflictPolicy,
    taken: TakenNames,
    insert: InsertAgents,
    feed: FeedStatements,
    now: datetime,
    keep_names: bool = True,
    batch: int = BULK_AGENT_BATCH,
    *,
    force: bool = False,
    note: str | None = None,
) -> BulkPutResult:
    """Put every item on ``cursor`` (in its transaction); the outcome of each by name (or, not
    ``keep_names``, only their counts). Items go by chunks of ``batch``: ``taken``
    asks for a chunk's names at once where the engine does that better than per item;
    ``insert`` inserts the new agents' rows the engine's fastest way. Each
    agent created or replaced is a change of the feed made ``now``, appended by the thousand
    (``feed.APPEND_BATCH``) with the engine's ``feed`` statements: memory stays bounded.
    An agent replaced keeps its protected labels and gates (``import_gates``) unless ``force``
    (with ``note``, checked by the caller): then its protected labels' moves are logged
    forced."""
    result = BulkPutResult(keep_names=keep_names)
    staging = _BulkStaging(cursor, insert, batch)
    guard = _Guard(force, note, now)
    pending = iter(items)
    while chunk := list(islice(pending, batch)):
        for item in chunk:  # a stream's items are checked as they come (all or nothing still)
            instance(item, ImportItem, "items")
        names = [item.name for item in chunk]
        # A name that comes twice is asked for when its turn comes (the first may create it).
        ids = taken(cursor, names) if len(set(names)) == len(names) else None
        for item in chunk:
            outcome = _put(cursor, item, on_conflict, staging, ids, guard)
            result.add(item.name, outcome)
            if outcome != "skipped" and item.agent is not None:
                kind = "created" if outcome == "imported" else "updated"
                changed(cursor, kind, item.name, item.agent.metadata.version, now)
        if len(cursor.changes) >= APPEND_BATCH:
            append_changes(cursor, feed)
    staging.flush()
    return result


def _put(
    cursor: Cursor,
    item: ImportItem,
    on_conflict: ConflictPolicy,
    staging: _BulkStaging,
    taken: dict[str, Sequence[Any]] | None,
    guard: _Guard,
) -> ImportOutcome:
    """Stage one item: its agent row and records go in with the next batch."""
    if item.name in staging.agents:  # put twice in one call: the first must be in the table
        staging.flush()
    existing = (
        taken.get(item.name) if taken is not None else cursor.first(GET_ID, {"name": item.name})
    )
    outcome: ImportOutcome = "imported"
    # Records are stored oldest first so that ids order them newest-last, as live runs do.
    newest = item.history.executions[:HISTORY_MAX_RECORDS] if item.history else []
    if item.agent is not None:
        forced: list[_Row] = []
        if existing is not None:
            if on_conflict == "fail":
                raise AgentExistsError(item.name)
            if on_conflict == "skip":
                return "skipped"
            forced = guard.forced_moves(cursor, existing[0], item)
            forget_versions(cursor, existing[0], item.name, archive=False)
            for statement in (DELETE_HISTORY, DELETE_TAGS, DELETE_AGENT):
                cursor.execute(statement, {"agent_id": existing[0]})
            outcome = "replaced"
        total = (
            item.history.total_executions
            if item.history is not None
            else item.agent.metadata.execution_count
        )
        values = config_values(item.agent) | metadata_values(item.agent.metadata, total)
        staging.add_agent(values, newest[::-1], imported_rows(item.agent, item.versions) + forced)
        return outcome
    if existing is None:
        raise AgentNotFoundError(item.name)
    agent_id = existing[0]
    if cursor.first(HAS_HISTORY, {"agent_id": agent_id}) is not None:
        if on_conflict == "fail":
            raise AgentExistsError(item.name)
        if on_conflict == "skip":
            return "skipped"
        cursor.execute(DELETE_HISTORY, {"agent_id": agent_id})
        outcome = "replaced"
    if item.history is not None:
        total = item.history.total_executions
        cursor.execute(SET_TOTAL, {"agent_id": agent_id, "total_executions": total})
        staging.add_records(agent_id, item.name, newest[::-1])
    return outcome


class _Guard:
    """What a bulk put may do to the protected labels of the agents it replaces: the store's
    labels and gates read before the replace, held against ``import_gates``' rule."""

    __slots__ = ("_force", "_note", "_now")

    def __init__(self, force: bool, note: str | None, now: datetime) -> None:
        self._force = force
        self._note = note
        self._now = now

    def forced_moves(self, cursor: Cursor, agent_id: int, item: ImportItem) -> list[_Row]:
        """The log rows of the forced moves of replacing agent ``agent_id`` by ``item``
        (``agent_id`` filled in once known), or ``ProtectedImportError``."""
        keys = {"agent_id": agent_id}
        gates = {row[0]: gate_from_row(row[1:]) for row in cursor.all(GATES, keys)}
        if not gates:
            return []
        splits = splits_from_rows(cursor.all(SHARES, keys))
        targets = {
            label: splits.get(label, {version: 100}) for label, version in cursor.all(LABELS, keys)
        }
        moves = protected_moves(
            item.name,
            gates,
            targets,
            item.versions,
            note=self._note,
            force=self._force,
            now=self._now,
        )
        return [
            (INSERT_MOVE, {"agent_id": 0, "agent_name": item.name} | move_values(m)) for m in moves
        ]


class _BulkStaging:
    """A bulk put's rows on their way in: agents by ``batch`` per ``insert`` (their tags and
    records follow once their ids are known), records by ``BULK_RECORD_BATCH`` per
    ``executemany``. Memory stays bounded however many items come through."""

    __slots__ = ("_batch", "_cursor", "_insert", "agents", "records")

    def __init__(self, cursor: Cursor, insert: InsertAgents, batch: int) -> None:
        self._cursor = cursor
        self._insert = insert
        self._batch = batch
        #: Staged agent rows by name, with their records (oldest first) and version rows.
        self.agents: dict[str, tuple[dict[str, Any], list[ExecutionRecord], list[_Row]]] = {}
        self.records: list[dict[str, Any]] = []

    def add_agent(
        self, values: dict[str, Any], records: list[ExecutionRecord], versions: list[_Row]
    ) -> None:
        self.agents[values["name"]] = (values, records, versions)
        if len(self.agents) >= self._batch:
            self._insert_agents()

    def add_records(self, agent_id: int, name: str, records: Iterable[ExecutionRecord]) -> None:
        self.records.extend(record_values(agent_id, name, r) for r in records)
        if len(self.records) >= BULK_RECORD_BATCH:
            self._insert_records()

    def flush(self) -> None:
        self._insert_agents()
        self._insert_records()

    def _insert_agents(self) -> None:
        if not self.agents:
            return
        staged, self.agents = self.agents, {}
        ids = self._insert(self._cursor, [values for values, _, _ in staged.values()])
        by_statement: dict[Prepared, list[dict[str, Any]]] = {}
        for name, (_, records, versions) in staged.items():
            self.add_records(ids[name], name, records)
            for statement, row in versions:
                by_statement.setdefault(statement, []).append(row | {"agent_id": ids[name]})
        for statement, rows in by_statement.items():  # snapshots, then labels, then moves
            self._cursor.executemany(statement, rows)

    def _insert_records(self) -> None:
        if self.records:
            self._cursor.executemany(INSERT_EXECUTION, self.records)
            self.records = []
