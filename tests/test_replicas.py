"""Reads sent to a read replica (issue 41 §2): a primary and a streaming standby on loopback
ports (``tests/pg_cluster.py``: ``initdb``, ``pg_basebackup -R``, ``pg_ctl``), asynchronous as
most are, and a store opened on the primary with the standby as its replica.

The replica's own statistics show who served the reads; a write read back at once is seen
every time (the store waits for the replica to replay its commit, or reads the primary); a
replica stopped mid-run costs no error, and reads go back to it once it is up again.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator

import pytest
from conftest import make_config
from pg_cluster import Cluster, clusters_missing

from acti_store import AgentUpdate, SqlAgentRepository, open_repository
from acti_store.repository import replicas as replicas_module

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.slow,
    pytest.mark.skipif(clusters_missing() is not None, reason=str(clusters_missing())),
]

#: Index scans of the agents table on a server: a get by name is one.
SCANS = "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_tables WHERE relname = 'agents'"


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Cluster, Cluster]]:
    with Cluster("primary") as primary, Cluster.standby_of(primary) as standby:
        primary.create_database("test")
        open_repository(primary.url("test"), export_dir="").close()  # migrates
        yield primary, standby


@pytest.fixture
def repo(pair: tuple[Cluster, Cluster]) -> Iterator[SqlAgentRepository]:
    primary, standby = pair
    with open_repository(
        primary.url("test"), replicas=[standby.url("test")], export_dir=""
    ) as store:
        yield store


def scans(cluster: Cluster) -> int:
    """The agents table's index scans on ``cluster``, once its statistics are flushed (a
    backend reports them within a second of its transaction's end)."""
    row = cluster.execute_one(SCANS, database="test")
    assert row is not None
    return int(row[0])


def settled_scans(cluster: Cluster) -> int:
    """``scans`` once they stop moving."""
    last = -1
    while (now := scans(cluster)) != last:
        last = now
        time.sleep(1.2)
    return now


def test_reads_go_to_the_replica_and_see_the_stores_own_writes(
    pair: tuple[Cluster, Cluster], repo: SqlAgentRepository
) -> None:
    primary, standby = pair
    repo.create(make_config("read_back"))
    before = settled_scans(standby), settled_scans(primary)
    for number in range(1_000):
        description = f"Written then read at once, time {number}"
        repo.update("read_back", AgentUpdate(description=description))
        assert repo.get("read_back").description == description
    after_write = _median_get(repo, "read_back", write=True)
    on_replica_only = _median_get(repo, "read_back")
    with open_repository(primary.url("test"), export_dir="") as direct:
        on_primary_only = _median_get(direct, "read_back")
    print(
        f"median get: replica {on_replica_only * 1e6:.0f} µs, primary {on_primary_only * 1e6:.0f}"
        f" µs, replica right after the store's write {after_write * 1e6:.0f} µs"
    )
    repo.close()  # its sessions end: they report their statistics as they go
    after = settled_scans(standby), settled_scans(primary)
    on_replica, on_primary = after[0] - before[0], after[1] - before[1]
    print(f"index scans of agents: replica {on_replica}, primary {on_primary}")
    # The gets went to the replica (the primary's scans are the updates' own look-ups).
    assert on_replica >= 1_000


def _median_get(repo: SqlAgentRepository, name: str, *, write: bool = False) -> float:
    """The median time of 200 gets of ``name`` (each after a write of the store's own with
    ``write``: the get then waits for the replica to replay it)."""
    times = []
    for number in range(200):
        if write:
            repo.update(name, AgentUpdate(description=f"Written then timed, time {number}"))
        start = time.perf_counter()
        repo.get(name)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def test_a_replica_that_stops_costs_no_error_and_is_read_again_once_it_is_back(
    pair: tuple[Cluster, Cluster], repo: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    primary, standby = pair
    monkeypatch.setattr(replicas_module, "REPLICA_RETRY", 1.0)
    repo.create(make_config("still_read"))
    assert repo.get("still_read").name == "still_read"
    standby.kill()
    try:
        for _ in range(50):  # every read answered, by the primary
            assert repo.get("still_read").name == "still_read"
            assert repo.list_names() == sorted(repo.list_names())
    finally:
        standby.start()
    standby.wait_streaming(primary)
    time.sleep(1.5)  # past REPLICA_RETRY: the replica is tried again
    before = settled_scans(standby)
    for _ in range(50):
        assert repo.get("still_read").name == "still_read"
    repo.close()
    assert settled_scans(standby) - before >= 45


def test_a_replica_that_lags_is_waited_for_not_read_stale() -> None:
    """A standby that applies each commit 30 ms late (``recovery_min_apply_delay``): a read
    right after the store's write would find the old row there; the store waits for the
    replay instead, and every read sees its write, from the replica."""
    delayed = {"recovery_min_apply_delay": "30ms"}
    with (
        Cluster("primary") as primary,
        Cluster.standby_of(primary, settings=delayed) as standby,
    ):
        primary.create_database("test")
        open_repository(primary.url("test"), export_dir="").close()
        standby_url = standby.url("test")
        with open_repository(primary.url("test"), replicas=[standby_url], export_dir="") as repo:
            repo.create(make_config("read_back"))
            before = settled_scans(standby)
            for number in range(100):
                description = f"Written then read at once, time {number}"
                repo.update("read_back", AgentUpdate(description=description))
                assert repo.get("read_back").description == description
        assert settled_scans(standby) - before >= 100  # the replica answered them
