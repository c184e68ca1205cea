"""The versions role: snapshots, rollback, labels and their log, per-version statistics and
retention, each method one transaction on the statements of ``version_statements`` (the
helpers every role's writes share are in ``repository.versions``).
"""

from __future__ import annotations

from ...errors import InvalidInputError, LabelNotFoundError, NoChangesError, VersionConflictError
from ...models import UPDATABLE_FIELDS, Agent, ExecutionStats, is_valid_name
from ...sqlexec import Cursor
from ...validation import (
    ARGUMENT,
    integer,
    optional_integer,
    optional_message,
    optional_version,
    unknown_name,
    version_number,
)
from ...versioning import (
    AgentVersion,
    ConfigDiff,
    LabelMove,
    VersionLog,
    config_diff,
    rollback_message,
)
from ..core import Role, agent_row
from ..feed import changed
from ..statements import ID, agent_from_row
from ..updating import apply_update
from ..version_statements import (
    FIND_VERSION,
    LABEL,
    LABELS,
    MOVES,
    PRUNE,
    RETAINED_BY_VERSION,
    STATS_BY_VERSION,
    VERSIONS,
    VERSIONS_LIMITED,
    move_from_row,
    stats_from_rows,
    version_from_row,
)
from ..versions import (
    checked_label,
    find_version,
    labels_by_version,
    read_version_log,
    record_snapshot,
)


class Versions(Role):
    """``versions``, ``get_version``, ``diff``, ``labels``, ``label_history``,
    ``version_stats``, ``version_log``, ``rollback`` and ``prune_versions`` of the repository
    (moving labels is the labels role's: ``roles.labels``)."""

    # -- reading -----------------------------------------------------------------------------------

    def versions(self, name: str, *, limit: int | None = None) -> list[AgentVersion]:
        limit = optional_integer(limit, "limit", 1)

        def work(cursor: Cursor) -> list[AgentVersion]:
            agent_id = agent_row(cursor, name)[ID]
            labels = labels_by_version(cursor, agent_id)
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
            row = agent_row(cursor, name)
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
            agent_id = agent_row(cursor, name)[ID]
            old = find_version(cursor, name, agent_id, from_version)
            new = find_version(cursor, name, agent_id, to_version)
            return config_diff(name, from_version, old.config, to_version, new.config)

        return self._read(work, snapshot=True)

    def labels(self, name: str) -> dict[str, int]:
        def work(cursor: Cursor) -> dict[str, int]:
            agent_id = agent_row(cursor, name)[ID]
            return {label: version for label, version in cursor.all(LABELS, {"agent_id": agent_id})}

        return self._read(work, snapshot=True)

    def label_history(self, name: str) -> list[LabelMove]:
        def work(cursor: Cursor) -> list[LabelMove]:
            agent_id = agent_row(cursor, name)[ID]
            return [move_from_row(r) for r in cursor.all(MOVES, {"agent_id": agent_id})]

        return self._read(work, snapshot=True)

    def version_stats(self, name: str) -> dict[int, ExecutionStats]:
        def work(cursor: Cursor) -> dict[int, ExecutionStats]:
            agent_id = agent_row(cursor, name)[ID]
            retained = {v: n for v, n in cursor.all(RETAINED_BY_VERSION, {"agent_id": agent_id})}
            return stats_from_rows(cursor.all(STATS_BY_VERSION, {"agent_id": agent_id}), retained)

        return self._read(work, snapshot=True)

    def version_log(self, name: str) -> VersionLog:
        """``AgentRepository.version_log`` in one snapshot."""
        return self._read(
            lambda cursor: read_version_log(cursor, name, agent_row(cursor, name)[ID]),
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
            row = agent_row(cursor, name, for_update=True)
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
            record_snapshot(cursor, row[ID], result.agent, note, self._core.keep_versions)
            return result.agent

        agent = self._write(work, name=name)
        self._notify(name)
        return agent

    def prune_versions(self, name: str, keep: int) -> int:
        keep = integer(keep, "keep", 0)

        def work(cursor: Cursor) -> int:
            row = agent_row(cursor, name, for_update=True)
            current = agent_from_row(row).metadata.version
            pruned = cursor.execute(PRUNE, {"agent_id": row[ID], "current": current, "keep": keep})
            if pruned:
                changed(cursor, "versions_pruned", name, current, self.now())
            return pruned

        return self._write(work, name=name)
