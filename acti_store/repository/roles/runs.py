"""The runs role: a run recorded (counters, record, the version's counters and the 50-record FIFO
in one transaction: ``repository.recording`` and the engine's strategy) and the history read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import AgentNotFoundError
from ...models import (
    HISTORY_LIMIT_DEFAULT,
    HISTORY_MAX_RECORDS,
    Agent,
    ExecutionHistory,
    ExecutionRecord,
    ExecutionStats,
)
from ...sqlexec import Cursor
from ...validation import optional_version
from ..arguments import checked_history_request, checked_record, require_storable, storable
from ..core import Role, agent_row
from ..recording import could_run, why_unrecorded
from ..statements import (
    ARCHIVED,
    ARCHIVED_COUNT,
    HISTORY,
    ID,
    STATS,
    agent_from_row,
    archived_from_rows,
    history_from_rows,
    stats_from_rows,
)


class Runs(Role):
    """``record_execution``, ``get_history``, ``get_with_history``, ``execution_stats`` and
    ``archived_history`` of the repository."""

    def record_execution(
        self, name: str, record: ExecutionRecord | Mapping[str, Any], *, version: int | None = None
    ) -> None:
        record = checked_record(record)
        version = optional_version(version, "version")
        require_storable(name)
        if not could_run(version):  # no agent has such a version: raises why, writes nothing
            self._read(lambda cursor: why_unrecorded(cursor, name, version))
            return
        self._core.kind.record_execution(self._write, self._read, name, record, version)
        self._notify(name)

    def get_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory:
        limit, errors_only = checked_history_request(limit, errors_only)
        require_storable(name)
        rows = self._read(
            lambda cursor: cursor.all(HISTORY[errors_only], {"name": name, "limit": limit})
        )
        if not rows:
            raise AgentNotFoundError(name)
        return history_from_rows(name, rows)

    def get_with_history(self, name: str) -> tuple[Agent, ExecutionHistory]:
        page = {"name": name, "limit": HISTORY_MAX_RECORDS}

        def work(cursor: Cursor) -> tuple[Agent, ExecutionHistory]:
            agent = agent_from_row(agent_row(cursor, name))
            return agent, history_from_rows(name, cursor.all(HISTORY[False], page))

        return self._read(work, snapshot=True)

    def execution_stats(self, name: str) -> ExecutionStats:
        def work(cursor: Cursor) -> ExecutionStats:
            row = agent_row(cursor, name)
            stats = cursor.first(STATS, {"agent_id": row[ID]})
            assert stats is not None
            return stats_from_rows(row, stats)

        return self._read(work, snapshot=True)

    def archived_history(self, name: str) -> ExecutionHistory:
        if not storable(name):
            return archived_from_rows(name, None, [])
        return self._read(
            lambda cursor: archived_from_rows(
                name,
                cursor.first(ARCHIVED_COUNT, {"name": name}),
                cursor.all(ARCHIVED, {"name": name}),
            ),
            snapshot=True,
        )
