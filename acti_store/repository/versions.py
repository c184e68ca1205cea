"""What every write of a configuration does to its versions, on the statements of
``version_statements``: the roles' shared steps (the versions role is ``roles.versions``).

``record_snapshot`` runs inside the transaction of every create, update, rollback and clone (and
prunes when the store keeps only some versions); ``insert_agent`` adds a new agent with its first
snapshot; ``forget_versions`` deletes or archives them with their agent; ``imported_rows`` are
an import's; ``read_version_log`` reads them for an export.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

from sqlalchemy import String, bindparam, insert, select

from ..errors import (
    ArgumentTypeError,
    InvalidInputError,
    VersionNotFoundError,
)
from ..models import (
    Agent,
    trusted,
)
from ..schema import agent_tags, agents
from ..sqlexec import Cursor, Prepared
from ..tenancy import TENANT
from ..validation import (
    ARGUMENT,
    quoted,
)
from ..versioning import (
    IMPORT_MESSAGE,
    LABEL_RULE,
    AgentVersion,
    VersionLog,
    is_valid_label,
)
from .feed import changed
from .statements import (
    BY_NAME,
    INSERT_AGENT,
    insert_agents,
)
from .version_statements import (
    ARCHIVE_MOVES,
    ARCHIVE_VERSIONS,
    DELETE_AGENT_SHARES,
    DELETE_GATES,
    DELETE_LABELS,
    DELETE_MOVES,
    DELETE_STATS,
    DELETE_VERSIONS,
    GATES,
    INSERT_GATE,
    INSERT_LABEL,
    INSERT_MOVE,
    INSERT_SHARE,
    INSERT_VERSION,
    LABELS,
    MOVES,
    PRUNE,
    SHARES,
    SNAPSHOT_OF_NAMED,
    SNAPSHOT_ROW,
    VERSION,
    VERSION_RANGE,
    VERSIONS,
    gate_from_row,
    move_from_row,
    move_values,
    snapshot_values,
    splits_from_rows,
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
    keys = {"agent_id": agent_id}
    return trusted(
        VersionLog,
        versions=[version_from_row(name, r, by_version.get(r[0], [])) for r in rows],
        labels={label: version for label, version in labels},
        label_history=[move_from_row(r) for r in cursor.all(MOVES, keys)],
        splits=splits_from_rows(cursor.all(SHARES, keys)),
        gates={row[0]: gate_from_row(row[1:]) for row in cursor.all(GATES, keys)},
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
        ["agent_id", "tag", TENANT],
        select(agents.c.id, bindparam("tag", type_=String()), agents.c.tenant).where(BY_NAME),
    ),
    planned_each_time=True,
)


def insert_agent(
    cursor: Cursor, values: dict[str, Any], agent: Agent, message: str | None, keep: int | None
) -> None:
    """Insert a new agent's row (``values``), its tags and the snapshot of its first version (a
    taken name fails the INSERT on the unique constraint). In a pipeline (PostgreSQL) the tags
    and the snapshot find the row by name, so nothing waits for its id: one round trip (and a
    first version leaves nothing to prune)."""
    meta = agent.metadata
    changed(cursor, "created", agent.name, meta.version, meta.updated_at)
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
        for label, weights in log.splits.items():
            rows.extend(
                (INSERT_SHARE, {"agent_id": 0, "label": label, "version": v, "weight": w})
                for v, w in weights.items()
            )
        for label, gate in log.gates.items():
            rows.append((INSERT_GATE, {"agent_id": 0, "label": label} | gate.model_dump()))
        for move in reversed(log.label_history):  # oldest first: ids order the log
            rows.append(
                (INSERT_MOVE, {"agent_id": 0, "agent_name": agent.name} | move_values(move))
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
    cursor.send(DELETE_AGENT_SHARES, keys)
    cursor.send(DELETE_LABELS, keys)
    cursor.send(DELETE_GATES, keys)
    cursor.send(DELETE_STATS, keys)


def labels_by_version(cursor: Cursor, agent_id: int) -> dict[int, list[str]]:
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
    return version_from_row(name, row, labels_by_version(cursor, agent_id).get(version, []))
