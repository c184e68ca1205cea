"""A process killed with SIGKILL mid-write leaves a valid store; re-running the work finishes it.

Each cycle starts a child that loops on one operation, kills it at a random moment, and checks the
store: SQLite's ``integrity_check``, then the invariants the operation must keep whatever point it
was interrupted at (see ``workers.checks``). The next cycle's child re-runs the interrupted work
on the store the killed one left behind. ``benchmarks/stress.py --kill-cycles`` runs more cycles.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from conftest import make_config
from workers import checks, children
from workers.harness import KilledChild, context

from acti_store import SqlAgentRepository

CYCLES = 20
#: Longest a child runs before it is killed (seconds); the moment is uniform in [0, MAX_RUN).
MAX_RUN = 0.15


def kill_cycles(
    repo: SqlAgentRepository,
    url: str,
    target: Callable[..., None],
    check: Callable[[SqlAgentRepository, str], list[str]],
) -> list[str]:
    """Kill ``CYCLES`` children running ``target`` on ``crash_target``; after each kill, run the
    integrity check and ``check``. Returns every problem found, by cycle."""
    ctx = context()
    rng = random.Random()
    problems: list[str] = []
    for cycle in range(CYCLES):
        KilledChild(ctx, target, url, "crash_target").kill_after(rng.uniform(0, MAX_RUN))
        found = checks.sqlite_integrity_problems(repo.engine) + check(repo, "crash_target")
        problems += [f"cycle {cycle}: {problem}" for problem in found]
    return problems


def test_killed_record_execution_loses_or_half_writes_nothing(
    repo: SqlAgentRepository, store_url: str
) -> None:
    repo.create(make_config("crash_target"))
    for number in range(1, 46):  # close to the 50-record limit: most kills hit the FIFO trim
        repo.record_execution("crash_target", children.crash_record(number))

    assert kill_cycles(repo, store_url, children.record_until_killed, checks.history_problems) == []

    # Each child recorded at least once before it was killed; recording goes on from where the
    # last child was killed.
    count = repo.get("crash_target").metadata.execution_count
    assert count >= 45 + CYCLES
    for number in range(count + 1, count + 4):
        repo.record_execution("crash_target", children.crash_record(number))
    assert checks.history_problems(repo, "crash_target") == []
    assert repo.get("crash_target").metadata.execution_count == count + 3


def test_killed_update_leaves_one_whole_version(repo: SqlAgentRepository, store_url: str) -> None:
    repo.create(make_config("crash_target", system_prompt=f"{children.PROMPT_BASE}version 1"))
    repo.record_execution("crash_target", children.crash_record(1))

    assert kill_cycles(repo, store_url, children.update_until_killed, checks.update_problems) == []

    agent = repo.get("crash_target")
    version = agent.metadata.version
    assert version >= 1 + CYCLES  # each child updated at least once before it was killed
    # The counters were never touched by the updates, torn or not.
    meta = agent.metadata
    assert (meta.execution_count, meta.success_count, meta.error_count) == (1, 0, 1)
    # The interrupted loop carries on from the version the last child left.
    repo.update("crash_target", children.crash_update(version + 1), expected_version=version)
    assert checks.update_problems(repo, "crash_target") == []
