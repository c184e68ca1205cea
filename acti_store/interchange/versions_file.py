"""``{name}_versions.json``: an agent's configuration versions, labels and label log.

Written by ``export_json(..., versions=True)`` beside ``{name}.json`` and ``{name}_history.json``
(which stay byte for byte what they are without it), read by ``import_json`` with its agent's
file. The document::

    {"agent_name": ..., "current_version": N,
     "versions": [{"version", "created_at", "message", "config": {the seven fields}}, ...],
     "labels": {"production": 3, ...},
     "splits": {"production": {"3": 90, "4": 10}},
     "gates": {"production": {"min_runs": 50, "min_success_rate": 0.95,
                              "max_mean_duration": null}},
     "label_history": [{"label", "from_version", "to_version", "moved_at", "note",
                        "from_weights", "to_weights", "rollback", "forced", "checks"}, ...]}

``versions`` and ``label_history`` newest first. What labels route and protect is written only
where it is not the default: ``splits`` (the labels that split their traffic; ``labels`` has
their main version) and ``gates`` only when there are some, and a move's ``from_weights``,
``to_weights`` (a side that is a split), ``rollback``, ``forced`` (when true) and ``checks``
(the label had a gate) only when set. So a store that never split, protected or forced a
label writes the bytes it wrote before labels could route, and older files import as they did.

An imported log is history: each entry is read strictly (a flag is ``true`` or ``false``, a
count a whole number from 0, successes at most the runs, versions ones the agent has had) and
marked ``imported`` (every entry of a file is: the mark is not written, so a round trip stays
byte for byte). What the store's own protected labels and gates become is checked where
the import replaces the agent (``repository.import_gates``).

"File names decide" as for histories: agents ``x`` and ``x_versions`` both want
``x_versions.json``; in an export with versions, ``x``'s versions file has it and
``x_versions`` is reported not exported.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ValidationError

from ..documents import (
    DocumentError,
    config_document,
    describe_validation_error,
    format_timestamp,
)
from ..models import Agent
from ..routing import SPLIT_MAX, TOTAL, Weights, main_version
from ..versioning import MESSAGE_MAX_LENGTH, LabelGate, LabelMove, VersionLog, is_valid_label

VERSIONS_SUFFIX: Final = "_versions.json"
_KEYS: Final = ("agent_name", "current_version", "versions", "labels", "label_history")
#: The keys written only when they hold something (``splits``, ``gates``).
_OPTIONAL_KEYS: Final = ("splits", "gates")
#: A label move's keys written only when not their default (the model's), with that default.
_MOVE_DEFAULTS: Final[dict[str, object]] = {
    field: LabelMove.model_fields[field].default
    for field in ("from_weights", "to_weights", "rollback", "forced", "checks")
}


def versions_file_name(name: str) -> str:
    return f"{name}{VERSIONS_SUFFIX}"


def is_versions_document(document: object) -> bool:
    return isinstance(document, dict) and "current_version" in document and "name" not in document


def versions_document(agent: Agent, log: VersionLog) -> dict[str, Any]:
    """The versions document of ``agent``, from ``log`` read in the same snapshot as the agent
    (``iter_export_versions``); versions above its own, should a log be newer, are left out,
    and so are labels pointing at them (a split: at any of them)."""
    current = agent.metadata.version
    kept = [v for v in log.versions if v.version <= current]
    numbers = {v.version for v in kept}
    splits = {
        label: weights
        for label, weights in sorted(log.splits.items())
        if numbers.issuperset(weights)
    }
    document: dict[str, Any] = {
        "agent_name": agent.name,
        "current_version": current,
        "versions": [
            {
                "version": v.version,
                "created_at": format_timestamp(v.created_at),
                "message": v.message,
                "config": config_document(v.config),
            }
            for v in kept
        ],
        "labels": {
            label: n
            for label, n in sorted(log.labels.items())
            if n in numbers and (label in splits or label not in log.splits)
        },
    }
    if splits:
        document["splits"] = {label: _weights_document(w) for label, w in splits.items()}
    if log.gates:
        document["gates"] = {
            label: gate.model_dump(mode="json") for label, gate in sorted(log.gates.items())
        }
    document["label_history"] = [_move_document(m) for m in log.label_history]
    return document


def _weights_document(weights: Weights) -> dict[str, int]:
    return {str(version): weight for version, weight in sorted(weights.items())}


def _move_document(move: LabelMove) -> dict[str, Any]:
    """One entry of ``label_history``: the five keys every file has, then those of the
    routing fields that are not their default."""
    entry: dict[str, Any] = {
        "label": move.label,
        "from_version": move.from_version,
        "to_version": move.to_version,
        "moved_at": format_timestamp(move.moved_at),
        "note": move.note,
    }
    for field, default in _MOVE_DEFAULTS.items():
        value = getattr(move, field)
        if value == default:
            continue
        if field.endswith("_weights"):
            value = _weights_document(value)
        elif field == "checks":
            value = [check.model_dump(mode="json") for check in value]
        entry[field] = value
    return entry


def parse_versions(file: str, document: object, agent: Agent) -> VersionLog:
    """Validate the versions document of ``agent`` (read from ``file``): it must name the agent
    and its version, hold that version with the agent's configuration, and its labels must
    point at versions it holds; a split's weights, on versions it holds, must sum to 100 and its
    label stand for its main version. ``splits``, ``gates`` and a move's routing fields may be
    there or not (older files)."""
    if (
        not isinstance(document, dict)
        or not set(_KEYS) <= set(document)
        or not set(document) <= {*_KEYS, *_OPTIONAL_KEYS}
    ):
        raise DocumentError(
            f"not a versions document: its keys must be {', '.join(_KEYS)} "
            f"(and {' and '.join(_OPTIONAL_KEYS)} when it has some)"
        )
    if document["agent_name"] != agent.name or file != versions_file_name(agent.name):
        raise DocumentError(
            f"the versions of agent {document['agent_name']!r}: its file name must be "
            f"{versions_file_name(str(document['agent_name']))}"
        )
    if document["current_version"] != agent.metadata.version:
        raise DocumentError(
            f"current_version {document['current_version']!r} is not the agent file's version "
            f"{agent.metadata.version}"
        )
    try:
        log = VersionLog.model_validate(
            {
                "versions": [
                    _version(item, agent.name) for item in _list(document["versions"], "versions")
                ],
                "labels": _labels(document["labels"]),
                "label_history": [
                    _move(item) for item in _list(document["label_history"], "label_history")
                ],
                "splits": {
                    label: _weights(weights, f"splits.{label}")
                    for label, weights in _mapping(document.get("splits", {}), "splits").items()
                },
                "gates": _gates(document.get("gates", {})),
            }
        )
    except ValidationError as exc:
        raise DocumentError(describe_validation_error(exc)) from None
    _check(log, agent)
    return log


def _list(value: object, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise DocumentError(f"{field} must be a list")
    return value


def _mapping(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DocumentError(f"{field} must be an object")
    return value


def _labels(value: object) -> dict[str, int]:
    """``labels`` as a file spells them: each on a version number (``3``, not ``"3"``)."""
    labels = _mapping(value, "labels")
    for label, version in labels.items():
        if type(version) is not int:
            raise DocumentError(f"labels: {label!r} must be on a version number, not {version!r}")
    return labels


def _weights(value: object, field: str) -> Weights:
    """A split as a file spells it (``{"3": 90, "4": 10}``): 2 to ``SPLIT_MAX`` versions, each
    with a whole percent from 1 to 100, summing to 100; in version order."""
    rule = (
        f"must split over 2 to {SPLIT_MAX} versions, each with a whole percent from 1 to "
        f'{TOTAL}, summing to {TOTAL} (e.g. {{"3": 90, "4": 10}})'
    )
    if not isinstance(value, dict) or not 2 <= len(value) <= SPLIT_MAX:
        raise DocumentError(f"{field} {rule}")
    weights: Weights = {}
    for version, weight in value.items():
        if not (isinstance(version, str) and version.isdecimal() and version == str(int(version))):
            raise DocumentError(f"{field}: {version!r} is not a version number; {field} {rule}")
        if type(weight) is not int or not 1 <= weight <= TOTAL:
            raise DocumentError(f"{field}: version {version} has {weight!r}; {field} {rule}")
        weights[int(version)] = weight
    if sum(weights.values()) != TOTAL:
        raise DocumentError(f"{field}: the weights sum to {sum(weights.values())}; {field} {rule}")
    return dict(sorted(weights.items()))


def _gates(value: object) -> dict[str, LabelGate]:
    """The gates as a file spells them, each read strictly (JSON's own types: ``true`` is not
    a number of runs, ``"0.95"`` not a rate)."""
    gates: dict[str, LabelGate] = {}
    for label, gate in _mapping(value, "gates").items():
        try:
            gates[label] = LabelGate.model_validate(gate, strict=True)
        except ValidationError as exc:
            raise DocumentError(f"gates.{label}: {describe_validation_error(exc)}") from None
    return gates


def _move(item: object) -> LabelMove:
    """A ``label_history`` entry, read strictly (JSON's own types: ``"true"`` is not a flag,
    ``"3"`` not a version), its weights read as ``_weights``. It is history another store
    wrote: marked ``imported``."""
    if not isinstance(item, dict):
        raise DocumentError(f"label_history: each entry must be an object, not {item!r:.40}")
    entry = {
        **item,
        **{
            side: _weights(item[side], f"label_history: {side}")
            for side in ("from_weights", "to_weights")
            if item.get(side) is not None
        },
    }
    try:
        # ``moved_at`` as text (JSON has no time), every other field as JSON spells it.
        spelled = LabelMove.model_validate(entry)
        move = LabelMove.model_validate(entry | {"moved_at": spelled.moved_at}, strict=True)
    except ValidationError as exc:
        raise DocumentError(f"label_history: {describe_validation_error(exc)}") from None
    return move.model_copy(update={"imported": True})


def _version(item: object, name: str) -> object:
    if not isinstance(item, dict) or not isinstance(item.get("config"), dict):
        return item  # the model says what is wrong
    if item["config"].get("name") != name:
        raise DocumentError(
            f"version {item.get('version')!r} is the configuration of another agent"
        )
    return {"name": name, **item}


def _check(log: VersionLog, agent: Agent) -> None:
    numbers = [v.version for v in log.versions]
    if len(set(numbers)) != len(numbers):
        raise DocumentError("a version is listed twice")
    if max(numbers, default=0) > agent.metadata.version:
        raise DocumentError(f"a version is newer than the agent's {agent.metadata.version}")
    current = [v for v in log.versions if v.version == agent.metadata.version]
    if current and current[0].config != agent.config:
        raise DocumentError("the current version's configuration is not the agent file's")
    for label, version in log.labels.items():
        if not is_valid_label(label) or version not in numbers:
            raise DocumentError(f"label {label!r} must be a valid label on a listed version")
    for label, weights in log.splits.items():
        _check_split(label, weights, log, numbers)
    for label in log.gates:
        if not is_valid_label(label):
            raise DocumentError(f"gate {label!r} must be on a valid label")
    for move in log.label_history:
        _check_move(move, agent.metadata.version)
    for snapshot in log.versions:
        if snapshot.message is not None and len(snapshot.message) > MESSAGE_MAX_LENGTH:
            raise DocumentError(f"version {snapshot.version}: message over {MESSAGE_MAX_LENGTH}")


def _check_split(label: str, weights: Weights, log: VersionLog, numbers: list[int]) -> None:
    if label not in log.labels:
        raise DocumentError(f"split {label!r} must be a label in labels")
    unlisted = [version for version in weights if version not in numbers]
    if unlisted:
        raise DocumentError(f"split {label!r}: version {unlisted[0]} is not a listed version")
    main = main_version(weights)
    if log.labels[label] != main:
        raise DocumentError(
            f"label {label!r} must be on its split's main version {main} (the largest share, "
            f"the older version on a tie), not {log.labels[label]}"
        )


def _check_move(move: LabelMove, current: int) -> None:
    """A move's versions are versions the agent has had (1 to ``current``: the log outlives
    pruned versions), its splits' main versions where a side is a split; its checks are of the
    versions it sent a share to, and a forced move has them (a gate refused it); its note
    is as long as a note may be."""
    named = {move.from_version, move.to_version, *(move.before or {}), *(move.after or {})}
    named.update(check.version for check in move.checks or [])
    unknown = sorted(v for v in named if v is not None and v > current)
    if unknown:
        raise DocumentError(
            f"label_history: a move of {move.label!r} names version {unknown[0]}, newer than "
            f"the agent's {current}"
        )
    for side, version, weights in (
        ("from", move.from_version, move.from_weights),
        ("to", move.to_version, move.to_weights),
    ):
        if weights is not None and version != main_version(weights):
            raise DocumentError(
                f"label_history: a move of {move.label!r} has {side}_weights with main version "
                f"{main_version(weights)}, but {side}_version {version}"
            )
    stray = [c.version for c in move.checks or [] if c.version not in (move.after or {})]
    if stray:
        raise DocumentError(
            f"label_history: a move of {move.label!r} has a check of version {stray[0]}, "
            "which it sent no share to"
        )
    if move.forced and move.checks is None:
        raise DocumentError(
            f"label_history: a forced move of {move.label!r} must have its gate's checks"
        )
    if move.note is not None and len(move.note) > MESSAGE_MAX_LENGTH:
        raise DocumentError(
            f"label_history: a move of {move.label!r} has a note over {MESSAGE_MAX_LENGTH}"
        )
