"""JSON export and import on both engines: the contract's format, round trips, bad input, mirror."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, fresh_store, make_config
from sqlalchemy.engine import make_url

from acti_store import (
    AgentExistsError,
    AgentUpdate,
    ExecutionRecord,
    JsonMirror,
    SqlAgentRepository,
    export_json,
    import_json,
    open_repository,
)
from acti_store.documents import DocumentError, agent_document, dumps, history_document
from acti_store.interchange import NEEDS_POSIX, rewrite_documents
from acti_store.interchange.folder import MAX_FILE_BYTES, Folder, read_up_to

#: Every store_url here is at head: the tests open it with options, not to migrate it.
pytestmark = pytest.mark.store_at_head

V1_DIR = Path(__file__).parent / "data" / "v1_agents"
PROMPT = "You are a careful assistant. Follow the instructions and explain every step you take."


def run(repo: SqlAgentRepository, name: str, task: str, *, success: bool = True) -> None:
    repo.record_execution(
        name,
        ExecutionRecord(
            timestamp=repo.now(),
            task=task,
            result_summary="done" if success else "failed",
            success=success,
            duration_seconds=0.25,
            tool_calls_count=2,
            error_type=None if success else "TimeoutError",
        ),
    )


def seed(repo: SqlAgentRepository) -> None:
    """Agents with tags, nulls, non-ASCII text, an update, and histories (one past the FIFO)."""
    repo.create(make_config())
    repo.create(
        make_config(
            "recherche_agent",
            description="Recherche des sources — résumé en français ✓",
            system_prompt=PROMPT + " Réponds en français, s'il te plaît. 日本語も可。",
            tools=[],
            stratum=None,
            tags=[],
        )
    )
    repo.create(make_config("idle_agent", tags=["template", "production"]))
    repo.update("idle_agent", AgentUpdate(description="Never executed, updated once"))
    for i in range(55):
        run(repo, "lead_qualifier", f"Qualify lead #{i}: Zoë from Café Ünïcode", success=i % 7 != 3)
    run(repo, "recherche_agent", "Trouve « trois » sources")


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.json"))}


def write(directory: Path, name: str, document: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False))
    return path


def agent_doc(name: str, **changes: Any) -> dict[str, Any]:
    document = json.loads((V1_DIR / "lead_qualifier.json").read_text())
    document.update(name=name, system_prompt=PROMPT, **changes)
    return dict(document)


@pytest.fixture
def other_repo(store_url: str, tmp_path: Path) -> Iterator[SqlAgentRepository]:
    """A second empty store on the same engine as ``repo``."""
    engine = {"sqlite": "sqlite", "postgresql": "postgresql"}.get(
        make_url(store_url).get_backend_name(), "mysql"
    )
    with fresh_store(engine, tmp_path / "other") as url:
        repository = open_repository(url, clock=FakeClock())
        try:
            yield repository
        finally:
            repository.close()


# -- export ------------------------------------------------------------------------------------


def test_export_writes_the_contract_format(repo: SqlAgentRepository, tmp_path: Path) -> None:
    seed(repo)
    report = export_json(repo, tmp_path / "out")
    out = files(tmp_path / "out")
    assert sorted(out) == [
        "idle_agent.json",
        "lead_qualifier.json",
        "lead_qualifier_history.json",
        "recherche_agent.json",
        "recherche_agent_history.json",
    ]  # no history file for an agent never executed
    assert (report.agents, report.histories, report.written) == (3, 2, 5)

    agent_text = out["lead_qualifier.json"].decode()
    assert agent_text == dumps(agent_document(repo.get("lead_qualifier")))
    document = json.loads(agent_text)
    assert list(document) == [
        "name",
        "description",
        "system_prompt",
        "tools",
        "model",
        "stratum",
        "tags",
        "_metadata",
    ]
    assert document["_metadata"] == {
        "created_at": "2025-01-09T14:30:22.123456+00:00",
        "updated_at": "2025-01-09T14:30:22.123456+00:00",
        "last_executed_at": document["_metadata"]["last_executed_at"],
        "version": 1,
        "builder": "acti-agent-builder",
        "execution_count": 55,
        "success_count": 47,
        "error_count": 8,
    }
    assert agent_text.startswith('{\n  "name": "lead_qualifier",\n  "description"')

    history = json.loads(out["lead_qualifier_history.json"])
    assert list(history) == ["agent_name", "executions", "total_executions"]
    assert history["total_executions"] == 55 and len(history["executions"]) == 50
    assert history["executions"][0]["task"].startswith("Qualify lead #54")  # newest first
    stamps = [r["timestamp"] for r in history["executions"]]
    assert stamps == sorted(stamps, reverse=True)
    assert all(
        s.endswith("+00:00") and len(s) == len("2025-01-09T14:30:22.123456+00:00") for s in stamps
    )

    french = out["recherche_agent.json"].decode("utf-8")
    assert "résumé en français ✓" in french and '"stratum": null' in french
    assert json.loads(out["idle_agent.json"])["_metadata"]["version"] == 2


def test_export_skips_unchanged_files_and_leaves_no_temporary_files(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    seed(repo)
    out = tmp_path / "out"
    export_json(repo, out)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    repo.update("idle_agent", AgentUpdate(tags=["deprecated"]))
    report = export_json(repo, out)
    assert (report.written, report.unchanged) == (1, 4)
    after = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert sorted(after) == sorted(before)  # no temporary file left behind
    assert [n for n in after if after[n] != before[n]] == ["idle_agent.json"]


def test_a_failed_write_leaves_the_previous_file_whole(
    repo: SqlAgentRepository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(repo)
    out = tmp_path / "out"
    export_json(repo, out)
    previous = files(out)
    repo.update("lead_qualifier", AgentUpdate(description="A new description, long enough"))

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("acti_store.interchange.folder.os.replace", crash)
    with pytest.raises(OSError, match="No space left"):
        export_json(repo, out)
    assert files(out) == previous
    assert sorted(p.name for p in out.iterdir()) == sorted(previous)


def test_export_removes_a_stale_history_and_prune_removes_deleted_agents(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    seed(repo)
    out = tmp_path / "out"
    export_json(repo, out)
    (out / "notes.txt").write_text("keep me")
    (out / "Not_An_Agent.json").write_text("{}")
    (out / ".backup-20250101T000000Z").mkdir()
    repo.delete("recherche_agent")
    repo.delete("idle_agent")
    repo.create(make_config("idle_agent"))  # same name, no history now

    report = export_json(repo, out)
    assert "recherche_agent.json" in files(out)  # without prune nothing else is removed
    report = export_json(repo, out, prune=True)
    assert report.removed == ["recherche_agent.json", "recherche_agent_history.json"]
    assert sorted(p.name for p in out.iterdir()) == [
        ".backup-20250101T000000Z",
        "Not_An_Agent.json",
        "idle_agent.json",
        "lead_qualifier.json",
        "lead_qualifier_history.json",
        "notes.txt",
    ]


def test_export_never_writes_through_a_symlink(repo: SqlAgentRepository, tmp_path: Path) -> None:
    repo.create(make_config())
    outside = tmp_path / "outside.json"
    outside.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "lead_qualifier.json").symlink_to(outside)
    export_json(repo, out)
    assert outside.read_text() == "precious"
    assert not (out / "lead_qualifier.json").is_symlink()


def test_agent_x_history_cannot_shadow_the_history_of_x(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    repo.create(make_config("lead"))
    repo.create(make_config("lead_history"))
    run(repo, "lead", "a task")
    report = export_json(repo, tmp_path / "out")
    assert list(report.not_exported) == ["lead_history"]
    assert json.loads((tmp_path / "out" / "lead_history.json").read_text())["agent_name"] == "lead"


def test_a_history_wins_its_file_name_in_any_order_the_store_lists_names(
    repo: SqlAgentRepository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The export keeps only the agents whose names begin the current one: names that sort
    between ``x`` and ``x_history`` (``x_a``, and ``xz`` where underscores sort last) do not make
    it forget ``x``; in an order that skips underscores (a PostgreSQL "en_US" collation) the
    store is asked."""
    for name in ("lead", "lead_a", "lead_history", "leadz", "le_b", "leb_a", "le_b_history"):
        repo.create(make_config(name))
    run(repo, "lead", "a task")
    run(repo, "le_b", "another task")
    report = export_json(repo, tmp_path / "bytes")
    assert sorted(report.not_exported) == ["le_b_history", "lead_history"]
    listed = repo.iter_export

    def skipping_underscores(page_size: int = 500) -> Any:
        entries = sorted(listed(page_size), key=lambda entry: entry[0].name.replace("_", ""))
        assert [agent.name for agent, _ in entries][-3:] == ["le_b", "leb_a", "le_b_history"]
        return iter(entries)

    monkeypatch.setattr(repo, "iter_export", skipping_underscores)
    report = export_json(repo, tmp_path / "collated")
    assert sorted(report.not_exported) == ["le_b_history", "lead_history"]
    assert files(tmp_path / "collated") == files(tmp_path / "bytes")


