"""The execution history: counters, the 50-record FIFO, lifetime totals and statistics."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ...errors import InvalidInputError
from ...models import HISTORY_MAX_RECORDS
from ...repository import AgentRepository
from .base import ConformanceBase, make_config, refused, run


class HistoryRules(ConformanceBase):
    def test_a_run_moves_the_counters_and_nothing_else(self, repo: AgentRepository) -> None:
        created = repo.create(make_config())
        first = run(repo, "lead_qualifier", "ok")
        second = run(repo, "lead_qualifier", "boom", success=False)
        meta = repo.get("lead_qualifier").metadata
        counters = (meta.execution_count, meta.success_count, meta.error_count)
        assert counters == (2, 1, 1), f"COUNTERS: a run moves its counters: {counters}"
        assert meta.last_executed_at == second.timestamp, (
            "COUNTERS: last_executed_at is the newest run's timestamp"
        )
        assert meta.version == 1, "COUNTERS: a run does not bump the version"
        assert meta.updated_at == created.metadata.updated_at, "COUNTERS: nor updated_at"
        history = repo.get_history("lead_qualifier")
        assert history.executions == [second, first], (
            "HISTORY: records come back exactly as recorded, newest first"
        )
        assert history.total_executions == 2, "HISTORY: total_executions counts every run"
        errors = repo.get_history("lead_qualifier", errors_only=True)
        assert [r.task for r in errors.executions] == ["boom"], "HISTORY: errors_only: failures"
        assert errors.total_executions == 2, "HISTORY: errors_only keeps the lifetime total"

    def test_fifo_keeps_the_newest_fifty(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        repo.create(make_config("other_agent"))
        runs = HISTORY_MAX_RECORDS + 1
        for i in range(runs):
            run(repo, "lead_qualifier", f"task {i}", success=i % 10 != 0, duration=float(i))
        run(repo, "other_agent", "untouched")
        kept = repo.execution_stats("lead_qualifier").retained
        assert kept == HISTORY_MAX_RECORDS, (
            f"FIFO: a store keeps the newest {HISTORY_MAX_RECORDS} execution records per agent, "
            f"this one kept {kept}"
        )
        history = repo.get_history("lead_qualifier", limit=HISTORY_MAX_RECORDS)
        shown = len(history.executions)
        assert shown == HISTORY_MAX_RECORDS, f"FIFO: get_history(limit=50) gives 50, not {shown}"
        tasks = [r.task for r in history.executions]
        assert tasks == [f"task {i}" for i in range(runs - 1, 0, -1)], (
            "FIFO: the oldest record goes first; the newest 50 are kept, newest first"
        )
        other = repo.get_history("other_agent").executions
        assert len(other) == 1, "FIFO: the trim of one agent leaves the others' records"
        newest = [r.task for r in repo.get_history("lead_qualifier", limit=3).executions]
        assert newest == ["task 50", "task 49", "task 48"], "HISTORY: limit gives the newest"

    def test_lifetime_totals_outlive_the_fifo(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        runs = HISTORY_MAX_RECORDS + 1
        for i in range(runs):
            run(repo, "lead_qualifier", f"task {i}", success=i % 10 != 0, duration=float(i))
        history = repo.get_history("lead_qualifier", limit=HISTORY_MAX_RECORDS)
        assert history.total_executions == runs, (
            f"TOTALS: total_executions counts every run ever, {runs}, "
            f"not {history.total_executions}"
        )
        meta = repo.get("lead_qualifier").metadata
        counters = (meta.execution_count, meta.success_count, meta.error_count)
        assert counters == (51, 45, 6), f"TOTALS: the counters count every run: {counters}"
        stats = repo.execution_stats("lead_qualifier")
        found = (stats.total_executions, stats.success_count, stats.error_count, stats.retained)
        assert found == (51, 45, 6, 50), f"TOTALS: execution_stats (total, ok, err, kept): {found}"
        assert stats.average_duration_seconds == pytest.approx(sum(range(1, 51)) / 50), (
            "TOTALS: the mean duration is over the kept records"
        )

    def test_history_limit_follows_its_rule(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        for limit in (0, HISTORY_MAX_RECORDS + 1, True, "5"):
            rule = f"ERRORS: a history limit of {limit!r} (not 1-50) raises InvalidInputError"
            with refused(InvalidInputError, rule):
                repo.get_history("lead_qualifier", limit=limit)  # type: ignore[arg-type]

    def test_records_keep_their_instant_in_utc(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        record = run(repo, "lead_qualifier", "t")
        stored = repo.get_history("lead_qualifier").executions[0]
        assert stored.timestamp == record.timestamp, "HISTORY: timestamps keep microseconds"
        assert stored.timestamp.utcoffset() == timedelta(0), "HISTORY: timestamps are UTC"

    def test_get_with_history_agrees(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        for i in range(3):
            run(repo, "lead_qualifier", f"task {i}")
        agent, history = repo.get_with_history("lead_qualifier")
        assert agent == repo.get("lead_qualifier"), "HISTORY: get_with_history's agent"
        assert [r.task for r in history.executions] == ["task 2", "task 1", "task 0"], (
            "HISTORY: get_with_history's records, newest first"
        )
        assert agent.metadata.execution_count == history.total_executions == 3, (
            "HISTORY: get_with_history's agent and history agree"
        )
