"""The interchange folder tells the truth (issue 25), on both engines: an export that did not
finish is refused by import unless forced, a versions file comes from its agent file's snapshot,
and a history file's newest records are kept whatever their order in the file."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from conftest import make_config

from acti_store import SqlAgentRepository, export_json, import_json, open_repository
from acti_store.documents import agent_document, dumps
from acti_store.models import HISTORY_MAX_RECORDS


def write(path: Path, document: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def record(execution_id: str, minute: int) -> dict[str, Any]:
    return {
        "execution_id": execution_id,
        "timestamp": f"2025-01-10T09:{minute:02d}:00.000000+00:00",
        "task": f"Qualify lead at minute {minute}",
        "result_summary": "Qualified",
        "success": True,
        "duration_seconds": 1.0,
        "tool_calls_count": 0,
        "error_type": None,
    }


# -- a history file's order ------------------------------------------------------------------------


def test_an_oldest_first_history_file_imports_its_newest_50(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    """60 records listed oldest first: the store keeps the newest 50 by timestamp, newest
    first, and exports them newest first."""
    folder = tmp_path / "in"
    agent = repo.create(make_config("lead_qualifier"))
    repo.delete("lead_qualifier")
    write(folder / "lead_qualifier.json", agent_document(agent))
    records = [record(f"run-{minute:02d}", minute) for minute in range(60)]  # oldest first
    history = {"agent_name": "lead_qualifier", "executions": records, "total_executions": 60}
    write(folder / "lead_qualifier_history.json", history)

    report = import_json(repo, folder)

    assert report.ok and report.imported == ["lead_qualifier"]
    newest = [f"run-{minute:02d}" for minute in range(59, 59 - HISTORY_MAX_RECORDS, -1)]
    stored = repo.get_history("lead_qualifier", limit=HISTORY_MAX_RECORDS)
    assert [r.execution_id for r in stored.executions] == newest
    assert stored.total_executions == 60
    export_json(repo, tmp_path / "out")
    exported = json.loads((tmp_path / "out" / "lead_qualifier_history.json").read_text())
    assert [r["execution_id"] for r in exported["executions"]] == newest
    assert dumps(exported) == (tmp_path / "out" / "lead_qualifier_history.json").read_text()


# -- a versions file from its agent file's snapshot ------------------------------------------------


def _agents_with_versions(repo: SqlAgentRepository, count: int) -> list[str]:
    names = [f"agent_{i:03d}" for i in range(count)]
    for name in names:
        repo.create(make_config(name), message="first cut")
        repo.update(name, {"description": f"{name}, second try"}, message="v2")
    return names


def _versions_files_hold_their_agents_version(folder: Path, names: list[str]) -> None:
    for name in names:
        agent = json.loads((folder / f"{name}.json").read_text())
        versions = json.loads((folder / f"{name}_versions.json").read_text())
        own = agent["_metadata"]["version"]
        assert versions["current_version"] == own, name
        snapshots = {v["version"]: v for v in versions["versions"]}
        assert own in snapshots, f"{name}: version {own} missing from {sorted(snapshots)}"
        config = snapshots[own]["config"]
        assert config == {field: agent[field] for field in config}, name


def test_versions_pruned_during_an_export_stay_in_its_versions_files(
    repo: SqlAgentRepository, store_url: str, tmp_path: Path
) -> None:
    """While the export goes, another connection updates each agent just after the export read
    it and prunes every old snapshot: each versions file still holds the version its agent file
    has, and export -> import -> export gives the same files."""
    names = _agents_with_versions(repo, 12)
    writer = open_repository(store_url)

    def update_and_prune_the_next(done: int, total: int) -> None:
        if done < len(names):  # the next agent: read by the export, not written yet
            writer.update(names[done], {"description": "changed during the export"})
            assert writer.prune_versions(names[done], keep=0) == 2

    try:
        report = export_json(
            repo, tmp_path / "out", versions=True, progress=update_and_prune_the_next
        )
    finally:
        writer.close()

    assert report.agents == report.versions == len(names)
    _versions_files_hold_their_agents_version(tmp_path / "out", names)
    again = open_repository(f"sqlite:///{tmp_path / 'again.db'}")
    try:
        assert import_json(again, tmp_path / "out").ok
        export_json(again, tmp_path / "again", versions=True)
    finally:
        again.close()
    assert files(tmp_path / "again") == files(tmp_path / "out")


def test_an_export_beside_a_pruning_thread_writes_whole_versions_files(
    repo: SqlAgentRepository, store_url: str, tmp_path: Path
) -> None:
    """A thread updates and prunes every agent in a loop while exports with versions run."""
    names = _agents_with_versions(repo, 40)
    stop = threading.Event()
    errors: list[BaseException] = []

    def prune_in_a_loop() -> None:
        writer = open_repository(store_url)
        try:
            while not stop.is_set():
                for name in names:
                    writer.update(name, {"description": f"changed {writer.now()}"})
                    writer.prune_versions(name, keep=0)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            writer.close()

    pruner = threading.Thread(target=prune_in_a_loop)
    pruner.start()
    try:
        for attempt in range(3):
            export_json(repo, tmp_path / f"out_{attempt}", versions=True)
            _versions_files_hold_their_agents_version(tmp_path / f"out_{attempt}", names)
    finally:
        stop.set()
        pruner.join()
    assert errors == []


def test_iter_export_versions_reads_each_log_in_the_export_snapshot(
    repo: SqlAgentRepository, store_url: str
) -> None:
    names = _agents_with_versions(repo, 3)
    writer = open_repository(store_url)
    stream = repo.iter_export_versions(page_size=1)
    try:
        first = next(stream)
        for name in names:
            writer.update(name, {"description": "changed after the snapshot"})
            writer.prune_versions(name, keep=0)
        seen = [first, *stream]
    finally:
        writer.close()
    for agent, _history, log in seen:
        assert agent.metadata.version == 2
        assert [v.version for v in log.versions] == [2, 1]
