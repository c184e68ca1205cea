"""Hand-written helpers of the reference stores (raw sqlite3, raw psycopg, JSON files) and the
peer.

They build the contract's documents as plain dicts, in the contract's key order, without going
through acti_store: the reference stores are meant to be the simplest code that does the job.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from acti_store.models import AgentConfig, ExecutionRecord

BUILDER: Final = "acti-agent-builder"
HISTORY_MAX: Final = 50
#: An agent row as every raw store reads it, and an execution record: the columns, in order.
AGENT_COLUMNS: Final = (
    "name, description, system_prompt, tools, model, stratum, tags, created_at, updated_at, "
    "last_executed_at, version, builder, execution_count, success_count, error_count"
)
RECORD_COLUMNS: Final = (
    "execution_id, timestamp, task, result_summary, success, duration_seconds, "
    "tool_calls_count, error_type"
)
TOOL_ORDER: Final = ("voice", "websearch", "calendar", "communication", "crm")
TOOL_BITS: Final = {tool: 1 << i for i, tool in enumerate(TOOL_ORDER)}


def iso(value: datetime) -> str:
    """The contract's timestamp text. Every instant in the benchmark is already UTC."""
    return value.isoformat(timespec="microseconds")


def iso_or_none(value: datetime | None) -> str | None:
    return None if value is None else iso(value)


def tools_mask(tools: list[str]) -> int:
    mask = 0
    for tool in tools:
        mask |= TOOL_BITS[tool]
    return mask


def masks_containing(tools: list[str]) -> list[int]:
    required = tools_mask(tools)
    return [m for m in range(1 << len(TOOL_ORDER)) if m & required == required]


def new_agent_document(config: AgentConfig, now: str) -> dict[str, Any]:
    return {
        "name": config.name,
        "description": config.description,
        "system_prompt": config.system_prompt,
        "tools": list(config.tools),
        "model": config.model,
        "stratum": config.stratum,
        "tags": list(config.tags),
        "_metadata": {
            "created_at": now,
            "updated_at": now,
            "last_executed_at": None,
            "version": 1,
            "builder": BUILDER,
            "execution_count": 0,
            "success_count": 0,
            "error_count": 0,
        },
    }


def record_document(record: ExecutionRecord) -> dict[str, Any]:
    return {
        "execution_id": record.execution_id,
        "timestamp": iso(record.timestamp),
        "task": record.task,
        "result_summary": record.result_summary,
        "success": record.success,
        "duration_seconds": record.duration_seconds,
        "tool_calls_count": record.tool_calls_count,
        "error_type": record.error_type,
    }


def dumps(document: dict[str, Any]) -> str:
    """A document as its file holds it (the contract's format)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def read_export(directory: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """The agent documents of an export folder in file-name order, each with its history
    document (None without a history file): what the hand-written stores import."""
    files = set(os.listdir(directory))
    for file in sorted(files):
        if not file.endswith(".json") or file.endswith("_history.json"):
            continue
        with open(directory / file, "rb") as src:
            doc = json.loads(src.read())
        history = None
        if (history_file := f"{file[:-5]}_history.json") in files:
            with open(directory / history_file, "rb") as src:
                history = json.loads(src.read())
        yield doc, history
