"""An export is one snapshot of the store: agents agree with their histories, whatever is written
meanwhile, and every exported folder imports back with nothing refused.

Also the other reads that return one answer from several statements (``execution_stats``,
``archived_history``, the mirror's read of one agent) and the early end of ``iter_export``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from conftest import FakeClock, make_config
from workers import snapshots

from acti_store import (
    AgentUpdate,
    ExecutionRecord,
    SearchQuery,
    SqlAgentRepository,
    export_json,
    open_repository,
)
from acti_store.documents import loads

#: Every store_url here is at head: the tests open it with options, not to migrate it.
pytestmark = pytest.mark.store_at_head


def _run(repo: SqlAgentRepository, task: str = "task") -> None:
    repo.record_execution(
        "a_first",
        ExecutionRecord(
            timestamp=repo.now(), task=task, result_summary="ok", success=True, duration_seconds=1
        ),
    )


@pytest.mark.slow
def test_exports_under_concurrent_writes_are_consistent_and_import_back(
    store_url: str, tmp_path: Path
) -> None:
    snapshots.seed(store_url, agents=600)
    folders = [tmp_path / f"export_{i}" for i in range(5)]
    writes, exported = snapshots.export_under_writes(store_url, folders, agents=600)

    assert all(count > 0 for count in writes), writes  # every writer wrote during the exports
    assert exported == [600] * 5
    problems = [p for folder in folders for p in snapshots.folder_problems(folder)]
    for i, folder in enumerate(folders):
        problems += snapshots.import_problems(folder, f"sqlite:///{tmp_path / f'import_{i}.db'}")
    assert problems == []


def test_an_export_sees_nothing_written_after_it_began(
    repo: SqlAgentRepository, store_url: str, clock: FakeClock
) -> None:
    for name in ("a_first", "m_middle", "z_last"):
        repo.create(make_config(name))
    _run(repo, "before")
    stream = repo.iter_export(page_size=1)
    first, history = next(stream)
    assert first.name == "a_first" and history is not None

    other = open_repository(store_url, migrate=False, clock=clock)  # another writer, meanwhile
    try:
        _run(other, "after")
        other.delete("m_middle")
        other.create(make_config("n_new"))
        other.update("z_last", AgentUpdate(description="Changed after the export began"))
    finally:
        other.close()

    rest = list(stream)
    assert [agent.name for agent, _ in rest] == ["m_middle", "z_last"]
    assert rest[1][0].description == make_config().description
    assert rest[1][0].metadata.version == 1


def test_an_export_stopped_early_gives_its_connection_back(repo: SqlAgentRepository) -> None:
    for i in range(5):
        repo.create(make_config(f"agent_{i}"))
    for _ in range(20):  # more early stops than connections any pool would hold
        stream = repo.iter_export(page_size=2)
        next(stream)
        stream.close()
    with pytest.raises(RuntimeError):
        for _agent, _history in repo.iter_export(page_size=2):
            raise RuntimeError("the consumer failed")
    # No snapshot is left open: every connection is back, and (SQLite) a checkpoint can reset
    # the whole WAL, which it could not past a reader's snapshot.
    if repo.engine.dialect.name == "sqlite":
        with repo.engine.connect() as conn:
            busy, _, _ = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
        assert busy == 0
    else:
        assert repo.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    repo.create(make_config("after_the_stops"))
    assert len(list(repo.iter_export())) == 6


def test_execution_stats_and_history_of_one_agent_agree(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    repo.create(make_config("a_first"))
    for i in range(3):
        _run(repo, f"run {i}")
    stats = repo.execution_stats("a_first")
    assert (stats.total_executions, stats.retained) == (3, 3)

    agent, history = repo.get_with_history("a_first")
    assert agent.metadata.execution_count == history.total_executions == 3
    assert [r.task for r in history.executions] == ["run 2", "run 1", "run 0"]


def test_multi_statement_reads_see_one_snapshot_under_concurrent_runs(
    repo: SqlAgentRepository,
) -> None:
    repo.create(make_config("a_first"))
    stop = threading.Event()

    def record() -> None:
        while not stop.is_set():
            _run(repo)

    writers = [threading.Thread(target=record) for _ in range(2)]
    for writer in writers:
        writer.start()
    problems: list[str] = []
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            stats = repo.execution_stats("a_first")
            if stats.retained != min(stats.total_executions, 50):
                problems.append(f"stats: {stats.retained} of {stats.total_executions} retained")
            agent, history = repo.get_with_history("a_first")
            if agent.metadata.execution_count != history.total_executions:
                problems.append(f"{agent.metadata.execution_count} != {history.total_executions}")
            # Runs may commit out of order: the last run is the latest timestamp kept.
            newest = max((record.timestamp for record in history.executions), default=None)
            if newest != agent.metadata.last_executed_at:
                problems.append(f"last run {agent.metadata.last_executed_at}, newest {newest}")
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert problems == []


def test_the_mirror_writes_an_agent_and_its_history_from_one_read(
    store_url: str, tmp_path: Path
) -> None:
    mirrored = tmp_path / "mirror"
    repo = open_repository(store_url, export_dir=str(mirrored))
    try:
        repo.create(make_config("a_first"))
        for i in range(3):
            _run(repo, f"run {i}")
        agent = loads((mirrored / "a_first.json").read_bytes())
        history = loads((mirrored / "a_first_history.json").read_bytes())
        assert isinstance(agent, dict) and isinstance(history, dict)
        assert agent["_metadata"]["execution_count"] == history["total_executions"] == 3
        export_json(repo, tmp_path / "export")
        for file in ("a_first.json", "a_first_history.json"):
            assert (tmp_path / "export" / file).read_bytes() == (mirrored / file).read_bytes()
    finally:
        repo.close()


def test_a_read_only_store_exports_and_pages(store_url: str, tmp_path: Path) -> None:
    """The snapshot reads begin read-only transactions: they work where nothing can be written
    (SQLite ``mode=ro``, PostgreSQL ``default_transaction_read_only``), and leave the reader's
    connections usable."""
    writer = open_repository(store_url)
    for i in range(7):
        writer.create(make_config(f"a_{'first' if i == 0 else i}"))
    _run(writer)
    writer.close()
    reader = open_repository(store_url, read_only=True)
    try:
        report = export_json(reader, tmp_path / "out")
        assert (report.agents, report.histories) == (7, 1)
        assert loads((tmp_path / "out" / "a_first_history.json").read_bytes())["total_executions"]
        query = SearchQuery(sort_by="execution_count", limit=3)
        seen: list[str] = []
        cursor: str | None = None
        while True:
            page = reader.search_page(query, cursor)
            assert page.total == reader.count(query) == 7
            seen += [agent.name for agent in page.agents]
            if (cursor := page.next_cursor) is None:
                break
        assert seen == ["a_first", *(f"a_{i}" for i in range(1, 7))]
        assert [agent.name for agent in reader.iter_agents(page_size=2)] == sorted(seen)
        agent, history = reader.get_with_history("a_first")
        assert agent.metadata.execution_count == history.total_executions == 1
        assert reader.execution_stats("a_first").total_executions == 1
        assert reader.archived_history("a_first").total_executions == 0
        assert reader.get("a_6").name == "a_6"  # the pooled connections are still usable
    finally:
        reader.close()
