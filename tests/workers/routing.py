"""Multi-process scenarios of labels that route and protect: movers racing to split one label
against the same expected split, and runs recorded while a protected label is moved.

Children open the store from its URL themselves (``open_repository(url, migrate=False)``); each
scenario returns the problems it found (``[]`` when every guarantee held).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from multiprocessing.synchronize import Barrier, Event

from acti_store import (
    AgentUpdate,
    ExecutionRecord,
    GateRefusedError,
    VersionConflictError,
    open_repository,
)

from .harness import context, run_children
from .scenarios import TIMEOUT, agent_config

#: The protected label's gate in the runs scenario: version 4 starts with ``GOOD`` successes
#: and passes while its failures are at most ``GOOD / 4`` (a success rate of 80 %).
GOOD = 100
RATE = 0.8


def _versions(repo: object, name: str, count: int) -> None:
    for k in range(2, count + 1):
        repo.update(name, AgentUpdate(description=f"Version {k} of {name}"))  # type: ignore[attr-defined]


def split_mover(
    url: str, worker: int, rounds: int, name: str, barrier: Barrier
) -> list[tuple[str, object]]:
    """Each round: read the label's split, wait until every racer has read it, then move it to
    a split of this worker's own, expecting the one read."""
    repo = open_repository(url, migrate=False)
    outcomes: list[tuple[str, object]] = []
    try:
        for round_ in range(rounds):
            barrier.wait()
            now = repo.label_weights(name)["production"]
            barrier.wait()
            share = 10 * (worker + 1) + round_ % 2  # a different split per worker and round
            target = {3: 100 - share, 4: share}
            try:
                repo.set_label(name, "production", target, expected_version=now)
            except VersionConflictError as exc:
                outcomes.append(("conflict", exc.actual))
            else:
                outcomes.append(("won", target))
    finally:
        repo.close()
    return outcomes


def split_race(url: str, *, processes: int, rounds: int) -> list[str]:
    """``processes`` workers move one split label at once, each expecting the split they all
    read: each round exactly one wins, the others get ``VersionConflictError`` naming the
    winner's split, and the log holds one move per round, chained."""
    repo = open_repository(url)
    try:
        repo.create(agent_config("contested"))
        _versions(repo, "contested", 4)
        repo.set_label("contested", "production", {3: 95, 4: 5})
        ctx = context()
        barrier = ctx.Barrier(processes, timeout=TIMEOUT)
        outcomes = run_children(
            ctx,
            split_mover,
            [(url, worker, rounds, "contested", barrier) for worker in range(processes)],
            timeout=TIMEOUT,
        )
        problems = []
        for round_, results in enumerate(zip(*outcomes, strict=True)):
            won = [at for kind, at in results if kind == "won"]
            lost = [at for kind, at in results if kind == "conflict"]
            if len(won) != 1 or any(at != won[0] for at in lost):
                problems.append(f"round {round_}: outcomes {results}")
        log = repo.label_history("contested")
        if len(log) != rounds + 1:
            problems.append(f"{len(log)} label moves logged for {rounds} rounds (and the set)")
        for newer, older in itertools.pairwise(log):
            if newer.before != older.after:
                problems.append(f"the log does not chain: {older} then {newer}")
        return problems
    finally:
        repo.close()


def record_failures(url: str, name: str, failures: int, started: Event) -> int:
    """Record ``failures`` failed runs of version 4, one transaction each."""
    repo = open_repository(url, migrate=False)
    try:
        started.set()
        for i in range(failures):
            record = ExecutionRecord(
                timestamp=datetime.now(UTC),
                task=f"failure {i}",
                result_summary="failed",
                success=False,
                duration_seconds=1.0,
            )
            repo.record_execution(name, record, version=4)
        return failures
    finally:
        repo.close()


def flip_label(url: str, name: str, started: Event, stop_after: int) -> list[str]:
    """Move the protected label back and forth between version 3 alone and a 50/50 split with
    version 4 until ``stop_after`` refusals; what each attempt ended in."""
    repo = open_repository(url, migrate=False)
    outcomes: list[str] = []
    try:
        started.wait(TIMEOUT)
        refused = 0
        while refused < stop_after:
            try:
                repo.set_label(name, "production", {3: 50, 4: 50})
            except GateRefusedError:
                refused += 1
                outcomes.append("refused")
                continue
            outcomes.append("moved")
            repo.set_label(name, "production", 3)
        return outcomes
    finally:
        repo.close()


def gated_runs_race(url: str, *, failures: int) -> list[str]:
    """A protected label is moved to a split with version 4 over and over while another
    process records failed runs of version 4. Each move's gate reads the figures of the
    transaction that moves it, so: every logged move to version 4 passed with figures that
    only grow in log order, none was made with more failures than the gate allows, and once a
    move was refused no later one got through (the figures only get worse)."""
    repo = open_repository(url)
    try:
        repo.create(agent_config("gated"))
        _versions(repo, "gated", 4)
        for i in range(GOOD):
            record = ExecutionRecord(
                timestamp=datetime.now(UTC),
                task=f"success {i}",
                result_summary="ok",
                success=True,
                duration_seconds=1.0,
            )
            repo.record_execution("gated", record, version=4)
            repo.record_execution("gated", record, version=3)
        repo.set_label("gated", "production", 3)
        repo.protect_label("gated", "production", min_success_rate=RATE)
        ctx = context()
        started = ctx.Event()
        recorded, outcomes = run_children(
            ctx,
            _either,
            [("record", url, failures, started), ("flip", url, failures, started)],
            timeout=TIMEOUT,
        )
        problems = []
        if recorded != failures:
            problems.append(f"{recorded} failures recorded of {failures}")
        if "refused" in outcomes and "moved" in outcomes[outcomes.index("refused") :]:
            problems.append(f"a move got through after a refusal: {outcomes}")
        seen = 0
        for move in reversed(repo.label_history("gated")):
            if move.after != {3: 50, 4: 50}:
                continue
            assert move.checks is not None
            (check,) = (c for c in move.checks if c.version == 4)
            if check.failures or move.forced:
                problems.append(f"a move past the gate: {move}")
            if check.runs < seen or check.runs - check.successes > GOOD / 4:
                problems.append(f"figures out of order or over the gate: {check} after {seen}")
            seen = check.runs
        stats = repo.version_stats("gated")[4]
        if stats.total_executions != GOOD + failures:
            problems.append(f"version 4 has {stats.total_executions} runs")
        return problems
    finally:
        repo.close()


def _either(role: str, url: str, failures: int, started: Event) -> object:
    if role == "record":
        return record_failures(url, "gated", failures, started)
    return flip_label(url, "gated", started, stop_after=3)
