"""The ``outputs/agents`` JSON documents: one place that knows their shape and key order.

``agent_document`` and ``history_document`` build the contract's v2 documents (``{name}.json`` and
``{name}_history.json``) as dicts in the contract's key order; ``dumps`` renders them exactly as the
files are written (``indent=2``, UTF-8 text, a final newline). Used by export, the mirror and
``get_agent_config``.

The reading side turns a file's text back into domain models: ``loads`` (syntax errors with line
and column), ``agent_from_document`` (v1 documents upgraded by the contract's
``_migrate_v1_metadata`` rules; a configuration written by hand, without ``_metadata``, given a new
agent's metadata when the caller says it may) and ``history_from_document``, validated by the same
models as the repository. Every problem is a ``DocumentError`` whose message says what is wrong
and where.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

from .models import (
    HISTORY_MAX_RECORDS,
    NAME_RULE,
    WHEN_SET_FIELDS,
    Agent,
    AgentConfig,
    AgentMetadata,
    ExecutionHistory,
    ExecutionRecord,
    is_valid_name,
)
from .validation import GROWING_FIELDS, field_errors, no_room_for_next_write


def format_timestamp(value: datetime) -> str:
    """ISO 8601 in UTC with six-digit microseconds: ``2025-01-09T14:30:22.123456+00:00``."""
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _optional_timestamp(value: datetime | None) -> str | None:
    return None if value is None else format_timestamp(value)


#: The fields of a configuration, in the contract's order (the model's); the lists among them
#: (a document owns its lists).
_CONFIG_FIELDS: Final = tuple(AgentConfig.model_fields)
_LIST_FIELDS: Final = tuple(
    name for name, info in AgentConfig.model_fields.items() if get_origin(info.annotation) is list
)


def config_document(config: AgentConfig) -> dict[str, Any]:
    """A configuration's fields as the agent document (and a version's ``config``) holds them,
    in the model's order; a field ``WhenSet`` marks only when it is not None."""
    document = {field: getattr(config, field) for field in _CONFIG_FIELDS}
    for field in _LIST_FIELDS:
        document[field] = list(document[field])
    for field in WHEN_SET_FIELDS:
        if document[field] is None:
            del document[field]
    return document


def agent_document(agent: Agent) -> dict[str, Any]:
    """The v2 agent document, keys in the contract's order: the configuration, then the
    metadata block (the contract's fixed format, not configuration fields)."""
    meta = agent.metadata
    document = config_document(agent)
    document["_metadata"] = {
        "created_at": format_timestamp(meta.created_at),
        "updated_at": format_timestamp(meta.updated_at),
        "last_executed_at": _optional_timestamp(meta.last_executed_at),
        "version": meta.version,
        "builder": meta.builder,
        "execution_count": meta.execution_count,
        "success_count": meta.success_count,
        "error_count": meta.error_count,
    }
    return document


def record_document(record: ExecutionRecord) -> dict[str, Any]:
    """One execution record, keys in the contract's order."""
    return {
        "execution_id": record.execution_id,
        "timestamp": format_timestamp(record.timestamp),
        "task": record.task,
        "result_summary": record.result_summary,
        "success": record.success,
        "duration_seconds": record.duration_seconds,
        "tool_calls_count": record.tool_calls_count,
        "error_type": record.error_type,
    }


def history_document(history: ExecutionHistory) -> dict[str, Any]:
    """The history document: records newest first, lifetime total."""
    return {
        "agent_name": history.agent_name,
        "executions": [record_document(r) for r in history.executions],
        "total_executions": history.total_executions,
    }


def dumps(document: dict[str, Any]) -> str:
    """A document as its file holds it: ``indent=2``, non-ASCII kept as is, final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------------------------------
# Reading: text -> document -> domain model, upgrading v1 documents on the way
# --------------------------------------------------------------------------------------------------

#: Fields the v2 ``_metadata`` block adds to v1's (created_at, version "1.0.0", builder).
_V2_METADATA_FIELDS: Final = (
    "updated_at",
    "last_executed_at",
    "execution_count",
    "success_count",
    "error_count",
)
#: How many validation errors a reason lists before "(+N more)".
_MAX_REPORTED_ERRORS: Final = 3
#: The model's field names a document spells differently.
_DOCUMENT_NAMES: Final = {"metadata": "_metadata"}


#: A JSON escape of a surrogate (``\uD800`` to ``\uDFFF``): paired, it spells one character; alone,
#: text no store can keep (and pydantic cannot render in a message), so such documents are refused.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


class DocumentError(ValueError):
    """A file that is not a valid agent or history document; the message says why."""


def loads(data: bytes | str) -> Any:
    """Parse a file's text (UTF-8, an optional BOM); syntax errors name the line and column."""
    try:
        if not isinstance(data, bytes):
            text = data
        elif data.startswith(codecs.BOM_UTF8):  # what ``decode("utf-8-sig")`` does, less slowly
            text = data[3:].decode()
        else:
            text = data.decode()
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise DocumentError("invalid JSON: nested too deeply") from None
    # Rare: check that every escape pair decoded to a character (no backslash, no escape at all).
    if "\\" in text and _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise DocumentError("not valid Unicode: a \\u escape is a lone surrogate") from None
    return document


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _require_object(document: object, what: str) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise DocumentError(f"expected {what} (a JSON object), found {_json_type(document)}")
    return document


