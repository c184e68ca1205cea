"""``acti-store export / import / migrate-agents`` on a folder of the contract's v1 files."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from acti_store import open_repository
from acti_store.cli import main
from acti_store.cli.interchange import ProgressBar

V1_DIR = Path(__file__).parent / "data" / "v1_agents"
V1_AGENTS = ["appointment_scheduler", "lead_qualifier", "research_assistant"]


@pytest.fixture
def v1_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "agents"
    shutil.copytree(V1_DIR, folder)
    return folder


def names(url: str) -> list[str]:
    repo = open_repository(url)
    try:
        return repo.list_names()
    finally:
        repo.close()


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.json"))}


def test_migrate_agents_imports_v1_files_and_leaves_them_alone(
    store_url: str, v1_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(v1_folder)
    assert main(["migrate-agents", str(v1_folder), "--url", store_url]) == 0
    out = capsys.readouterr().out
    assert "4 file(s) in" in out and "3 agent(s) imported" in out
    assert "Upgraded from v1: 3 agent(s)." in out
    assert names(store_url) == V1_AGENTS
    assert snapshot(v1_folder) == before
    assert capsys.readouterr().err == ""  # no progress bar: stderr is not a terminal


def test_migrate_agents_rewrite_keeps_a_backup(
    store_url: str, v1_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(v1_folder)
    assert main(["migrate-agents", str(v1_folder), "--url", store_url, "--rewrite"]) == 0
    out = capsys.readouterr().out
    assert "Rewrote 3 file(s) as v2; originals in" in out
    (backup,) = v1_folder.glob(".backup-*")
    assert snapshot(backup) == {n: b for n, b in before.items() if "_history" not in n}
    for name in V1_AGENTS:
        metadata = json.loads((v1_folder / f"{name}.json").read_text())["_metadata"]
        assert metadata["version"] == 1 and metadata["execution_count"] == 0

    # A second run finds everything in the store and every file already v2.
    assert main(["migrate-agents", str(v1_folder), "--url", store_url, "--rewrite"]) == 0
    out = capsys.readouterr().out
    assert "3 skipped" in out and "nothing to rewrite" in out
    assert len(list(v1_folder.glob(".backup-*"))) == 1


def test_export_then_import_into_another_store(
    store_url: str, v1_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(v1_folder), "--url", store_url]) == 0
    out_dir = tmp_path / "export"
    assert main(["export", str(out_dir), "--url", store_url]) == 0
    assert "Exported 3 agent(s) and 1 history file(s)" in capsys.readouterr().out
    other = f"sqlite:///{tmp_path / 'other.db'}"
    assert main(["import", str(out_dir), "--url", other]) == 0
    assert names(other) == V1_AGENTS

    (out_dir / "lead_qualifier.json").unlink()
    (out_dir / "lead_qualifier_history.json").unlink()
    assert main(["export", str(out_dir), "--url", other, "--prune"]) == 0
    assert "0 removed" in capsys.readouterr().out


def test_import_reports_invalid_files_and_exits_non_zero(
    store_url: str, v1_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (v1_folder / "broken.json").write_text("[1, 2,]")
    assert main(["import", str(v1_folder), "--url", store_url]) == 1
    out = capsys.readouterr().out
    assert "broken.json: invalid JSON: Expecting value (line 1, column 7)" in out
    assert "Nothing was imported" in out and "--partial" in out
    assert names(store_url) == []

    assert main(["import", str(v1_folder), "--url", store_url, "--dry-run", "--partial"]) == 1
    assert "Dry run: nothing written." in capsys.readouterr().out
    assert names(store_url) == []

    assert main(["import", str(v1_folder), "--url", store_url, "--partial"]) == 1
    assert "3 agent(s) imported" in capsys.readouterr().out
    assert names(store_url) == V1_AGENTS


def test_import_on_conflict_fail_is_an_error(
    store_url: str, v1_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(v1_folder), "--url", store_url]) == 0
    assert main(["import", str(v1_folder), "--url", store_url, "--on-conflict", "fail"]) == 1
    assert "already exists" in capsys.readouterr().err


def test_a_missing_folder_is_an_error(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(tmp_path / "nowhere"), "--url", store_url]) == 1
    assert "is not a directory" in capsys.readouterr().err


def test_progress_can_be_forced(
    store_url: str, v1_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(v1_folder), "--url", store_url, "--progress"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("\rimport [") and "4/4 100%" in err and err.endswith("\n")


def test_the_progress_bar_only_draws_long_runs() -> None:
    stream = io.StringIO()
    bar = ProgressBar("export", stream, min_items=200)
    bar(1, 10)
    bar.close()
    assert stream.getvalue() == ""
    for done in range(1, 501):
        bar(done, 500)
    bar.close()
    lines = stream.getvalue().split("\r")
    assert lines[-1].startswith("export [" + "#" * 30 + "] 500/500 100%")
    assert stream.getvalue().endswith("\n")
    assert len(lines) < 50  # redrawn at most every 0.1 s, and at the end