# -- round trip --------------------------------------------------------------------------------


def test_export_import_export_is_byte_identical(
    repo: SqlAgentRepository, other_repo: SqlAgentRepository, tmp_path: Path
) -> None:
    seed(repo)
    first, second = tmp_path / "first", tmp_path / "second"
    export_json(repo, first)
    report = import_json(other_repo, first)
    assert report.ok and sorted(report.imported) == [
        "idle_agent",
        "lead_qualifier",
        "recherche_agent",
    ]
    assert report.upgraded == []
    export_json(other_repo, second)
    assert files(second) == files(first)
    assert other_repo.get_history("lead_qualifier").total_executions == 55


def test_importing_the_same_folder_twice_changes_nothing(
    repo: SqlAgentRepository, other_repo: SqlAgentRepository, tmp_path: Path
) -> None:
    seed(repo)
    export_json(repo, tmp_path / "src")
    import_json(other_repo, tmp_path / "src")
    export_json(other_repo, tmp_path / "before")
    again = import_json(other_repo, tmp_path / "src")
    assert again.imported == [] and again.replaced == [] and again.invalid == {}
    assert sorted(again.skipped) == ["idle_agent", "lead_qualifier", "recherche_agent"]
    export_json(other_repo, tmp_path / "after")
    assert files(tmp_path / "after") == files(tmp_path / "before")