def is_history_document(document: object) -> bool:
    """True for a history document (it has ``agent_name``, an agent document has ``name``)."""
    return isinstance(document, dict) and "agent_name" in document and "name" not in document


def migrate_v1_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The contract's ``_migrate_v1_metadata``, on a copy: string version -> 1, missing v2 fields
    get their defaults (``updated_at`` = ``created_at``, ``last_executed_at`` null, counters 0)."""
    migrated = dict(metadata)
    if isinstance(migrated.get("version"), str):
        migrated["version"] = 1
    if "created_at" in migrated:  # without it the model reports the missing field
        migrated.setdefault("updated_at", migrated["created_at"])
    migrated.setdefault("last_executed_at", None)
    for counter in ("execution_count", "success_count", "error_count"):
        migrated.setdefault(counter, 0)
    return migrated


def is_config_document(document: object) -> bool:
    """True for a configuration written by hand: an object without a ``_metadata`` key (a key
    there, even null, makes it an agent document, whose block is then checked)."""
    return isinstance(document, dict) and "_metadata" not in document and "metadata" not in document


def is_v1_document(document: Mapping[str, Any]) -> bool:
    """True when an agent document needs the v1 -> v2 upgrade (string version, missing fields)."""
    metadata = document.get("_metadata")
    if "tags" not in document or not isinstance(metadata, Mapping):
        return True
    return isinstance(metadata.get("version"), str) or any(
        key not in metadata for key in _V2_METADATA_FIELDS
    )


def describe_validation_error(error: ValidationError) -> str:
    """One line per problem, ``field.path: message``, the first few only."""
    problems = [
        f"{e.field}: {e.message}"
        for e in field_errors(error, top_level="document", aliases=_DOCUMENT_NAMES)
    ]
    reason = "; ".join(problems[:_MAX_REPORTED_ERRORS])
    if len(problems) > _MAX_REPORTED_ERRORS:
        reason += f" (+{len(problems) - _MAX_REPORTED_ERRORS} more)"
    return reason


def agent_from_document(document: object, *, new_at: datetime | None = None) -> Agent:
    """Validate an agent document (v1 upgraded to v2) with the repository's own models.

    ``new_at``: the store's time, given where a configuration written by hand (no ``_metadata``,
    ``is_config_document``) may stand for a new agent: it gets the metadata a create gives
    (version 1, created and updated ``new_at``, no runs). Without it such a document is
    refused (``_metadata: Field required``). Raises ``DocumentError`` naming every field at
    fault (as far as the first few).
    """
    fields = dict(_require_object(document, "an agent document"))
    if "metadata" in fields:  # the model's field name; in a file only ``_metadata`` is valid
        raise DocumentError("metadata: unknown key (the metadata block is '_metadata')")
    if new_at is not None and is_config_document(fields):
        fields["metadata"] = AgentMetadata(created_at=new_at, updated_at=new_at)
    else:
        metadata = fields.pop("_metadata", None)
        if metadata is None:
            raise DocumentError("_metadata: Field required")
        fields["metadata"] = migrate_v1_metadata(_require_object(metadata, "'_metadata'"))
    try:
        agent = Agent.model_validate(fields)
    except ValidationError as exc:
        raise DocumentError(describe_validation_error(exc)) from None
    full = no_room_for_next_write(
        {f"_metadata.{field}": getattr(agent.metadata, field) for field in GROWING_FIELDS}
    )
    if full is not None:
        raise DocumentError(full)
    return agent


class _FileRecords(BaseModel):
    """Every record of a history file, validated before the newest are chosen."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # an import's, built on first use

    executions: list[ExecutionRecord]


def _newest_records(records: list[Any]) -> list[ExecutionRecord]:
    """The newest ``HISTORY_MAX_RECORDS`` of ``records``, newest first by timestamp whatever
    the file's order (records of one time keep the file's order)."""
    try:
        valid = _FileRecords.model_validate({"executions": records}).executions
    except ValidationError as exc:
        raise DocumentError(describe_validation_error(exc)) from None
    return sorted(valid, key=lambda r: r.timestamp, reverse=True)[:HISTORY_MAX_RECORDS]


def history_from_document(document: object) -> ExecutionHistory:
    """Validate a history document: a valid agent name, valid records of which the newest
    ``HISTORY_MAX_RECORDS`` by timestamp are kept, newest first (a file may list them in any
    order), unique execution ids, a lifetime total covering the records."""
    fields = dict(_require_object(document, "a history document"))
    name = fields.get("agent_name")
    if not is_valid_name(name):
        raise DocumentError(f"agent_name: {NAME_RULE} (got {json.dumps(name)[:80]})")
    records = fields.get("executions")
    if isinstance(records, list):
        fields["executions"] = _newest_records(records)
    try:
        history = ExecutionHistory.model_validate(fields)
    except ValidationError as exc:
        raise DocumentError(describe_validation_error(exc)) from None
    full = no_room_for_next_write({"total_executions": history.total_executions})
    if full is not None:
        raise DocumentError(full)
    seen: set[str] = set()
    for record in history.executions:
        if record.execution_id in seen:
            raise DocumentError(f"executions: duplicate execution_id {record.execution_id!r}")
        seen.add(record.execution_id)
    count = len(records) if isinstance(records, list) else 0
    if history.total_executions < count:
        raise DocumentError(
            f"total_executions: {history.total_executions} is less than the {count} "
            "records the file holds"
        )
    return history
