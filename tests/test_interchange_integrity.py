"""The interchange folder tells the truth (issue 25), on both engines: an export that did not
finish is refused by import unless forced, a versions file comes from its agent file's snapshot,
and a history file's newest records are kept whatever their order in the file."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import make_config

from acti_store import (
    AgentStoreError,
    ExportError,
    ImportItem,
    IncompleteExportError,
    InvalidInputError,
    SqlAgentRepository,
    export_json,
    import_json,
    open_repository,
)
from acti_store.documents import agent_document, dumps
from acti_store.interchange import INCOMPLETE_MARKER
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


# -- an export that did not finish -----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
MANY = 3000
#: Exports into ``argv[2]`` from the store at ``argv[1]`` and SIGKILLs itself after the agent
#: ``argv[3]``: an export killed part way, at a known point.
KILLED_EXPORT = """
import os, signal, sys
from acti_store import export_json, open_repository
def kill_at(done, total):
    if done == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
export_json(open_repository(sys.argv[1]), sys.argv[2], progress=kill_at)
"""


def _many_agents(repo: SqlAgentRepository, count: int = MANY) -> list[str]:
    template = repo.create(make_config("template_agent"))
    repo.delete("template_agent")
    agents = [template.model_copy(update={"name": f"agent_{i:05d}"}) for i in range(count)]
    repo.bulk_put([ImportItem(a.name, agent=a) for a in agents])
    return [a.name for a in agents]


def _json_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.json"))


def _killed_export(store_url: str, folder: Path, at: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_EXPORT, store_url, str(folder), str(at)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_an_export_killed_part_way_is_refused_by_import(
    repo: SqlAgentRepository, store_url: str, tmp_path: Path
) -> None:
    """kill -9 after 629 of 3,000 agents: the folder keeps the mark, import refuses it with
    IncompleteExportError and imports nothing; allow_incomplete=True imports what is there."""
    _many_agents(repo)
    folder = tmp_path / "out"
    _killed_export(store_url, folder, 629)
    assert (folder / INCOMPLETE_MARKER).exists()
    assert len(_json_files(folder)) == 629

    target = open_repository(f"sqlite:///{tmp_path / 'target.db'}")
    try:
        for dry_run in (False, True):
            with pytest.raises(IncompleteExportError) as caught:
                import_json(target, folder, dry_run=dry_run)
            assert isinstance(caught.value, InvalidInputError)
            assert isinstance(caught.value, AgentStoreError)
            assert str(folder) in str(caught.value)
            assert "did not finish" in str(caught.value) and "allow_incomplete" in str(caught.value)
        assert target.list_names() == []

        report = import_json(target, folder, allow_incomplete=True)
        assert report.ok and report.incomplete_export and len(report.imported) == 629
    finally:
        target.close()


def test_the_command_line_refuses_a_killed_export_in_one_line(
    repo: SqlAgentRepository, store_url: str, tmp_path: Path
) -> None:
    """``acti-store export`` of 3,000 agents killed (SIGKILL) once its first files are there:
    ``acti-store import`` says why in one error line; ``--allow-incomplete`` imports them."""
    _many_agents(repo)
    folder = tmp_path / "out"
    export = subprocess.Popen(
        [sys.executable, "-m", "acti_store", "export", str(folder), "--url", store_url],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not (folder.is_dir() and any(folder.glob("agent_*.json"))):
            assert export.poll() is None and time.monotonic() < deadline
            time.sleep(0.001)
    finally:
        export.send_signal(signal.SIGKILL)
        export.wait()
    assert export.returncode == -signal.SIGKILL  # killed, not finished
    assert (folder / INCOMPLETE_MARKER).exists()
    written = len(_json_files(folder))
    assert 0 < written < MANY

    target = f"sqlite:///{tmp_path / 'target.db'}"
    cli = [sys.executable, "-m", "acti_store", "import", str(folder), "--url", target]
    refused = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("error: ")
    assert "did not finish" in refused.stderr and "--allow-incomplete" in refused.stderr

    forced = subprocess.run(
        [*cli, "--allow-incomplete"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert forced.returncode == 0, forced.stderr
    assert f"{written} agent(s) imported" in forced.stdout
    assert "did not finish" in forced.stdout


def test_an_export_stopped_by_an_error_keeps_the_mark(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    names = _many_agents(repo, 20)
    folder = tmp_path / "out"
    (folder / f"{names[10]}.json").mkdir(parents=True)  # a folder where a file must go
    with pytest.raises(ExportError):
        export_json(repo, folder)
    assert (folder / INCOMPLETE_MARKER).exists()
    with pytest.raises(IncompleteExportError):
        import_json(repo, folder)


def test_a_finished_export_removes_the_mark_and_imports(
    repo: SqlAgentRepository, store_url: str, tmp_path: Path
) -> None:
    names = _many_agents(repo, 50)
    folder = tmp_path / "out"
    _killed_export(store_url, folder, 10)
    assert (folder / INCOMPLETE_MARKER).exists()
    # What an export killed while writing its mark leaves (the mark's temporary file).
    (folder / f".{INCOMPLETE_MARKER}.0123456789ab.tmp").write_bytes(b"")

    report = export_json(repo, folder, versions=True, prune=True)  # over the killed one

    assert report.agents == len(names) and not (folder / INCOMPLETE_MARKER).exists()
    assert not any(p.name.endswith(".tmp") for p in folder.iterdir())
    target = open_repository(f"sqlite:///{tmp_path / 'target.db'}")
    try:
        report = import_json(target, folder)
        assert report.ok and not report.incomplete_export and report.imported == names
    finally:
        target.close()


def test_folders_without_the_mark_still_import(repo: SqlAgentRepository, tmp_path: Path) -> None:
    """Hand-written folders, older exports and v1 folders have no mark: they import as ever."""
    folder = tmp_path / "by_hand"
    agent = repo.create(make_config("lead_qualifier"))
    repo.delete("lead_qualifier")
    write(folder / "lead_qualifier.json", agent_document(agent))
    report = import_json(repo, folder)
    assert report.ok and report.imported == ["lead_qualifier"] and not report.incomplete_export
    v1 = import_json(repo, Path(__file__).parent / "data" / "v1_agents", dry_run=True)
    assert v1.ok and sorted(v1.imported + v1.skipped) == [
        "appointment_scheduler",
        "lead_qualifier",
        "research_assistant",
    ]
