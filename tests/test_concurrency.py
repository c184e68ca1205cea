"""Many processes on one store at once: no lost counts, no lost records, no lost updates.

Each test starts real processes (``forkserver``) that open the store from its URL, line up on a
barrier and then hit the same rows together, on SQLite and on PostgreSQL. The scenarios live in
``workers.scenarios``; ``benchmarks/stress.py`` runs them with larger numbers.
"""

from __future__ import annotations

import threading

import pytest
from conftest import make_config
from workers import scenarios

from acti_store import AgentUpdate, SqlAgentRepository


@pytest.mark.parametrize("agents", [1, 10], ids=["one-agent", "ten-agents"])
def test_concurrent_runs_lose_no_count_and_keep_the_newest_fifty(
    store_url: str, agents: int
) -> None:
    # 8 processes x 250 record_execution calls: no call fails ("database is locked", 40001),
    # every counter is exact, every agent keeps exactly its 50 newest records.
    assert scenarios.record_storm(store_url, processes=8, calls=250, agents=agents) == []


def test_racing_updates_with_expected_version_exactly_one_wins(store_url: str) -> None:
    assert scenarios.version_race(store_url, rounds=20) == []


def test_concurrent_updates_without_expected_version_all_land(store_url: str) -> None:
    assert scenarios.update_storm(store_url, processes=4, updates=25) == []


def test_threads_updating_without_expected_version_all_apply(repo: SqlAgentRepository) -> None:
    """4 threads x 25 updates of one agent through one store: each update locks the row, so
    none is refused or lost, each gets a version of its own, and the last is version 101."""
    repo.create(make_config())
    barrier = threading.Barrier(4)
    versions: list[int] = []
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            barrier.wait()
            for j in range(25):
                change = AgentUpdate(description=f"Thread {k}, update {j}")
                versions.append(repo.update("lead_qualifier", change).metadata.version)
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sorted(versions) == list(range(2, 102))
    assert repo.get("lead_qualifier").metadata.version == 101
