"""A small in-memory adapter: every method of ``RepositoryPort`` on plain dicts, behind one lock.

It passes ``acti_store.testing.conformance.RepositoryConformance``. It keeps nothing on disk and
shares nothing between instances, so it has no "processes" group. The rules it does not write
itself it takes from the library: the models validate every field, and the repository's argument
helpers (``acti_store.repository.arguments``, ``updating``, ``cursor``) check arguments, build a
clone's configuration and encode ``search_page``'s cursors exactly as the SQL store does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from acti_store import (
    Agent,
    AgentConfig,
    AgentExistsError,
    AgentNotFoundError,
    AgentRepository,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    ExecutionStats,
    ImportItem,
    InvalidInputError,
    LabelNotFoundError,
    NoChangesError,
    SearchPage,
    SearchQuery,
    UpdateResult,
    VersionConflictError,
    VersionNotFoundError,
)
from acti_store.models import (
    HISTORY_LIMIT_DEFAULT,
    HISTORY_MAX_RECORDS,
    MAX_TAGS,
    SEARCH_TAGS_RULE,
    STRATA,
    AgentMetadata,
)
from acti_store.repository import BulkPutResult, ConflictPolicy, ImportOutcome, port
from acti_store.repository.arguments import (
    checked_config,
    checked_history_request,
    checked_policy,
    checked_query,
    checked_record,
    checked_update,
)
from acti_store.repository.cursor import decode_cursor, encode_cursor, sort_key
from acti_store.repository.updating import clone_config
from acti_store.validation import (
    flag,
    forced_note,
    integer,
    optional_integer,
    optional_message,
    optional_version,
    version_number,
)
from acti_store.versioning import (
    IMPORT_MESSAGE,
    LABEL_RULE,
    AgentVersion,
    ConfigDiff,
    LabelMove,
    VersionLog,
    clone_message,
    config_diff,
    is_valid_label,
    rollback_message,
)

T = TypeVar("T")


@dataclass
class _Run:
    record: ExecutionRecord
    version: int


@dataclass
class _Entry:
    """One agent: its model, its kept runs (newest first), its snapshots and labels."""

    agent: Agent
    runs: list[_Run] = field(default_factory=list)
    total: int = 0  # lifetime runs, as the history reports them
    versions: dict[int, tuple[AgentConfig, datetime, str | None]] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)
    moves: list[LabelMove] = field(default_factory=list)  # newest first
    version_runs: dict[int, list[ExecutionRecord]] = field(default_factory=dict)


class InMemoryRepository(AgentRepository):
    """An ``AgentRepository`` in a dict: for tests, demos, and as a model for a new adapter."""

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        self._agents: dict[str, _Entry] = {}
        self._archive: dict[str, tuple[list[ExecutionRecord], int]] = {}

    @property
    def location(self) -> str:
        return "memory"

    def now(self) -> datetime:
        return self._clock().astimezone(UTC)

    def _entry(self, name: str) -> _Entry:
        if not isinstance(name, str) or name not in self._agents:
            raise AgentNotFoundError(str(name))
        return self._agents[name]

    def _locked(self, work: Callable[[], T]) -> T:
        with self._lock:
            return work()

    # -- agents ----------------------------------------------------------------------------------

    def _insert(self, config: AgentConfig, message: str | None) -> Agent:
        if config.name in self._agents:
            raise AgentExistsError(config.name)
        now = self.now()
        agent = Agent(**dict(config), metadata=AgentMetadata(created_at=now, updated_at=now))
        self._agents[config.name] = _Entry(agent, versions={1: (config, now, message)})
        return agent

    def create(self, config: AgentConfig | Mapping[str, Any], message: str | None = None) -> Agent:
        checked, note = checked_config(config), optional_message(message, "message")
        return self._locked(lambda: self._insert(checked, note))

    def get(self, name: str) -> Agent:
        return self._locked(lambda: self._entry(name).agent)

    def exists(self, name: str) -> bool:
        return self._locked(lambda: isinstance(name, str) and name in self._agents)

    def list_agents(self) -> list[Agent]:
        return self._locked(lambda: [self._agents[n].agent for n in sorted(self._agents)])

    def list_names(self) -> list[str]:
        return self._locked(lambda: sorted(self._agents))

    def update_returning_previous(
        self,
        name: str,
        changes: AgentUpdate | Mapping[str, Any],
        expected_version: int | None = None,
        message: str | None = None,
    ) -> UpdateResult:
        fields = checked_update(name, changes).changes()
        expected = optional_version(expected_version, "expected_version")
        if not fields:
            raise NoChangesError(name)
        note = optional_message(message, "message")
        with self._lock:
            entry = self._entry(name)
            return self._write_version(entry, fields, expected, note)

    def _write_version(
        self, entry: _Entry, fields: dict[str, Any], expected: int | None, note: str | None
    ) -> UpdateResult:
        previous = entry.agent
        version = previous.metadata.version
        if expected is not None and expected != version:
            raise VersionConflictError(previous.name, expected, version)
        config = port.checked_config(dict(previous.config) | fields, f"update of {previous.name!r}")
        now = self.now()
        meta = previous.metadata.model_copy(update={"updated_at": now, "version": version + 1})
        entry.agent = Agent(**dict(config), metadata=meta)
        entry.versions[version + 1] = (config, now, note)
        return UpdateResult(previous, entry.agent)

    def delete(self, name: str, delete_history: bool = True) -> Agent:
        keep = not flag(delete_history, "delete_history")
        with self._lock:
            entry = self._agents.pop(self._entry(name).agent.name)
            if keep:
                records, total = self._archive.get(name, ([], 0))
                kept = [run.record for run in entry.runs] + records
                self._archive[name] = (kept[:HISTORY_MAX_RECORDS], total + entry.total)
            return entry.agent

    def clone(
        self,
        source_name: str,
        new_name: str,
        description: str | None = None,
        tags: list[str] | None = None,
    ) -> Agent:
        with self._lock:
            source = self._entry(source_name).agent
            config = clone_config(source, new_name, description, tags)
            message = clone_message(source_name, source.metadata.version)
            return self._insert(config, message)

    # -- search ----------------------------------------------------------------------------------

    def _matches(self, query: SearchQuery) -> list[Agent]:
        if query.tags is not None and len(query.tags) > MAX_TAGS:
            raise InvalidInputError("search query", [("tags", SEARCH_TAGS_RULE)])
        words = query.query.lower().split() if query.query else []
        found = []
        for entry in self._agents.values():
            a, meta = entry.agent, entry.agent.metadata
            if (
                all(w in a.name.lower() or w in a.description.lower() for w in words)
                and (query.stratum is None or a.stratum == query.stratum)
                and set(query.tools or ()) <= set(a.tools)
                and set(query.tags or ()) <= set(a.tags)
                and (query.created_after is None or meta.created_at >= query.created_after)
                and (query.created_before is None or meta.created_at <= query.created_before)
                and meta.execution_count >= (query.min_executions or 0)
            ):
                found.append(a)
        found.sort(key=lambda a: a.name)
        if query.sort_by != "name":  # descending, ties by name (a stable sort keeps them)
            found.sort(key=lambda a: sort_key(query, a).value, reverse=True)  # type: ignore[arg-type,return-value]
        return found

    def search(self, query: SearchQuery | Mapping[str, Any]) -> list[Agent]:
        checked = checked_query(query)
        return self._locked(lambda: self._matches(checked)[: checked.limit])

    def count(self, query: SearchQuery | Mapping[str, Any]) -> int:
        checked = checked_query(query)
        return self._locked(lambda: len(self._matches(checked)))

    def search_page(
        self, query: SearchQuery | Mapping[str, Any], cursor: str | None = None
    ) -> SearchPage:
        checked = checked_query(query)
        after = None if cursor is None else decode_cursor(cursor, checked)
        with self._lock:
            matches = self._matches(checked)
        total = len(matches)
        if after is not None:
            matches = [a for a in matches if _comes_after(checked, a, after.value, after.name)]
        page = matches[: checked.limit]
        more = len(matches) > checked.limit
        return SearchPage(page, total, encode_cursor(checked, page[-1]) if more else None)

    def iter_agents(self, page_size: int = 500) -> Iterator[Agent]:
        integer(page_size, "page_size", 1)
        return iter(self.list_agents())

    def count_by_stratum(self) -> dict[str | None, int]:
        counts: dict[str | None, int] = dict.fromkeys(STRATA, 0)
        for agent in self.list_agents():
            counts[agent.stratum] = counts.get(agent.stratum, 0) + 1
        return counts

    # -- runs ------------------------------------------------------------------------------------

    def record_execution(
        self, name: str, record: ExecutionRecord | Mapping[str, Any], *, version: int | None = None
    ) -> None:
        record = checked_record(record)
        pinned = optional_version(version, "version")
        with self._lock:
            entry = self._entry(name)
            meta = entry.agent.metadata
            ran = meta.version if pinned is None else pinned
            if ran > meta.version:
                raise VersionNotFoundError(name, ran)
            entry.runs = [_Run(record, ran), *entry.runs][:HISTORY_MAX_RECORDS]
            entry.total += 1
            entry.version_runs.setdefault(ran, []).append(record)
            counters = {
                "execution_count": meta.execution_count + 1,
                "success_count": meta.success_count + record.success,
                "error_count": meta.error_count + (not record.success),
                "last_executed_at": record.timestamp,
            }
            entry.agent = entry.agent.model_copy(
                update={"metadata": meta.model_copy(update=counters)}
            )

    def get_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory:
        limit, errors_only = checked_history_request(limit, errors_only)
        with self._lock:
            entry = self._entry(name)
            records = [r.record for r in entry.runs if not (errors_only and r.record.success)]
            return ExecutionHistory(
                agent_name=name, executions=records[:limit], total_executions=entry.total
            )

    def get_with_history(self, name: str) -> tuple[Agent, ExecutionHistory]:
        with self._lock:
            return self.get(name), self.get_history(name, HISTORY_MAX_RECORDS)

    def execution_stats(self, name: str) -> ExecutionStats:
        with self._lock:
            entry = self._entry(name)
            meta = entry.agent.metadata
            return _stats(
                [r.record for r in entry.runs],
                meta.execution_count,
                meta.success_count,
                meta.last_executed_at,
            )

    def archived_history(self, name: str) -> ExecutionHistory:
        records, total = self._locked(lambda: self._archive.get(name, ([], 0)))
        return ExecutionHistory(agent_name=name, executions=records, total_executions=total)

    # -- export and import -----------------------------------------------------------------------

    def _export(self) -> list[tuple[Agent, ExecutionHistory | None, VersionLog]]:
        with self._lock:  # one snapshot: everything read under the lock, up front
            return [
                (
                    entry.agent,
                    self.get_history(name, HISTORY_MAX_RECORDS) if entry.total else None,
                    self.version_log(name),
                )
                for name, entry in sorted(self._agents.items())
            ]

    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        integer(page_size, "page_size", 1)
        return iter([(agent, history) for agent, history, _ in self._export()])

    def iter_export_versions(
        self, page_size: int = 500
    ) -> Iterator[tuple[Agent, ExecutionHistory | None, VersionLog]]:
        integer(page_size, "page_size", 1)
        return iter(self._export())

    def bulk_put(
        self,
        items: Sequence[ImportItem],
        on_conflict: ConflictPolicy = "skip",
        *,
        force: bool = False,
        note: str | None = None,
    ) -> BulkPutResult:
        # No gates here (protect_label is optional): force and note have nothing to let through.
        forced_note(note, flag(force, "force"))
        policy = checked_policy(on_conflict)
        result = BulkPutResult()
        with self._lock:
            saved = deepcopy((self._agents, self._archive))
            try:
                for item in items:
                    result.outcomes[item.name] = self._put(item, policy)
            except BaseException:
                self._agents, self._archive = saved  # all or nothing
                raise
        return result

    def _put(self, item: ImportItem, policy: ConflictPolicy) -> ImportOutcome:
        outcome: ImportOutcome = "imported"
        if item.agent is not None:
            if item.name in self._agents:
                if policy == "fail":
                    raise AgentExistsError(item.name)
                if policy == "skip":
                    return "skipped"
                outcome = "replaced"
            meta = item.agent.metadata
            entry = _Entry(item.agent)
            log = item.versions
            if log is None:
                entry.versions = {
                    meta.version: (item.agent.config, meta.updated_at, IMPORT_MESSAGE)
                }
            else:
                entry.versions = {
                    v.version: (v.config, v.created_at, v.message) for v in log.versions
                }
                entry.labels = dict(log.labels)
                # An imported label log is history a file brought, marked so.
                entry.moves = [m.model_copy(update={"imported": True}) for m in log.label_history]
            self._agents[item.name] = entry
        if item.history is not None:
            entry = self._entry(item.name)
            entry.runs = [_Run(r, entry.agent.metadata.version) for r in item.history.executions]
            entry.total = item.history.total_executions
        return outcome

    # -- versions --------------------------------------------------------------------------------

    def _version(self, entry: _Entry, number: int) -> AgentVersion:
        if number not in entry.versions:
            raise VersionNotFoundError(entry.agent.name, number)
        config, created_at, message = entry.versions[number]
        labels = sorted(label for label, at in entry.labels.items() if at == number)
        return AgentVersion(
            name=entry.agent.name,
            version=number,
            config=config,
            created_at=created_at,
            message=message,
            labels=labels,
        )

    def versions(self, name: str, *, limit: int | None = None) -> list[AgentVersion]:
        limit = optional_integer(limit, "limit", 1)
        with self._lock:
            entry = self._entry(name)
            numbers = sorted(entry.versions, reverse=True)[:limit]
            return [self._version(entry, n) for n in numbers]

    def get_version(
        self, name: str, version: int | None = None, *, label: str | None = None
    ) -> AgentVersion:
        if version is not None and label is not None:
            raise InvalidInputError("argument", [("label", "give a version or a label, not both")])
        number = None if version is None else version_number(version)
        with self._lock:
            entry = self._entry(name)
            if label is not None:
                if label not in entry.labels:
                    raise LabelNotFoundError(name, label, sorted(entry.labels))
                number = entry.labels[label]
            return self._version(entry, entry.agent.metadata.version if number is None else number)

    def diff(self, name: str, from_version: int, to_version: int) -> ConfigDiff:
        old = self.get_version(name, from_version)
        new = self.get_version(name, to_version)
        return config_diff(name, from_version, old.config, to_version, new.config)

    def rollback(
        self,
        name: str,
        to_version: int,
        *,
        expected_version: int | None = None,
        message: str | None = None,
    ) -> Agent:
        expected = optional_version(expected_version, "expected_version")
        note = optional_message(message, "message") or rollback_message(to_version)
        with self._lock:
            entry = self._entry(name)
            target = self._version(entry, version_number(to_version, "to_version")).config
            if expected is not None and expected != entry.agent.metadata.version:
                raise VersionConflictError(name, expected, entry.agent.metadata.version)
            if target == entry.agent.config:
                raise NoChangesError(name)
            fields = {f: getattr(target, f) for f in AgentConfig.model_fields if f != "name"}
            return self._write_version(entry, fields, expected, note).agent

    def set_label(
        self,
        name: str,
        label: str,
        version: int,
        *,
        expected_version: int | None = None,
        note: str | None = None,
    ) -> None:
        if not is_valid_label(label):
            raise InvalidInputError("argument", [("label", f"must be {LABEL_RULE}")])
        number = version_number(version)
        expected = optional_version(expected_version, "expected_version")
        note = optional_message(note, "note")
        with self._lock:
            entry = self._entry(name)
            self._version(entry, number)
            now_at = entry.labels.get(label)
            if expected is not None and expected != now_at:
                raise VersionConflictError(name, expected, now_at, label=label)
            if now_at != number:
                entry.labels[label] = number
                move = LabelMove(
                    label=label,
                    from_version=now_at,
                    to_version=number,
                    moved_at=self.now(),
                    note=note,
                )
                entry.moves.insert(0, move)

    def remove_label(self, name: str, label: str, *, note: str | None = None) -> None:
        note = optional_message(note, "note")
        with self._lock:
            entry = self._entry(name)
            if label not in entry.labels:
                raise LabelNotFoundError(name, label, sorted(entry.labels))
            was = entry.labels.pop(label)
            move = LabelMove(
                label=label, from_version=was, to_version=None, moved_at=self.now(), note=note
            )
            entry.moves.insert(0, move)

    def labels(self, name: str) -> dict[str, int]:
        return self._locked(lambda: dict(sorted(self._entry(name).labels.items())))

    def label_history(self, name: str) -> list[LabelMove]:
        return self._locked(lambda: list(self._entry(name).moves))

    def version_stats(self, name: str) -> dict[int, ExecutionStats]:
        with self._lock:
            entry = self._entry(name)
            stats = {}
            for number, records in sorted(entry.version_runs.items()):
                kept = [r.record for r in entry.runs if r.version == number]
                successes = sum(r.success for r in records)
                last = max(r.timestamp for r in records)
                stats[number] = _stats(kept, len(records), successes, last, every=records)
            return stats

    def prune_versions(self, name: str, keep: int) -> int:
        keep = integer(keep, "keep", 0)
        with self._lock:
            entry = self._entry(name)
            kept = {entry.agent.metadata.version, *entry.labels.values()}
            others = sorted((n for n in entry.versions if n not in kept), reverse=True)
            for number in others[keep:]:
                del entry.versions[number]
            return len(others[keep:])


def _comes_after(query: SearchQuery, agent: Agent, value: Any, name: str) -> bool:
    """Whether ``agent`` sorts after the key ``(value, name)`` under ``query``'s sort."""
    mine = sort_key(query, agent).value
    if query.sort_by == "name" or mine == value:
        return agent.name > name
    return bool(mine < value)  # the other sorts are descending


def _stats(
    kept: list[ExecutionRecord],
    total: int,
    successes: int,
    last: datetime | None,
    every: list[ExecutionRecord] | None = None,
) -> ExecutionStats:
    """Statistics of ``total`` runs; the mean duration over ``every`` run (default: the kept)."""
    timed = kept if every is None else every
    mean = sum(r.duration_seconds for r in timed) / len(timed) if timed else None
    return ExecutionStats(
        total_executions=total,
        success_count=successes,
        error_count=total - successes,
        retained=len(kept),
        average_duration_seconds=mean,
        last_executed_at=last,
    )
