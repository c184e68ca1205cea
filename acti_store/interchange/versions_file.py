"""``{name}_versions.json``: an agent's configuration versions, labels and label log.

Written by ``export_json(..., versions=True)`` beside ``{name}.json`` and ``{name}_history.json``
(which stay byte for byte what they are without it), read by ``import_json`` with its agent's
file. The document::

    {"agent_name": ..., "current_version": N,
     "versions": [{"version", "created_at", "message", "config": {the seven fields}}, ...],
     "labels": {"production": 3, ...},
     "label_history": [{"label", "from_version", "to_version", "moved_at", "note"}, ...]}

``versions`` and ``label_history`` newest first. "File names decide" as for histories: agents
``x`` and ``x_versions`` both want ``x_versions.json``; in an export with versions, ``x``'s
versions file has it and ``x_versions`` is reported not exported.
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
from ..versioning import MESSAGE_MAX_LENGTH, VersionLog, is_valid_label

VERSIONS_SUFFIX: Final = "_versions.json"
_KEYS: Final = ("agent_name", "current_version", "versions", "labels", "label_history")


def versions_file_name(name: str) -> str:
    return f"{name}{VERSIONS_SUFFIX}"


def is_versions_document(document: object) -> bool:
    return isinstance(document, dict) and "current_version" in document and "name" not in document


def versions_document(agent: Agent, log: VersionLog) -> dict[str, Any]:
    """The versions document of ``agent``, from ``log`` read in the same snapshot as the agent
    (``iter_export_versions``); versions above its own, should a log be newer, are left out,
    and so are labels pointing at them."""
    current = agent.metadata.version
    kept = [v for v in log.versions if v.version <= current]
    numbers = {v.version for v in kept}
    return {
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
        "labels": {label: n for label, n in sorted(log.labels.items()) if n in numbers},
        "label_history": [
            {
                "label": m.label,
                "from_version": m.from_version,
                "to_version": m.to_version,
                "moved_at": format_timestamp(m.moved_at),
                "note": m.note,
            }
            for m in log.label_history
        ],
    }


def parse_versions(file: str, document: object, agent: Agent) -> VersionLog:
    """Validate the versions document of ``agent`` (read from ``file``): it must name the agent
    and its version, hold that version with the agent's configuration, and its labels must
    point at versions it holds."""
    if not isinstance(document, dict) or set(document) != set(_KEYS):
        raise DocumentError(f"not a versions document: its keys must be {', '.join(_KEYS)}")
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
                "labels": document["labels"],
                "label_history": document["label_history"],
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
    for snapshot in log.versions:
        if snapshot.message is not None and len(snapshot.message) > MESSAGE_MAX_LENGTH:
            raise DocumentError(f"version {snapshot.version}: message over {MESSAGE_MAX_LENGTH}")
