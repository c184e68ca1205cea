"""What a run has learnt, how it ended, and its report: the result scrubbed, rendered, recorded."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from ..models import AgentConfig, ExecutionRecord
from .catalog import CategorySpec, McpCatalog
from .redaction import Scrubber
from .results import ExecutionResult, RunReport, Unavailable

# The run's log lines keep the runner's name (where logging setups look for them).
logger = logging.getLogger("acti_store.execution.runner")

#: By default connecting the servers may use this share of the run's timeout, and at most
#: CONNECT_TIMEOUT_MAX seconds, so that a hanging server still leaves time to run in degraded mode.
CONNECT_TIMEOUT_SHARE: Final = 0.5
CONNECT_TIMEOUT_MAX: Final = 30.0


@dataclass
class RunState:
    """What one run has learnt so far, for the texts and the record."""

    agent: AgentConfig
    task: str
    timeout: float
    scrub: Scrubber
    environ: Mapping[str, str]
    catalog: McpCatalog
    timestamp: datetime
    connect_limit: float | None = None
    started: float = field(default_factory=time.perf_counter)
    unavailable: list[Unavailable] = field(default_factory=list)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def connect_timeout(self) -> float:
        if self.connect_limit is not None:
            return min(self.connect_limit, self.timeout)
        return min(self.timeout * CONNECT_TIMEOUT_SHARE, CONNECT_TIMEOUT_MAX)

    def spec(self, category: str) -> CategorySpec | None:
        return self.catalog.get(category)

    @property
    def providers(self) -> dict[str, str]:
        return {c: s.provider for c in self.agent.tools if (s := self.spec(c)) is not None}

    @property
    def commands(self) -> dict[str, str]:
        return {c: s.describe() for c in self.agent.tools if (s := self.spec(c)) is not None}

    def result(self, **fields: Any) -> ExecutionResult:
        fields.setdefault("duration_seconds", round(self.elapsed, 3))
        fields.setdefault("tools_unavailable", [u.category for u in self.unavailable])
        return ExecutionResult(agent_name=self.agent.name, task=self.task, **fields)


@dataclass(frozen=True)
class Outcome:
    """How a run ended, before its result is scrubbed and rendered (``finish``)."""

    result: ExecutionResult
    render: Callable[[ExecutionResult], str]
    error_name: str | None = None
    #: Whether the run started, so that it goes into the history.
    recorded: bool = True


def _scrubbed(state: RunState, result: ExecutionResult) -> ExecutionResult:
    scrub = state.scrub
    return replace(
        result,
        task=scrub(result.task),
        response=None if result.response is None else scrub(result.response),
        error=None if result.error is None else scrub(result.error),
        tool_calls=[
            replace(
                call,
                arguments=scrub.value(call.arguments),
                result=None if call.result is None else scrub(call.result),
                error=None if call.error is None else scrub(call.error),
            )
            for call in result.tool_calls
        ],
    )


def finish(state: RunState, outcome: Outcome) -> RunReport:
    """The report: the result scrubbed, then rendered, with its history record if
    ``recorded`` (a run that started). Scrubbing before rendering matters: a trace line cut
    short could otherwise keep part of a secret."""
    result = _scrubbed(state, outcome.result)
    text = state.scrub(outcome.render(result)).rstrip("\n")
    record = None
    error_name, recorded = outcome.error_name, outcome.recorded
    if recorded:
        summary = result.response if result.success else result.error
        record = ExecutionRecord(
            timestamp=state.timestamp,
            task=result.task,
            result_summary=" ".join((summary or "").split()),
            success=result.success,
            duration_seconds=result.duration_seconds,
            tool_calls_count=len(result.tool_calls),
            error_type=error_name,
        )
    if result.success:
        logger.info(
            "agent %r ran in %.2fs with %d tool call(s)",
            state.agent.name,
            result.duration_seconds,
            len(result.tool_calls),
        )
    elif recorded:
        logger.warning("agent %r failed: %s", state.agent.name, result.error)
    else:
        logger.info("agent %r not run: %s", state.agent.name, result.error)
    return RunReport(text=text, result=result, record=record)
