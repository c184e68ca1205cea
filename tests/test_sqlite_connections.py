"""SQLite connection handling: connections kept by the store, shared by threads, across fork.

A SQLite store keeps its connections (no pool round trip per call). These tests hold that to what
a user relies on: no write lost across threads, no stale snapshot after a failed read, and a store
that keeps working in a forked child.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import make_config

from acti_store import ExecutionRecord, StoreUnavailableError, open_repository
from acti_store.connections import KeptConnections, connections_for
from acti_store.models import utc_now


def record(task: str) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=utc_now(),
        task=task,
        result_summary="ok",
        success=True,
        duration_seconds=0.5,
        tool_calls_count=0,
    )


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def test_threads_share_one_store_and_lose_no_write(url: str):
    repo = open_repository(url)
    repo.create(make_config())
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for j in range(40):
                repo.record_execution("lead_qualifier", record(f"{k}/{j}"))
                assert repo.get("lead_qualifier").name == "lead_qualifier"
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stats = repo.execution_stats("lead_qualifier")
    assert (stats.total_executions, stats.success_count, stats.retained) == (480, 480, 50)
    assert repo.get("lead_qualifier").metadata.execution_count == 480
    repo.close()


def test_a_failed_read_leaves_no_snapshot_behind(url: str):
    repo = open_repository(url)
    repo.create(make_config("first"))
    repo.create(make_config("second"))
    # Text another program stored that is not UTF-8: reading it fails half way through the rows.
    with closing(sqlite3.connect(sa.make_url(url).database or "")) as raw:
        raw.execute("UPDATE agents SET description = CAST(X'FF' AS TEXT) WHERE name = 'second'")
        raw.commit()

    # The caller keeps the exception (a log record would): its traceback keeps the cursor alive.
    with pytest.raises(StoreUnavailableError, match="UTF-8") as failure:
        repo.list_agents()
    other = open_repository(url)
    other.create(make_config("third"))
    # The same kept connection serves the next read: it must see the new agent.
    assert repo.exists("third") and repo.list_names() == ["first", "second", "third"]
    assert failure.traceback  # still held up to here
    other.close()
    repo.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_opens_its_own_connections(url: str):
    repo = open_repository(url)
    repo.create(make_config())
    repo.record_execution("lead_qualifier", record("in the parent"))
    kept = connections_for(repo.engine)  # the store's kind of connections, one of them idle
    assert isinstance(kept, KeptConnections)
    kept.give(kept.take())
    assert kept.idle_count == 1
    pid = os.fork()
    if pid == 0:  # the child: the parent's connections must not be used here
        code = 1
        try:
            # Nothing of the parent's is reused (SQLite does not notice, so look directly).
            if kept.idle_count:
                os._exit(3)
            repo.record_execution("lead_qualifier", record("in the child"))
            code = 0 if repo.get_history("lead_qualifier").total_executions == 2 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    repo.record_execution("lead_qualifier", record("in the parent again"))
    tasks = [r.task for r in repo.get_history("lead_qualifier").executions]
    assert tasks == ["in the parent again", "in the child", "in the parent"]
    assert kept.idle_count == 1  # the parent keeps its own
    kept.close()
    repo.close()
