"""Configuration versions of ``SqlAgentRepository``: snapshots, rollback, labels, per-version
statistics and retention.

``record_snapshot`` runs inside the transaction of every create, update, rollback and clone (and
prunes when the store keeps only some versions); ``VersionMethods`` holds the public methods,
each one transaction (``_read`` / ``_write`` of the repository), on the statements of
``version_statements``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar

from sqlalchemy import String, bindparam, insert, select

from ..errors import (
    AgentNotFoundError,
    ArgumentTypeError,
    InvalidInputError,
    LabelNotFoundError,
    NoChangesError,
    VersionConflictError,
    VersionNotFoundError,
)
from ..models import (
    UPDATABLE_FIELDS,
    Agent,
    ExecutionStats,
    is_valid_name,
    trusted,
)
from ..schema import agent_tags, agents
from ..sqlexec import Cursor, Prepared
from ..validation import (
    ARGUMENT,
    integer,
    optional_integer,
    optional_message,
    optional_version,
    quoted,
    unknown_name,
    version_number,
)
from ..versioning import (
    IMPORT_MESSAGE,
    LABEL_RULE,
    AgentVersion,
    ConfigDiff,
    LabelMove,
    VersionLog,
    config_diff,
    is_valid_label,
    rollback_message,
)
from .arguments import require_storable
from .statements import (
    BY_NAME,
    GET,
    GET_FOR_UPDATE,
    ID,
    INSERT_AGENT,
    agent_from_row,
    insert_agents,
)
from .updating import apply_update
from .version_statements import (
    ARCHIVE_MOVES,
    ARCHIVE_VERSIONS,
    DELETE_LABEL,
    DELETE_LABELS,
    DELETE_MOVES,
    DELETE_STATS,
    DELETE_VERSIONS,
    FIND_VERSION,
    INSERT_LABEL,
    INSERT_MOVE,
    INSERT_VERSION,
    LABEL,
    LABELS,
    MOVE_LABEL,
    MOVES,
    PRUNE,
    RETAINED_BY_VERSION,
    SNAPSHOT_OF_NAMED,
    SNAPSHOT_ROW,
    STATS_BY_VERSION,
    VERSION,
    VERSION_RANGE,
    VERSIONS,
    VERSIONS_LIMITED,
    move_from_row,
    snapshot_values,
    stats_from_rows,
    version_from_row,
)

T = TypeVar("T")


def read_version_log(cursor: Cursor, name: str, agent_id: int) -> VersionLog:
    """The snapshots, labels and label log of the agent ``name`` (row id ``agent_id``): three
    statements, so run them in the snapshot its agent row was read in (``version_log``, the
    export's ``iter_export_versions``)."""
    labels = cursor.all(LABELS, {"agent_id": agent_id})
    by_version: dict[int, list[str]] = {}
    for label, version in labels:
        by_version.setdefault(version, []).append(label)
    rows = cursor.all(VERSIONS, {"agent_id": agent_id})
    return trusted(
        VersionLog,
        versions=[version_from_row(name, r, by_version.get(r[0], [])) for r in rows],
        labels={label: version for label, version in labels},
        label_history=[move_from_row(r) for r in cursor.all(MOVES, {"agent_id": agent_id})],
    )


def checked_label(value: object) -> str:
    if not is_valid_label(value):
        if not isinstance(value, str):
            raise ArgumentTypeError(ARGUMENT, [("label", f"must be text, not {quoted(value)}")])
        raise InvalidInputError(ARGUMENT, [("label", f"{quoted(value)} {LABEL_RULE}")])
    assert isinstance(value, str)
    return value


def record_snapshot(
    cursor: Cursor, agent_id: int, agent: Agent, message: str | None, keep_versions: int | None
) -> None:
    """Store the snapshot of ``agent`` as just written (its row's configuration at its version,
    made at its ``updated_at``); with ``keep_versions``, prune the older ones."""
    version = agent.metadata.version
    cursor.send(SNAPSHOT_ROW, {"agent_id": agent_id, "message": message})
    if keep_versions is not None:
        cursor.send(PRUNE, {"agent_id": agent_id, "current": version, "keep": keep_versions})


#: A tag of the agent named ``name`` (a statement sent before its id is known).
_TAG_OF_NAMED: Final = Prepared(
    insert(agent_tags).from_select(
        ["agent_id", "tag"], select(agents.c.id, bindparam("tag", type_=String())).where(BY_NAME)
    )
)


def insert_agent(
    cursor: Cursor, values: dict[str, Any], agent: Agent, message: str | None, keep: int | None
) -> None:
    """Insert a new agent's row (``values``), its tags and the snapshot of its first version (a
    taken name fails the INSERT on the unique constraint). In a pipeline (PostgreSQL) the tags
    and the snapshot find the row by name, so nothing waits for its id: one round trip (and a
    first version leaves nothing to prune)."""
    if cursor.pipeline is None:
        agent_id = insert_agents(cursor, [values])[agent.name]
        record_snapshot(cursor, agent_id, agent, message, keep)
        return
    cursor.send(INSERT_AGENT, values)
    if agent.tags:
        cursor.executemany(_TAG_OF_NAMED, [{"name": agent.name, "tag": t} for t in agent.tags])
    cursor.send(SNAPSHOT_OF_NAMED, {"name": agent.name, "message": message})


def imported_rows(agent: Agent, log: VersionLog | None) -> list[tuple[Prepared, dict[str, Any]]]:
    """The rows an imported agent's versions put in (``agent_id`` filled in once known): its
    log's snapshots, labels and moves, and a snapshot of its current version if the log has none
    (an agent file imported alone: message ``imported``)."""
    rows: list[tuple[Prepared, dict[str, Any]]] = []
    current = agent.metadata.version
    versions = log.versions if log is not None else []
    if all(v.version != current for v in versions):
        created = agent.metadata.updated_at
        rows.append(
            (INSERT_VERSION, snapshot_values(0, current, agent.config, created, IMPORT_MESSAGE))
        )
    for v in sorted(versions, key=lambda v: v.version):
        rows.append(
            (INSERT_VERSION, snapshot_values(0, v.version, v.config, v.created_at, v.message))
        )
    if log is not None:
        for label, version in log.labels.items():
            rows.append((INSERT_LABEL, {"agent_id": 0, "label": label, "version": version}))
        for move in reversed(log.label_history):  # oldest first: ids order the log
            rows.append(
                (INSERT_MOVE, {"agent_id": 0, "agent_name": agent.name} | move.model_dump())
            )
    return rows


def version_that_ran(name: str, current: int, pinned: int | None) -> int:
    """The version a run is counted for: ``pinned``, else the current one."""
    if pinned is None:
        return current
    if type(pinned) is not int or not 1 <= pinned <= current:
        raise VersionNotFoundError(name, pinned, f"its current version is {current}")
    return pinned


def forget_versions(cursor: Cursor, agent_id: int, name: str, *, archive: bool) -> None:
    """An agent's versions and label log deleted, or archived by name beside its history (the
    snapshots into ``agent_versions_archive``, the log with ``agent_id`` NULL); its labels and
    per-version counters go with it."""
    keys = {"agent_id": agent_id}
    if archive:
        cursor.send(ARCHIVE_VERSIONS, keys | {"name": name})
        # An UPDATE cannot name its SET column's value ``agent_id`` too.
        cursor.send(ARCHIVE_MOVES, {"archived_id": agent_id})
    else:
        cursor.send(DELETE_MOVES, keys)
    cursor.send(DELETE_VERSIONS, keys)
    cursor.send(DELETE_LABELS, keys)
    cursor.send(DELETE_STATS, keys)


def _labels_by_version(cursor: Cursor, agent_id: int) -> dict[int, list[str]]:
    by_version: dict[int, list[str]] = {}
    for label, version in cursor.all(LABELS, {"agent_id": agent_id}):
        by_version.setdefault(version, []).append(label)
    return by_version


def _missing_version(cursor: Cursor, name: str, agent_id: int, version: int) -> Exception:
    count, oldest, newest = cursor.first(VERSION_RANGE, {"agent_id": agent_id}) or (0, 0, 0)
    if not count:
        return VersionNotFoundError(name, version, "it has no stored versions")
    kept = f"{count} stored, versions {oldest} to {newest}" if count > 1 else f"only {oldest}"
    return VersionNotFoundError(name, version, kept)


def find_version(cursor: Cursor, name: str, agent_id: int, version: int) -> AgentVersion:
    """The snapshot of ``version`` (with its labels), or ``VersionNotFoundError``."""
    row = cursor.first(VERSION, {"agent_id": agent_id, "version": version})
    if row is None:
        raise _missing_version(cursor, name, agent_id, version)
    return version_from_row(name, row, _labels_by_version(cursor, agent_id).get(version, []))


class VersionMethods:
    """The version methods of ``SqlAgentRepository`` (mixed in; it provides the plumbing)."""

    keep_versions: int | None = None

    def now(self) -> datetime:
        raise NotImplementedError

    def _read(self, work: Callable[[Cursor], T], *, snapshot: bool = False) -> T:
        raise NotImplementedError

    def _write(self, work: Callable[[Cursor], T], *, name: str | None = None) -> T:
        raise NotImplementedError

    def _notify(self, *names: str) -> None:
        raise NotImplementedError

    @staticmethod
    def _agent_row(cursor: Cursor, name: str, *, for_update: bool = False) -> Sequence[Any]:
        require_storable(name)
        row = cursor.first(GET_FOR_UPDATE if for_update else GET, {"name": name})
        if row is None:
            raise AgentNotFoundError(name)
        return row

    # -- reading -----------------------------------------------------------------------------------

    def versions(self, name: str, *, limit: int | None = None) -> list[AgentVersion]:
        limit = optional_integer(limit, "limit", 1)

        def work(cursor: Cursor) -> list[AgentVersion]:
            agent_id = self._agent_row(cursor, name)[ID]
            labels = _labels_by_version(cursor, agent_id)
            if limit is None:
                rows = cursor.all(VERSIONS, {"agent_id": agent_id})
            else:
                rows = cursor.all(VERSIONS_LIMITED, {"agent_id": agent_id, "limit": limit})
            return [version_from_row(name, row, labels.get(row[0], [])) for row in rows]

        return self._read(work, snapshot=True)

    def get_version(
        self, name: str, version: int | None = None, *, label: str | None = None
    ) -> AgentVersion:
        if version is not None and label is not None:
            raise InvalidInputError(ARGUMENT, [("label", "give a version or a label, not both")])
        version = optional_version(version, "version")
        if label is not None:
            checked_label(label)
        if not isinstance(name, str):
            raise unknown_name(name)
        if is_valid_name(name):  # one statement when it is there (the frequent case)
            by, key = (
                ("version", {"version": version})
                if version is not None
                else ("label", {"label": label})
                if label is not None
                else ("current", {})
            )
            rows = self._read(lambda cursor: cursor.all(FIND_VERSION[by], {"name": name} | key))
            if rows:
                labels = [row[-1] for row in rows if row[-1] is not None]
                return version_from_row(name, rows[0], labels)

        def work(cursor: Cursor) -> AgentVersion:  # not found: which of them is missing
            row = self._agent_row(cursor, name)
            number = version
            if label is not None:
                found = cursor.first(LABEL, {"agent_id": row[ID], "label": label})
                if found is None:
                    labels = [r[0] for r in cursor.all(LABELS, {"agent_id": row[ID]})]
                    raise LabelNotFoundError(name, label, labels)
                number = found[0]
            if number is None:
                number = agent_from_row(row).metadata.version
            return find_version(cursor, name, row[ID], number)

        return self._read(work, snapshot=True)

    def diff(self, name: str, from_version: int, to_version: int) -> ConfigDiff:
        version_number(from_version, "from_version")
        version_number(to_version, "to_version")

        def work(cursor: Cursor) -> ConfigDiff:
            agent_id = self._agent_row(cursor, name)[ID]
            old = find_version(cursor, name, agent_id, from_version)
            new = find_version(cursor, name, agent_id, to_version)
            return config_diff(name, from_version, old.config, to_version, new.config)

        return self._read(work, snapshot=True)

    def labels(self, name: str) -> dict[str, int]:
        def work(cursor: Cursor) -> dict[str, int]:
            agent_id = self._agent_row(cursor, name)[ID]
            return {label: version for label, version in cursor.all(LABELS, {"agent_id": agent_id})}

        return self._read(work, snapshot=True)

    def label_history(self, name: str) -> list[LabelMove]:
        def work(cursor: Cursor) -> list[LabelMove]:
            agent_id = self._agent_row(cursor, name)[ID]
            return [move_from_row(r) for r in cursor.all(MOVES, {"agent_id": agent_id})]

        return self._read(work, snapshot=True)

    def version_stats(self, name: str) -> dict[int, ExecutionStats]:
        def work(cursor: Cursor) -> dict[int, ExecutionStats]:
            agent_id = self._agent_row(cursor, name)[ID]
            retained = {v: n for v, n in cursor.all(RETAINED_BY_VERSION, {"agent_id": agent_id})}
            return stats_from_rows(cursor.all(STATS_BY_VERSION, {"agent_id": agent_id}), retained)

        return self._read(work, snapshot=True)

    def version_log(self, name: str) -> VersionLog:
        """``AgentRepository.version_log`` in one snapshot."""
        return self._read(
            lambda cursor: read_version_log(cursor, name, self._agent_row(cursor, name)[ID]),
            snapshot=True,
        )

    # -- writing -----------------------------------------------------------------------------------

    def rollback(
        self,
        name: str,
        to_version: int,
        *,
        expected_version: int | None = None,
        message: str | None = None,
    ) -> Agent:
        version_number(to_version, "to_version")
        expected_version = optional_version(expected_version, "expected_version")
        note = optional_message(message, "message") or rollback_message(to_version)

        def work(cursor: Cursor) -> Agent:
            row = self._agent_row(cursor, name, for_update=True)
            current = agent_from_row(row)
            if expected_version is not None and current.metadata.version != expected_version:
                raise VersionConflictError(name, expected_version, current.metadata.version)
            target = find_version(cursor, name, row[ID], to_version).config
            changed = {
                field: getattr(target, field)
                for field in UPDATABLE_FIELDS
                if getattr(target, field) != getattr(current, field)
            }
            if not changed:
                raise NoChangesError(name)
            result = apply_update(cursor, row, changed, None, self.now)
            record_snapshot(cursor, row[ID], result.agent, note, self.keep_versions)
            return result.agent

        agent = self._write(work, name=name)
        self._notify(name)
        return agent

    def set_label(
        self,
        name: str,
        label: str,
        version: int,
        *,
        expected_version: int | None = None,
        note: str | None = None,
    ) -> None:
        checked_label(label)
        version_number(version)
        expected_version = optional_version(expected_version, "expected_version")
        note = optional_message(note, "note")

        def work(cursor: Cursor) -> None:
            agent_id = self._agent_row(cursor, name, for_update=True)[ID]
            keys = {"agent_id": agent_id, "label": label}
            found = cursor.first(LABEL, keys)
            now_at = None if found is None else found[0]
            if expected_version is not None and now_at != expected_version:
                raise VersionConflictError(name, expected_version, now_at, label=label)
            find_version(cursor, name, agent_id, version)  # it must have a snapshot
            if now_at == version:
                return  # already there: no move to log
            if now_at is None:
                cursor.execute(INSERT_LABEL, keys | {"version": version})
            else:
                cursor.execute(MOVE_LABEL, keys | {"to_version": version})
            self._log_move(cursor, agent_id, name, label, now_at, version, note)

        self._write(work, name=name)

    def remove_label(self, name: str, label: str, *, note: str | None = None) -> None:
        checked_label(label)
        note = optional_message(note, "note")

        def work(cursor: Cursor) -> None:
            agent_id = self._agent_row(cursor, name, for_update=True)[ID]
            keys = {"agent_id": agent_id, "label": label}
            found = cursor.first(LABEL, keys)
            if found is None:
                labels = [r[0] for r in cursor.all(LABELS, {"agent_id": agent_id})]
                raise LabelNotFoundError(name, label, labels)
            cursor.execute(DELETE_LABEL, keys)
            self._log_move(cursor, agent_id, name, label, found[0], None, note)

        self._write(work, name=name)

    def _log_move(
        self,
        cursor: Cursor,
        agent_id: int,
        name: str,
        label: str,
        from_version: int | None,
        to_version: int | None,
        note: str | None,
    ) -> None:
        cursor.execute(
            INSERT_MOVE,
            {
                "agent_id": agent_id,
                "agent_name": name,
                "label": label,
                "from_version": from_version,
                "to_version": to_version,
                "moved_at": self.now(),
                "note": note,
            },
        )

    def prune_versions(self, name: str, keep: int) -> int:
        keep = integer(keep, "keep", 0)

        def work(cursor: Cursor) -> int:
            row = self._agent_row(cursor, name, for_update=True)
            current = agent_from_row(row).metadata.version
            return cursor.execute(PRUNE, {"agent_id": row[ID], "current": current, "keep": keep})

        return self._write(work, name=name)
