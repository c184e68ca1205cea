"""A run's types: what a run is asked (``ExecutionRequest``), what it records
(``ExecutionRecord``), an agent's retained history and its statistics, and which records a
history read returns (``HistoryRequest``).

Pure Python, like ``models``, which gives every one of these names.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field

from .domain_model import DomainModel
from .field_types import UtcDatetime, no_nul, record_text
from .limits import (
    COUNTER_MAX,
    HISTORY_LIMIT_DEFAULT,
    HISTORY_MAX_RECORDS,
    INTEGER_MAX,
    RESULT_SUMMARY_MAX_LENGTH,
    TASK_MAX_LENGTH,
    TASK_MIN_LENGTH,
    TASK_RECORD_MAX_LENGTH,
    TIMEOUT_DEFAULT,
    TIMEOUT_MAX,
    TIMEOUT_MIN,
)


class ExecutionRecord(DomainModel):
    """One run of an agent. Long texts are truncated, never rejected: a run is always recorded."""

    execution_id: Annotated[str, AfterValidator(no_nul)] = Field(
        default_factory=lambda: str(uuid.uuid4()),
        min_length=1,
        max_length=64,
        description="UUID for this execution",
    )
    timestamp: UtcDatetime = Field(description="When the execution started")
    task: Annotated[str, record_text(TASK_RECORD_MAX_LENGTH)]
    result_summary: Annotated[str, record_text(RESULT_SUMMARY_MAX_LENGTH)]
    success: bool
    duration_seconds: float = Field(ge=0, allow_inf_nan=False)
    tool_calls_count: int = Field(default=0, ge=0, le=INTEGER_MAX)
    error_type: Annotated[str, record_text(100)] | None = None


class ExecutionHistory(DomainModel):
    """The retained records of an agent, newest first, and its lifetime execution total."""

    agent_name: str
    executions: list[ExecutionRecord] = Field(default_factory=list, max_length=HISTORY_MAX_RECORDS)
    total_executions: int = Field(default=0, ge=0, le=COUNTER_MAX)


class ExecutionStats(DomainModel):
    """Statistics ``get_agent_history`` prints, computed by the store."""

    total_executions: int
    success_count: int
    error_count: int
    retained: int
    average_duration_seconds: float | None
    last_executed_at: datetime | None

    @property
    def success_rate(self) -> float | None:
        """Successes per run (0.0-1.0), None before the first run."""
        return self.success_count / self.total_executions if self.total_executions else None


class ExecutionRequest(DomainModel):
    """What a run is asked to do, checked once for every way in (tools, CLI, runner)."""

    task: str = Field(min_length=TASK_MIN_LENGTH, max_length=TASK_MAX_LENGTH)
    timeout: float = Field(
        default=TIMEOUT_DEFAULT, ge=TIMEOUT_MIN, le=TIMEOUT_MAX, allow_inf_nan=False
    )
    skip_unavailable_tools: bool = True


class HistoryRequest(DomainModel):
    """Which records of a history to read: the newest ``limit``, optionally failures only."""

    limit: int = Field(default=HISTORY_LIMIT_DEFAULT, ge=1, le=HISTORY_MAX_RECORDS)
    include_errors_only: bool = False
