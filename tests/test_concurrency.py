"""Many processes on one store at once: no lost counts, no lost records, no lost updates.

Each test starts real processes (``forkserver``) that open the store from its URL, line up on a
barrier and then hit the same rows together, on SQLite and on PostgreSQL. The long versions of
these runs are in ``benchmarks/stress.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import make_config
from workers import checks, children
from workers.harness import context, run_children

from acti_store import SqlAgentRepository, open_repository

PROCESSES = 8
CALLS = 250
AGENTS = tuple(f"agent_{i}" for i in range(10))
TIMEOUT = 120.0


@pytest.fixture
def audited(store_url: str) -> Iterator[SqlAgentRepository]:
    """A migrated store whose deleted execution rows are kept in ``trimmed_executions``."""
    repo = open_repository(store_url)
    checks.install_trim_audit(repo.engine)
    try:
        yield repo
    finally:
        repo.close()


def record_concurrently(url: str, agents: tuple[str, ...]) -> list[children.Call]:
    """Run ``PROCESSES`` workers of ``CALLS`` calls each over ``agents``; return every call made."""
    ctx = context()
    barrier = ctx.Barrier(PROCESSES, timeout=TIMEOUT)
    failures = run_children(
        ctx,
        children.record_calls,
        [(url, worker, CALLS, agents, barrier) for worker in range(PROCESSES)],
        timeout=TIMEOUT,
    )
    assert [f for worker in failures for f in worker] == []  # no "database is locked", no 40001
    return [c for w in range(PROCESSES) for c in children.record_plan(w, CALLS, agents)]


@pytest.mark.parametrize("agents", [AGENTS[:1], AGENTS], ids=["one-agent", "ten-agents"])
def test_concurrent_runs_lose_no_count_and_keep_the_newest_fifty(
    audited: SqlAgentRepository, store_url: str, agents: tuple[str, ...]
) -> None:
    for name in agents:
        audited.create(make_config(name))

    calls = record_concurrently(store_url, agents)

    problems = checks.sqlite_integrity_problems(audited.engine)
    for name in agents:
        problems += checks.fifo_problems(audited, name, [c for c in calls if c.agent == name])
    assert problems == []


def test_racing_updates_with_expected_version_exactly_one_wins(
    repo: SqlAgentRepository, store_url: str
) -> None:
    rounds = 20
    repo.create(make_config("contested"))
    ctx = context()
    barrier = ctx.Barrier(2, timeout=TIMEOUT)

    outcomes = run_children(
        ctx,
        children.race_updates,
        [(store_url, worker, rounds, "contested", barrier) for worker in range(2)],
        timeout=TIMEOUT,
    )

    for round_, (first, second) in enumerate(zip(*outcomes, strict=True)):
        # Both read version N = round + 1: one moves it to N + 1, the other finds N + 1.
        assert sorted([first, second]) == [("conflict", round_ + 2), ("won", round_ + 2)]
    agent = repo.get("contested")
    assert agent.metadata.version == rounds + 1
    winner = 0 if outcomes[0][-1][0] == "won" else 1
    assert agent.description == f"round {rounds - 1} won by worker {winner}"


def test_concurrent_updates_without_expected_version_all_land(
    repo: SqlAgentRepository, store_url: str
) -> None:
    workers, updates = 4, 25
    repo.create(make_config("shared"))
    repo.record_execution("shared", children.crash_record(2))
    ctx = context()
    barrier = ctx.Barrier(workers, timeout=TIMEOUT)

    obtained = run_children(
        ctx,
        children.update_own_field,
        [(store_url, worker, updates, "shared", barrier) for worker in range(workers)],
        timeout=TIMEOUT,
    )

    # Every update got its own version: 2 .. N+1, none twice, none skipped.
    versions = sorted(version for worker in obtained for version, _ in worker)
    assert versions == list(range(2, workers * updates + 2))
    for worker, results in enumerate(obtained):
        # Each returned agent holds the value that update wrote...
        for k, (_, fields) in enumerate(results):
            assert fields == children.field_update(worker, k).changes()
        # ... and each worker's versions increase in the order it made its updates.
        assert [v for v, _ in results] == sorted(v for v, _ in results)
    agent = repo.get("shared")
    assert agent.metadata.version == workers * updates + 1
    # No update overwrote another's field with a stale value: each field holds its last write.
    final = {}
    for worker in range(workers):
        final |= children.field_update(worker, updates - 1).changes()
    assert {field: getattr(agent, field) for field in final} == final
    assert checks.tag_index_problems(repo, "shared", agent.tags) == []
    # Updates preserve the execution counters.
    meta = agent.metadata
    assert (meta.execution_count, meta.success_count, meta.error_count) == (1, 1, 0)
