"""Multi-process scenarios of configuration versions: exact per-version run statistics under many
writers, and two processes moving one label with ``expected_version``.

Children open the store from its URL themselves (``open_repository(url, migrate=False)``); each
scenario returns the problems it found (``[]`` when every guarantee held).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from multiprocessing.synchronize import Barrier

from acti_store import (
    AgentStoreError,
    AgentUpdate,
    ExecutionRecord,
    VersionConflictError,
    open_repository,
)

from .harness import context, run_children
from .scenarios import TIMEOUT, agent_config

#: Versions the statistics scenario's runs are spread over.
VERSIONS = 3


def run_plan(worker: int, calls: int) -> list[tuple[int, bool, float]]:
    """``(pinned version, success, duration)`` of each call of ``worker``: durations are
    multiples of 1/4, so that their sums are exact in any order."""
    return [
        ((worker + i) % VERSIONS + 1, (worker * 7 + i) % 5 != 0, ((worker + i) % 8) / 4)
        for i in range(calls)
    ]


def record_pinned_runs(url: str, worker: int, calls: int, name: str, barrier: Barrier) -> list[str]:
    """Record this worker's planned runs, each counted for its pinned version; the failures."""
    repo = open_repository(url, migrate=False)
    failures: list[str] = []
    try:
        barrier.wait()
        for i, (version, success, duration) in enumerate(run_plan(worker, calls)):
            record = ExecutionRecord(
                timestamp=datetime.now(UTC),
                task=f"w{worker:02d}-c{i:05d}",
                result_summary="ok" if success else "failed",
                success=success,
                duration_seconds=duration,
            )
            try:
                repo.record_execution(name, record, version=version)
            except AgentStoreError as exc:
                failures.append(f"call {i}: {type(exc).__name__}: {exc}")
    finally:
        repo.close()
    return failures


def version_stats_storm(url: str, *, processes: int, calls: int) -> list[str]:
    """``processes`` workers record ``calls`` runs each at once, spread over three versions:
    every version's lifetime runs, successes, errors and average duration must be exact, and
    add up to the agent's own counters."""
    repo = open_repository(url)
    try:
        repo.create(agent_config("stats"))
        for k in range(2, VERSIONS + 1):
            repo.update("stats", AgentUpdate(description=f"Version {k} of the stats agent"))
        ctx = context()
        barrier = ctx.Barrier(processes, timeout=TIMEOUT)
        failures = run_children(
            ctx,
            record_pinned_runs,
            [(url, worker, calls, "stats", barrier) for worker in range(processes)],
            timeout=TIMEOUT,
        )
        problems = [failure for worker in failures for failure in worker]
        expected: dict[int, list[float]] = {}
        for worker in range(processes):
            for version, success, duration in run_plan(worker, calls):
                runs = expected.setdefault(version, [0, 0, 0, 0.0])
                runs[0] += 1
                runs[1 if success else 2] += 1
                runs[3] += duration
        stats = repo.version_stats("stats")
        for version, (runs, successes, errors, total) in sorted(expected.items()):
            got = stats.get(version)
            if got is None:
                problems.append(f"version {version}: no statistics")
                continue
            actual = (got.total_executions, got.success_count, got.error_count)
            if actual != (runs, successes, errors):
                problems.append(
                    f"version {version}: {actual}, expected {(runs, successes, errors)}"
                )
            if got.average_duration_seconds != total / runs:
                problems.append(
                    f"version {version}: average {got.average_duration_seconds}, "
                    f"expected {total / runs}"
                )
        meta = repo.get("stats").metadata
        if sum(s.total_executions for s in stats.values()) != meta.execution_count:
            problems.append(f"versions add up to {stats}, the agent has {meta.execution_count}")
        return problems
    finally:
        repo.close()


def move_label(
    url: str, worker: int, rounds: int, name: str, barrier: Barrier
) -> list[tuple[str, int | None]]:
    """Each round: read where ``production`` points, wait for the other racer to have read it,
    move it to a version of this worker's choosing, expecting the one read."""
    repo = open_repository(url, migrate=False)
    outcomes: list[tuple[str, int | None]] = []
    try:
        for _ in range(rounds):
            barrier.wait()  # the previous round is over for everyone
            now = repo.labels(name)["production"]
            barrier.wait()  # both racers hold the same position
            target = sorted({1, 2, 3} - {now})[worker]
            try:
                repo.set_label(name, "production", target, expected_version=now)
            except VersionConflictError as exc:
                outcomes.append(("conflict", exc.actual))
            else:
                outcomes.append(("won", target))
    finally:
        repo.close()
    return outcomes


def label_race(url: str, *, rounds: int) -> list[str]:
    """Two workers move one label at once ``rounds`` times: each round exactly one wins, the
    other gets ``VersionConflictError`` naming where the winner put it, and the label log holds
    exactly one move per round."""
    repo = open_repository(url)
    try:
        repo.create(agent_config("contested"))
        for k in range(2, 4):
            repo.update("contested", AgentUpdate(description=f"Version {k} of the contested one"))
        repo.set_label("contested", "production", 1)
        ctx = context()
        barrier = ctx.Barrier(2, timeout=TIMEOUT)
        outcomes = run_children(
            ctx,
            move_label,
            [(url, worker, rounds, "contested", barrier) for worker in range(2)],
            timeout=TIMEOUT,
        )
        problems = []
        for round_, pair in enumerate(zip(*outcomes, strict=True)):
            kinds = sorted(kind for kind, _ in pair)
            won = [at for kind, at in pair if kind == "won"]
            lost = [at for kind, at in pair if kind == "conflict"]
            if kinds != ["conflict", "won"] or won != lost:
                problems.append(f"round {round_}: outcomes {pair}")
        log = repo.label_history("contested")
        if len(log) != rounds + 1:
            problems.append(f"{len(log)} label moves logged for {rounds} rounds (and the set)")
        for newer, older in itertools.pairwise(log):
            if newer.from_version != older.to_version:
                problems.append(f"the log does not chain: {older} then {newer}")
        return problems
    finally:
        repo.close()
