"""Many processes on one store at once: no lost counts, no lost records, no lost updates.

Each test starts real processes (``forkserver``) that open the store from its URL, line up on a
barrier and then hit the same rows together, on SQLite and on PostgreSQL. The scenarios live in
``workers.scenarios``; ``benchmarks/stress.py`` runs them with larger numbers.
"""

from __future__ import annotations

import pytest
from workers import scenarios


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