# -- import: v1, conflicts, modes ---------------------------------------------------------------


def test_v1_files_are_upgraded_and_histories_keep_their_records(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    folder = tmp_path / "v1"
    shutil.copytree(V1_DIR, folder)
    report = import_json(repo, folder)
    assert report.imported == ["appointment_scheduler", "lead_qualifier", "research_assistant"]
    assert report.upgraded == report.imported
    agent = repo.get("lead_qualifier")
    assert agent.tags == [] and agent.metadata.version == 1
    assert agent.metadata.updated_at == agent.metadata.created_at
    assert agent.metadata.last_executed_at is None and agent.metadata.execution_count == 0
    history = repo.get_history("lead_qualifier", limit=50)
    assert history.total_executions == 47
    assert [r.execution_id for r in history.executions] == [
        "550e8400-e29b-41d4-a716-446655440001",
        "550e8400-e29b-41d4-a716-446655440000",
    ]


def test_conflict_policies(repo: SqlAgentRepository, tmp_path: Path) -> None:
    seed(repo)
    export_json(repo, tmp_path / "src")
    repo.update("lead_qualifier", AgentUpdate(description="Changed after the export"))
    run(repo, "lead_qualifier", "one more")

    with pytest.raises(AgentExistsError):
        import_json(repo, tmp_path / "src", on_conflict="fail")
    assert repo.get("lead_qualifier").description == "Changed after the export"

    report = import_json(repo, tmp_path / "src", on_conflict="replace")
    assert sorted(report.replaced) == ["idle_agent", "lead_qualifier", "recherche_agent"]
    export_json(repo, tmp_path / "now")
    assert files(tmp_path / "now") == files(tmp_path / "src")


def test_dry_run_reports_and_writes_nothing(repo: SqlAgentRepository, tmp_path: Path) -> None:
    folder = tmp_path / "v1"
    shutil.copytree(V1_DIR, folder)
    repo.create(make_config("research_assistant"))
    report = import_json(repo, folder, dry_run=True)
    assert report.dry_run and report.imported == ["appointment_scheduler", "lead_qualifier"]
    assert report.skipped == ["research_assistant"]
    assert repo.list_names() == ["research_assistant"]
    replace = import_json(repo, folder, dry_run=True, on_conflict="replace")
    assert replace.replaced == ["research_assistant"]
    with pytest.raises(AgentExistsError):
        import_json(repo, folder, dry_run=True, on_conflict="fail")


def test_one_invalid_file_imports_nothing_unless_partial(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    folder = tmp_path / "v1"
    shutil.copytree(V1_DIR, folder)
    (folder / "broken.json").write_text('{\n  "name": "broken",\n  "description" "x"\n}')

    report = import_json(repo, folder)
    assert report.aborted and not report.ok and report.imported == []
    assert report.invalid == {
        "broken.json": "invalid JSON: Expecting ':' delimiter (line 3, column 17)"
    }
    assert repo.list_names() == []

    calls: list[tuple[int, int]] = []
    partial = import_json(
        repo, folder, all_or_nothing=False, progress=lambda d, t: calls.append((d, t))
    )
    assert not partial.aborted and list(partial.invalid) == ["broken.json"]
    assert repo.list_names() == ["appointment_scheduler", "lead_qualifier", "research_assistant"]
    assert calls[-1] == (5, 5)


# -- import: bad input, each reported ------------------------------------------------------------


def test_bad_files_are_each_reported_and_nothing_outside_is_read(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    write(folder, "good_agent.json", agent_doc("good_agent"))
    write(folder, "renamed.json", agent_doc("original_name"))
    history = json.loads((V1_DIR / "lead_qualifier_history.json").read_text())
    write(folder, "renamed_history.json", history | {"agent_name": "renamed"})
    write(folder, "escape.json", agent_doc("../x"))
    write(folder, "a_list.json", [agent_doc("a_list")])
    write(folder, "Upper.json", agent_doc("upper"))
    write(tmp_path, "outside.json", agent_doc("outside"))
    (folder / "outside.json").symlink_to(tmp_path / "outside.json")
    write(folder, "ghost_history.json", history | {"agent_name": "ghost"})
    write(folder, "twice.json", agent_doc("twice"))
    records = history["executions"]
    write(
        folder,
        "twice_history.json",
        history | {"agent_name": "twice", "executions": [records[0], records[0]]},
    )
    (folder / "not_json.txt").write_text("ignored")

    report = import_json(repo, folder, all_or_nothing=False)
    assert report.imported == ["good_agent"]
    reasons = report.invalid
    assert reasons["renamed.json"] == (
        "the file name does not match the agent name 'original_name' (expected original_name.json)"
    )
    assert reasons["escape.json"].startswith("name: name must be snake_case")
    assert reasons["a_list.json"] == "expected an agent document (a JSON object), found an array"
    assert reasons["Upper.json"].startswith("not an agent file name")
    assert reasons["outside.json"] == "a symbolic link: not followed"
    assert reasons["ghost_history.json"] == (
        "the history of agent 'ghost', which is neither in this folder nor in the store"
    )
    assert (
        "duplicate execution_id '550e8400-e29b-41d4-a716-446655440001'"
        in reasons["twice_history.json"]
    )
    assert reasons["twice.json"] == "not imported: its history file twice_history.json is invalid"
    assert reasons["renamed_history.json"] == "not imported: its agent file renamed.json is invalid"
    assert len(reasons) == 9
    assert repo.list_names() == ["good_agent"]


def test_only_regular_files_within_the_size_limit_are_read(tmp_path: Path) -> None:
    (tmp_path / "fits.json").write_bytes(b"x" * MAX_FILE_BYTES)
    (tmp_path / "too_big.json").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    (tmp_path / "empty.json").write_bytes(b"")
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "directory.json").mkdir()
    with Folder(tmp_path) as folder:
        assert folder.read("fits.json") == b"x" * MAX_FILE_BYTES
        assert folder.read("empty.json") == b""
        with pytest.raises(DocumentError, match=r"^larger than 8 MiB$"):
            folder.read("too_big.json")
        with pytest.raises(DocumentError, match=r"^not a regular file$"):
            folder.read("fifo.json")
        with pytest.raises(IsADirectoryError):  # import lists no directory: never asked to read one
            folder.read("directory.json")
        with pytest.raises(DocumentError, match=r"^cannot be read: No such file or directory$"):
            folder.read("absent.json")


@pytest.mark.parametrize("size_hint", [0, 10, 99, 100, 5000])
def test_a_file_is_read_to_its_end_whatever_its_size_said(tmp_path: Path, size_hint: int) -> None:
    """``fstat``'s size only sizes the first read: a file that grew since is read whole."""
    path = tmp_path / "grown.json"
    path.write_bytes(bytes(range(100)) * 30)
    for limit in (1, 100, 3000, 3001, 10_000):
        fd = os.open(path, os.O_RDONLY)
        try:
            assert read_up_to(fd, limit, size_hint) == (bytes(range(100)) * 30)[:limit]
        finally:
            os.close(fd)


def test_a_history_file_alone_joins_its_agent_in_the_store(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    repo.create(make_config())
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(V1_DIR / "lead_qualifier_history.json", folder)
    report = import_json(repo, folder)
    assert report.imported == ["lead_qualifier"]
    assert repo.get_history("lead_qualifier").total_executions == 47
    assert import_json(repo, folder).skipped == ["lead_qualifier"]


def test_an_agent_called_x_history_is_told_apart_from_the_history_of_x(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    write(folder, "lead.json", agent_doc("lead"))
    write(folder, "lead_history.json", agent_doc("lead_history"))
    report = import_json(repo, folder)
    assert report.ok and report.imported == ["lead", "lead_history"]
    assert repo.get_history("lead").executions == []


def test_files_are_read_with_their_agent_whatever_order_the_folder_lists_them(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    """The walk holds no list of the folder: each companion file is found from its agent file,
    down chains of agents called ``*_history``, and a report without names still counts all."""
    source = open_repository(f"sqlite:///{tmp_path / 'source.db'}", clock=FakeClock())
    with source:
        for name in ("lead", "lead_history", "lead_history_history", "solo"):
            source.create(make_config(name))
        run(source, "lead_history", "Runs of the agent called lead_history")
        export_json(source, tmp_path / "in")
    folder = tmp_path / "in"
    write(folder, "broken.json", {"name": "broken"})  # an invalid agent...
    shutil.copy(folder / "lead_history_history.json", folder / "broken_history.json")
    # ...and its history, which names another agent
    # (lead_history's history won the name lead_history_history.json: the agent is not exported)
    assert sorted(p.name for p in folder.glob("*.json")) == [
        "broken.json", "broken_history.json", "lead.json", "lead_history.json",
        "lead_history_history.json", "solo.json",
    ]  # fmt: skip
    counted = import_json(repo, folder, all_or_nothing=False, names=False, dry_run=True)
    assert counted.imported == [] and counted.upgraded == []
    assert counted.counts == {
        "imported": 3,
        "replaced": 0,
        "skipped": 0,
        "upgraded": 0,
        "configs": 0,
    }
    assert counted.files == 6 and counted.invalid.keys() == {"broken.json", "broken_history.json"}
    report = import_json(repo, folder, all_or_nothing=False)
    assert report.imported == ["lead", "lead_history", "solo"]
    assert report.counts["imported"] == 3 and report.invalid == counted.invalid
    assert repo.get_history("lead_history").total_executions == 1
    assert repo.get_history("lead").executions == []
    again = import_json(repo, folder, all_or_nothing=False, names=False)
    assert again.counts == {"imported": 0, "replaced": 0, "skipped": 3, "upgraded": 0, "configs": 0}
    assert again.skipped == []


# -- rewrite in place --------------------------------------------------------------------------


def test_rewrite_documents_makes_v1_files_v2_after_a_backup(tmp_path: Path) -> None:
    folder = tmp_path / "v1"
    shutil.copytree(V1_DIR, folder)
    original = files(folder)
    report = rewrite_documents(folder)
    assert report.rewritten == [
        "appointment_scheduler.json",
        "lead_qualifier.json",
        "research_assistant.json",
    ]  # the history file is already in the canonical v2 layout
    assert report.backup is not None and report.backup.parent == folder
    assert files(report.backup) == {n: original[n] for n in report.rewritten}
    assert (folder / "lead_qualifier_history.json").read_bytes() == original[
        "lead_qualifier_history.json"
    ]
    document = json.loads((folder / "lead_qualifier.json").read_text())
    assert document["tags"] == [] and document["_metadata"]["version"] == 1
    assert document["_metadata"]["updated_at"] == "2025-01-09T14:30:22.123456+00:00"
    assert rewrite_documents(folder).rewritten == []


# -- the mirror --------------------------------------------------------------------------------


def test_a_store_opened_with_an_export_dir_mirrors_every_write(
    store_url: str, clock: FakeClock, tmp_path: Path
) -> None:
    mirror = tmp_path / "mirror"
    repo = open_repository(store_url, clock=clock, export_dir=mirror)
    try:
        assert isinstance(repo.mirror, JsonMirror)
        repo.create(make_config())
        assert repo.location_of("lead_qualifier") == str(mirror / "lead_qualifier.json")
        agent_file = mirror / "lead_qualifier.json"
        assert agent_file.read_text() == dumps(agent_document(repo.get("lead_qualifier")))

        repo.update("lead_qualifier", AgentUpdate(tags=["production"]))
        assert json.loads(agent_file.read_text())["_metadata"]["version"] == 2
        run(repo, "lead_qualifier", "first run")
        history_file = mirror / "lead_qualifier_history.json"
        assert history_file.read_text() == dumps(
            history_document(repo.get_history("lead_qualifier", limit=50))
        )
        repo.clone("lead_qualifier", "lead_copy")
        clock.advance(seconds=1)
        export_json(repo, tmp_path / "export")
        assert files(tmp_path / "export") == files(mirror)

        repo.delete("lead_qualifier", delete_history=False)
        assert not agent_file.exists() and history_file.exists()  # history kept for audit
        repo.delete("lead_copy")
        assert sorted(files(mirror)) == ["lead_qualifier_history.json"]
    finally:
        repo.close()


def test_the_export_dir_comes_from_the_environment(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTI_STORE_EXPORT_DIR", str(tmp_path / "env"))
    repo = open_repository(store_url)
    try:
        assert isinstance(repo.mirror, JsonMirror)
        assert repo.mirror.directory == (tmp_path / "env").resolve()
    finally:
        repo.close()
    repo = open_repository(store_url, export_dir="")
    try:
        assert repo.mirror is None
    finally:
        repo.close()


def test_a_mirror_that_cannot_write_does_not_fail_the_write(
    store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    repo = open_repository(store_url, export_dir=blocker)
    try:
        with caplog.at_level(logging.WARNING, logger="acti_store.interchange"):
            repo.create(make_config())
        assert repo.exists("lead_qualifier")
        assert "mirror" in caplog.text
    finally:
        repo.close()


def test_mirror_files_for_names_both_files(tmp_path: Path) -> None:
    mirror = JsonMirror(tmp_path)
    assert mirror.files_for("x") == (
        tmp_path.resolve() / "x.json",
        tmp_path.resolve() / "x_history.json",
    )


# --------------------------------------------------------------------------------------------------
# Without fcntl (Windows): the package imports, folders refuse clearly
# --------------------------------------------------------------------------------------------------

WITHOUT_FCNTL = """
import json, logging, sys
sys.modules["fcntl"] = None  # ``import fcntl`` now raises ImportError, as on Windows
import acti_store
from acti_store import AgentStoreError, export_json, import_json, open_repository

logging.basicConfig(format="%(levelname)s %(message)s")
database, mirror, source, target = sys.argv[1:]
repo = open_repository(f"sqlite:///{database}", export_dir=mirror)
report = import_json(repo, source)
try:
    export_json(repo, target)
    refusal = None
except AgentStoreError as exc:
    refusal = str(exc)
print(json.dumps({"imported": report.imported, "refusal": refusal}))
"""


def test_the_package_imports_without_fcntl_and_folder_writes_refuse_clearly(
    tmp_path: Path,
) -> None:
    """``import acti_store`` works where ``fcntl`` does not exist; reading a folder needs no lock,
    exporting says it needs POSIX, and the mirror logs that instead of failing the write."""
    arguments = ["store.db", "mirror", str(V1_DIR), "export"]
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_FCNTL, *arguments],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout)
    assert sorted(result["imported"]) == [
        "appointment_scheduler",
        "lead_qualifier",
        "research_assistant",
    ]
    assert result["refusal"] == NEEDS_POSIX
    assert out.stderr.splitlines() == [
        f"WARNING acti_store mirror {(tmp_path / 'mirror').resolve()} not updated: {NEEDS_POSIX}"
    ]
    assert list((tmp_path / "export").iterdir()) == []
    assert list((tmp_path / "mirror").iterdir()) == []
