"""The ``outputs/agents`` JSON documents: one place that knows their shape and key order.

``agent_document`` and ``history_document`` build the contract's v2 documents (``{name}.json`` and
``{name}_history.json``) as dicts in the contract's key order; ``dumps`` renders them exactly as the
files are written (``indent=2``, UTF-8 text, a final newline). Used by export, the mirror and
``get_agent_config``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from .models import Agent, ExecutionHistory, ExecutionRecord


def format_timestamp(value: datetime) -> str:
    """ISO 8601 in UTC with six-digit microseconds: ``2025-01-09T14:30:22.123456+00:00``."""
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _optional_timestamp(value: datetime | None) -> str | None:
    return None if value is None else format_timestamp(value)


def agent_document(agent: Agent) -> dict[str, Any]:
    """The v2 agent document, keys in the contract's order."""
    meta = agent.metadata
    return {
        "name": agent.name,
        "description": agent.description,
        "system_prompt": agent.system_prompt,
        "tools": list(agent.tools),
        "model": agent.model,
        "stratum": agent.stratum,
        "tags": list(agent.tags),
        "_metadata": {
            "created_at": format_timestamp(meta.created_at),
            "updated_at": format_timestamp(meta.updated_at),
            "last_executed_at": _optional_timestamp(meta.last_executed_at),
            "version": meta.version,
            "builder": meta.builder,
            "execution_count": meta.execution_count,
            "success_count": meta.success_count,
            "error_count": meta.error_count,
        },
    }


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
