"""The statements of configuration versions (revision 0006) and their rows <-> models.

Snapshots (``agent_versions``), labels (``agent_labels``), the label log (``agent_label_moves``)
and per-version run counters (``agent_version_stats``). Each read of an agent's versions walks
the ``(agent_id, version)`` index from its newest end, so it stays flat however many there are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from sqlalchemy import (
    Integer,
    Table,
    Text,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.sql.elements import ColumnElement

from ..models import UPDATABLE_FIELDS, AgentConfig, ExecutionStats, trusted
from ..routing import Weights, spelled
from ..schema import (
    UtcDateTime,
    agent_labels,
    agent_versions,
    agents,
    executions,
    label_gates,
    label_moves,
    label_shares,
    versions_archive,
)
from ..schema import version_stats as stats_table
from ..sqlexec import Prepared
from ..tenancy import TENANT, tenant_param
from ..versioning import AgentVersion, GateCheck, LabelGate, LabelMove, version_of
from .statements import CONFIG_COLUMNS, model_reader, plain_values

#: A snapshot row: its version, the configuration but the name (``UPDATABLE_FIELDS``), when it
#: was made and its message. Rows are read by name (``_config_of``, ``_VERSION_AT``).
_VERSION_COLUMNS: Final = (
    agent_versions.c.version,
    *(agent_versions.c[field] for field in UPDATABLE_FIELDS),
    agent_versions.c.created_at,
    agent_versions.c.message,
)
_VERSION_AT: Final = {column.key: index for index, column in enumerate(_VERSION_COLUMNS)}
_NUMBER: Final = _VERSION_AT["version"]
_CREATED_AT: Final = _VERSION_AT["created_at"]
_MESSAGE: Final = _VERSION_AT["message"]
#: The configuration of a snapshot row, its agent's name given.
_config_of: Final = model_reader(AgentConfig, _VERSION_COLUMNS, "name")
#: The parameters of a snapshot; its configuration columns in ``CONFIG_COLUMNS``' order.
_SNAPSHOT_KEYS: Final = ("agent_id", "version", *UPDATABLE_FIELDS, "created_at", "message", TENANT)
_of_agent = agent_versions.c.agent_id == bindparam("agent_id")
_newest_first = agent_versions.c.version.desc()

INSERT_VERSION: Final = Prepared(insert(agent_versions), columns=_SNAPSHOT_KEYS)


def _snapshot_of(agent: ColumnElement[bool], planned_each_time: bool = False) -> Prepared:
    """The snapshot of the agent row ``agent`` selects, as its write left it, copied by the
    database (the configuration is not sent again): its version, made at its ``updated_at``,
    with ``message``."""
    return Prepared(
        insert(agent_versions).from_select(
            list(_SNAPSHOT_KEYS),
            select(
                agents.c.id,
                agents.c.version,
                *CONFIG_COLUMNS,
                agents.c.updated_at,
                bindparam("message", type_=Text()),
                agents.c.tenant,
            ).where(agent),
        ),
        planned_each_time=planned_each_time,
    )


SNAPSHOT_ROW: Final = _snapshot_of(agents.c.id == bindparam("agent_id"))
#: The same, of the agent named ``name`` (a statement sent before its id is known).
SNAPSHOT_OF_NAMED: Final = _snapshot_of(agents.c.name == bindparam("name"), planned_each_time=True)
VERSIONS: Final = Prepared(select(*_VERSION_COLUMNS).where(_of_agent).order_by(_newest_first))
VERSIONS_LIMITED: Final = Prepared(
    select(*_VERSION_COLUMNS)
    .where(_of_agent)
    .order_by(_newest_first)
    .limit(bindparam("limit", type_=Integer()))
)
VERSION: Final = Prepared(
    select(*_VERSION_COLUMNS).where(_of_agent, agent_versions.c.version == bindparam("version"))
)
#: A row of ``FIND_VERSION``: the snapshot's columns, then one label on it (NULL: none).
_labelled = agent_labels.alias("labelled")
_chosen = agent_labels.alias("chosen")
_found = (
    select(*_VERSION_COLUMNS, _labelled.c.label)
    .select_from(
        agents.join(agent_versions, agent_versions.c.agent_id == agents.c.id).outerjoin(
            _labelled,
            and_(
                _labelled.c.agent_id == agent_versions.c.agent_id,
                _labelled.c.version == agent_versions.c.version,
            ),
        )
    )
    .where(agents.c.name == bindparam("name"))
    .order_by(_labelled.c.label)
)
#: One snapshot with its labels in one statement (one row per label), by number, by label or
#: the current one: the fast path of ``get_version`` (no rows: find out why on the slow path).
FIND_VERSION: Final = {
    "version": Prepared(_found.where(agent_versions.c.version == bindparam("version"))),
    "current": Prepared(_found.where(agent_versions.c.version == agents.c.version)),
    "label": Prepared(
        _found.join(
            _chosen,
            and_(
                _chosen.c.agent_id == agents.c.id,
                _chosen.c.label == bindparam("label"),
                _chosen.c.version == agent_versions.c.version,
            ),
        )
    ),
}
#: Versions stored, oldest and newest: what a "no such version" error names.
VERSION_RANGE: Final = Prepared(
    select(
        func.count(), func.min(agent_versions.c.version), func.max(agent_versions.c.version)
    ).where(_of_agent)
)
_label_of_agent = agent_labels.c.agent_id == bindparam("agent_id")
LABELS: Final = Prepared(
    select(agent_labels.c.label, agent_labels.c.version)
    .where(_label_of_agent)
    .order_by(agent_labels.c.label)
)
LABEL: Final = Prepared(
    select(agent_labels.c.version).where(
        _label_of_agent, agent_labels.c.label == bindparam("label")
    )
)
INSERT_LABEL: Final = Prepared(insert(agent_labels), columns=("agent_id", "label", "version"))
MOVE_LABEL: Final = Prepared(
    update(agent_labels)
    .where(_label_of_agent, agent_labels.c.label == bindparam("label"))
    .values(version=bindparam("to_version"))
)
DELETE_LABEL: Final = Prepared(
    delete(agent_labels).where(_label_of_agent, agent_labels.c.label == bindparam("label"))
)
DELETE_LABELS: Final = Prepared(delete(agent_labels).where(_label_of_agent))
#: The log's columns but the agent's, in ``LabelMove``'s order (rows are read by name).
_MOVE_FIELDS: Final = tuple(LabelMove.model_fields)
_MOVE_KEYS: Final = ("agent_id", "agent_name", *_MOVE_FIELDS)
INSERT_MOVE: Final = Prepared(insert(label_moves), columns=_MOVE_KEYS)
_MOVE_COLUMNS: Final = tuple(label_moves.c[field] for field in _MOVE_FIELDS)
MOVES: Final = Prepared(
    select(*_MOVE_COLUMNS)
    .where(label_moves.c.agent_id == bindparam("agent_id"))
    .order_by(label_moves.c.id.desc())
)
_of_shares = label_shares.c.agent_id == bindparam("agent_id")
#: Every share of the agent's split labels, by label and version.
SHARES: Final = Prepared(
    select(label_shares.c.label, label_shares.c.version, label_shares.c.weight)
    .where(_of_shares)
    .order_by(label_shares.c.label, label_shares.c.version)
)
LABEL_SHARES: Final = Prepared(
    select(label_shares.c.version, label_shares.c.weight)
    .where(_of_shares, label_shares.c.label == bindparam("label"))
    .order_by(label_shares.c.version)
)
INSERT_SHARE: Final = Prepared(
    insert(label_shares), columns=("agent_id", "label", "version", "weight")
)
DELETE_SHARES: Final = Prepared(
    delete(label_shares).where(_of_shares, label_shares.c.label == bindparam("label"))
)
DELETE_AGENT_SHARES: Final = Prepared(delete(label_shares).where(_of_shares))
_of_gates = label_gates.c.agent_id == bindparam("agent_id")
_GATE_FIELDS: Final = tuple(LabelGate.model_fields)
GATES: Final = Prepared(
    select(label_gates.c.label, *(label_gates.c[f] for f in _GATE_FIELDS))
    .where(_of_gates)
    .order_by(label_gates.c.label)
)
GATE: Final = Prepared(
    select(*(label_gates.c[f] for f in _GATE_FIELDS)).where(
        _of_gates, label_gates.c.label == bindparam("label")
    )
)
INSERT_GATE: Final = Prepared(insert(label_gates), columns=("agent_id", "label", *_GATE_FIELDS))
DELETE_GATE: Final = Prepared(
    delete(label_gates).where(_of_gates, label_gates.c.label == bindparam("label"))
)
DELETE_GATES: Final = Prepared(delete(label_gates).where(_of_gates))
#: One version's lifetime counters (``compare_versions``, a gate's check).
VERSION_FIGURES: Final = Prepared(
    select(stats_table.c.runs, stats_table.c.successes, stats_table.c.duration_total).where(
        stats_table.c.agent_id == bindparam("agent_id"),
        stats_table.c.version == bindparam("version"),
    )
)
#: Delete (``delete_history``) or archive (agent_id NULL, name kept) an agent's versions and log.
DELETE_VERSIONS: Final = Prepared(delete(agent_versions).where(_of_agent))
_ARCHIVED_KEYS: Final = tuple(k for k in _SNAPSHOT_KEYS if k != "agent_id")
#: Copy an agent's snapshots into the archive, by name (``DELETE_VERSIONS`` follows).
ARCHIVE_VERSIONS: Final = Prepared(
    insert(versions_archive).from_select(
        ["agent_name", *_ARCHIVED_KEYS],
        select(bindparam("name"), *(agent_versions.c[k] for k in _ARCHIVED_KEYS))
        .where(_of_agent)
        .order_by(agent_versions.c.version),
    )
)
DELETE_MOVES: Final = Prepared(
    delete(label_moves).where(label_moves.c.agent_id == bindparam("agent_id"))
)
ARCHIVE_MOVES: Final = Prepared(
    update(label_moves)
    .where(label_moves.c.agent_id == bindparam("archived_id"))
    .values(agent_id=None)
)
DELETE_STATS: Final = Prepared(
    delete(stats_table).where(stats_table.c.agent_id == bindparam("agent_id"))
)
#: The versions ``PRUNE`` deletes, as a derived table: MariaDB allows no ``LIMIT``/``OFFSET``
#: in a subquery under ``IN`` itself.
_PRUNED: Final = (
    select(agent_versions.c.version)
    .where(
        _of_agent,
        agent_versions.c.version != bindparam("current"),
        agent_versions.c.version.not_in(select(agent_labels.c.version).where(_label_of_agent)),
        agent_versions.c.version.not_in(
            select(label_shares.c.version).where(label_shares.c.agent_id == bindparam("agent_id"))
        ),
    )
    .order_by(_newest_first)
    .offset(bindparam("keep", type_=Integer()))
    .subquery("pruned")
)
#: Keep the ``keep`` newest snapshots besides the current version and the labelled ones.
PRUNE: Final = Prepared(
    delete(agent_versions).where(_of_agent, agent_versions.c.version.in_(select(_PRUNED.c.version)))
)

_of_stats = (
    stats_table.c.agent_id == bindparam("agent_id"),
    stats_table.c.version == bindparam("version"),
)
RUN_TIME = bindparam("timestamp", type_=UtcDateTime())
STATS_KEYS: Final = (
    "agent_id",
    "version",
    "runs",
    "successes",
    "errors",
    "duration_total",
    "last_executed_at",
    TENANT,
)


def count_run(insert_of: Callable[[Table], Any], agent_id: Any, version: Any) -> Any:
    """One run of ``version`` counted, its first inserting the version's row: the one upsert
    (``INSERT ... ON CONFLICT DO UPDATE``) of every engine that has one, built by the engine's
    ``insert_of`` (its dialect's ``insert``). Parameters ``succeeded``, ``failed``,
    ``duration``, ``timestamp``; ``agent_id`` and ``version`` may be parameters, or columns of
    a statement it is part of (``engines.postgresql.statements.RECORD_AT_ONCE``)."""
    counted = insert_of(stats_table).from_select(
        list(STATS_KEYS),
        select(
            agent_id,
            version,
            literal(1),
            bindparam("succeeded", type_=Integer()),
            bindparam("failed", type_=Integer()),
            bindparam("duration", type_=stats_table.c.duration_total.type),
            RUN_TIME,
            tenant_param(),
        ),
    )
    last, ran = stats_table.c.last_executed_at, counted.excluded.last_executed_at
    return counted.on_conflict_do_update(
        index_elements=[stats_table.c.agent_id, stats_table.c.version],
        set_={
            "runs": stats_table.c.runs + 1,
            "successes": stats_table.c.successes + counted.excluded.successes,
            "errors": stats_table.c.errors + counted.excluded.errors,
            "duration_total": stats_table.c.duration_total + counted.excluded.duration_total,
            "last_executed_at": case((or_(last.is_(None), last < ran), ran), else_=last),
        },
    )


STATS_BY_VERSION: Final = Prepared(
    select(
        stats_table.c.version,
        stats_table.c.runs,
        stats_table.c.successes,
        stats_table.c.errors,
        stats_table.c.duration_total,
        stats_table.c.last_executed_at,
    )
    .where(stats_table.c.agent_id == bindparam("agent_id"))
    .order_by(stats_table.c.version)
)
RETAINED_BY_VERSION: Final = Prepared(
    select(executions.c.agent_version, func.count())
    .where(executions.c.agent_id == bindparam("agent_id"))
    .group_by(executions.c.agent_version)
)


def snapshot_values(
    agent_id: int, version: int, config: AgentConfig, created_at: Any, message: str | None
) -> dict[str, Any]:
    """The parameters of ``INSERT_VERSION`` for one snapshot."""
    return {
        "agent_id": agent_id,
        "version": version,
        **plain_values(config, UPDATABLE_FIELDS),
        "created_at": created_at,
        "message": message,
    }


def version_from_row(name: str, row: Sequence[Any], labels: list[str]) -> AgentVersion:
    """The snapshot in a row of ``_VERSION_COLUMNS``."""
    config = _config_of(row, name)
    return version_of(name, row[_NUMBER], config, row[_CREATED_AT], row[_MESSAGE], labels)


def move_values(move: LabelMove) -> dict[str, Any]:
    """The parameters of ``INSERT_MOVE`` for ``move`` but the agent's."""
    values = {field: getattr(move, field) for field in _MOVE_FIELDS}
    for side in ("from_weights", "to_weights"):
        weights = values[side]
        values[side] = None if weights is None else spelled(weights)
    if move.checks is not None:
        values["checks"] = [check.model_dump(mode="json") for check in move.checks]
    return values


def parsed_weights(text: str | None) -> Weights | None:
    """A split as the log spells it (``3=90 4=10``), as ``Weights``."""
    if text is None:
        return None
    return {int(v): int(w) for v, w in (part.split("=") for part in text.split())}


def move_from_row(row: Sequence[Any]) -> LabelMove:
    values = dict(zip(_MOVE_FIELDS, row, strict=True))
    values["from_weights"] = parsed_weights(values["from_weights"])
    values["to_weights"] = parsed_weights(values["to_weights"])
    values["rollback"] = bool(values["rollback"])
    values["forced"] = bool(values["forced"])
    values["imported"] = bool(values["imported"])
    if values["checks"] is not None:
        values["checks"] = [trusted(GateCheck, **check) for check in values["checks"]]
    return trusted(LabelMove, **values)


def gate_from_row(row: Sequence[Any]) -> LabelGate:
    return trusted(LabelGate, **dict(zip(_GATE_FIELDS, row, strict=True)))


def splits_from_rows(rows: Sequence[Sequence[Any]]) -> dict[str, Weights]:
    """The splits in ``SHARES`` rows, by label."""
    splits: dict[str, Weights] = {}
    for label, version, weight in rows:
        splits.setdefault(label, {})[version] = weight
    return splits


def stats_from_rows(
    rows: Sequence[Sequence[Any]], retained: dict[int | None, int]
) -> dict[int, ExecutionStats]:
    """Per-version statistics from ``STATS_BY_VERSION`` rows and ``RETAINED_BY_VERSION``."""
    return {
        row[0]: trusted(
            ExecutionStats,
            total_executions=row[1],
            success_count=row[2],
            error_count=row[3],
            retained=retained.get(row[0], 0),
            average_duration_seconds=float(row[4]) / row[1] if row[1] else None,
            last_executed_at=row[5],
        )
        for row in rows
    }
