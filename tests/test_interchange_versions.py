"""``{name}_versions.json`` on both engines: written by ``export_json(versions=True)`` beside
files that stay byte for byte what they were, read back by ``import_json``, a byte-identical
round trip, and "file names decide" for an agent called ``x_versions``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_config

from acti_store import (
    ExecutionRecord,
    InvalidInputError,
    ProtectedImportError,
    SqlAgentRepository,
    export_json,
    import_json,
)
from acti_store.cli import main


def _store_with_versions(repo: SqlAgentRepository) -> None:
    repo.create(make_config(), message="first cut")
    repo.update("lead_qualifier", {"description": "Qualifies leads, second try"}, message="v2")
    repo.update("lead_qualifier", {"tools": ["crm"], "tags": []})
    repo.set_label("lead_qualifier", "production", 2, note="approved")
    repo.set_label("lead_qualifier", "staging", 3)
    repo.set_label("lead_qualifier", "production", 3, expected_version=2)
    repo.record_execution(
        "lead_qualifier",
        ExecutionRecord(timestamp=repo.now(), task="t", result_summary="r", success=True,
                        duration_seconds=1.5),
    )  # fmt: skip
    repo.create(make_config("web_researcher", tools=["websearch"]))


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_export_with_versions_adds_one_file_per_agent(repo: SqlAgentRepository, tmp_path) -> None:
    _store_with_versions(repo)
    plain = _files_after(export_json, repo, tmp_path / "plain")
    report = export_json(repo, tmp_path / "full", versions=True)
    full = _files(tmp_path / "full")
    assert report.versions == 2
    assert set(full) - set(plain) == {
        "lead_qualifier_versions.json",
        "web_researcher_versions.json",
    }
    assert {name: full[name] for name in plain} == plain  # the contract's files: unchanged
    document = json.loads(full["lead_qualifier_versions.json"])
    assert list(document) == [
        "agent_name", "current_version", "versions", "labels", "label_history",
    ]  # fmt: skip
    assert document["current_version"] == 3
    assert [v["version"] for v in document["versions"]] == [3, 2, 1]
    assert [v["message"] for v in document["versions"]] == [None, "v2", "first cut"]
    assert list(document["versions"][0]) == ["version", "created_at", "message", "config"]
    assert list(document["versions"][0]["config"]) == [
        "name", "description", "system_prompt", "tools", "model", "stratum", "tags",
    ]  # fmt: skip
    assert document["labels"] == {"production": 3, "staging": 3}
    moves = [(m["label"], m["from_version"], m["to_version"]) for m in document["label_history"]]
    assert moves == [("production", 2, 3), ("staging", None, 3), ("production", None, 2)]
    assert document["versions"][2]["created_at"].endswith("+00:00")


def _files_after(export, repo: SqlAgentRepository, folder: Path) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    export(repo, folder)
    return _files(folder)


def test_round_trip_with_versions_is_byte_identical(repo: SqlAgentRepository, tmp_path) -> None:
    _store_with_versions(repo)
    export_json(repo, tmp_path / "first", versions=True)
    for name in repo.list_names():
        repo.delete(name)
    report = import_json(repo, tmp_path / "first")
    assert report.ok and sorted(report.imported) == ["lead_qualifier", "web_researcher"]
    assert repo.labels("lead_qualifier") == {"production": 3, "staging": 3}
    assert [v.version for v in repo.versions("lead_qualifier")] == [3, 2, 1]
    assert repo.label_history("lead_qualifier")[0].note is None
    assert repo.label_history("lead_qualifier")[-1].note == "approved"
    export_json(repo, tmp_path / "second", versions=True)
    assert _files(tmp_path / "second") == _files(tmp_path / "first")


def test_an_agent_file_alone_gets_one_snapshot(repo: SqlAgentRepository, tmp_path) -> None:
    _store_with_versions(repo)
    export_json(repo, tmp_path)  # without versions
    for name in repo.list_names():
        repo.delete(name)
    assert import_json(repo, tmp_path).ok
    (only,) = repo.versions("lead_qualifier")
    assert (only.version, only.message) == (3, "imported")
    assert repo.labels("lead_qualifier") == {}


def test_an_agent_called_x_versions_still_works(repo: SqlAgentRepository, tmp_path) -> None:
    repo.create(make_config("lead"))
    repo.create(make_config("lead_versions", description="An agent whose name ends in versions"))
    report = export_json(repo, tmp_path / "plain")  # without versions: both agents' files
    assert report.agents == 2 and report.not_exported == {}
    report = export_json(repo, tmp_path / "full", versions=True)
    assert report.not_exported == {
        "lead_versions": "its file lead_versions.json is the versions file of agent 'lead'"
    }
    assert "current_version" in json.loads((tmp_path / "full" / "lead_versions.json").read_text())
    for name in repo.list_names():
        repo.delete(name)
    report = import_json(repo, tmp_path / "plain")  # x_versions.json is an agent file here
    assert report.ok and sorted(report.imported) == ["lead", "lead_versions"]
    assert [v.message for v in repo.versions("lead_versions")] == ["imported"]


def test_bad_or_lone_versions_files_are_reported(repo: SqlAgentRepository, tmp_path) -> None:
    _store_with_versions(repo)
    export_json(repo, tmp_path, versions=True)
    path = tmp_path / "lead_qualifier_versions.json"
    document = json.loads(path.read_text())
    document["labels"]["production"] = 9
    path.write_text(json.dumps(document))
    (tmp_path / "web_researcher.json").unlink()
    for name in repo.list_names():
        repo.delete(name)
    report = import_json(repo, tmp_path, all_or_nothing=False)
    assert report.invalid == {
        "lead_qualifier_versions.json": "label 'production' must be a valid label on a listed "
        "version",
        "lead_qualifier.json": "not imported: its versions file lead_qualifier_versions.json "
        "is invalid",
        "lead_qualifier_history.json": "not imported: its versions file "
        "lead_qualifier_versions.json is invalid",
        "web_researcher_versions.json": "versions are imported with their agent: "
        "web_researcher.json is not in this folder",
    }
    assert repo.list_names() == []


# -- an import and the store's protected labels (issue 42, item 1) --------------------------------


def _protected_export(repo: SqlAgentRepository, folder: Path) -> dict[str, object]:
    """``lead_qualifier`` with ``production`` on version 2 behind a gate version 3 fails (it has
    no runs), exported with its versions; the versions document, to be crafted."""
    _store_with_versions(repo)
    repo.set_label("lead_qualifier", "production", 2, force=True, note="back to 2")
    repo.protect_label("lead_qualifier", "production", min_runs=50, min_success_rate=0.95)
    export_json(repo, folder, versions=True)
    document: dict[str, object] = json.loads((folder / "lead_qualifier_versions.json").read_text())
    return document


def _write(folder: Path, document: dict[str, object]) -> None:
    (folder / "lead_qualifier_versions.json").write_text(json.dumps(document))


def _entry(**fields: object) -> dict[str, object]:
    return {
        "label": "production", "from_version": 2, "to_version": 3,
        "moved_at": "2026-01-01T00:00:00+00:00", "note": None, **fields,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("forged", "reason"),
    [
        (_entry(forced="true", checks=[]), "forced: Input should be a valid boolean"),
        (_entry(rollback=1), "rollback: Input should be a valid boolean"),
        (_entry(to_version="3"), "to_version: Input should be a valid integer"),
        (
            _entry(checks=[{"version": 3, "runs": -5, "successes": 0, "mean_duration": None}]),
            "greater than or equal to 0",
        ),
        (
            _entry(checks=[{"version": 3, "runs": 5, "successes": 500, "mean_duration": None}]),
            "version 3 has 500 successes in 5 runs",
        ),
        (_entry(to_version=9), "names version 9, newer than the agent's 3"),
        (_entry(from_version=0), "from_version: Input should be greater than or equal to 1"),
        (_entry(forced=True), "a forced move of 'production' must have its gate's checks"),
        (
            _entry(checks=[{"version": 2, "runs": 60, "successes": 60, "mean_duration": 1.0}]),
            "a check of version 2, which it sent no share to",
        ),
        ("a move", "label_history: each entry must be an object"),
    ],
)
def test_every_field_of_an_imported_log_entry_is_checked(
    repo: SqlAgentRepository, tmp_path: Path, forged: object, reason: str
) -> None:
    document = _protected_export(repo, tmp_path)
    log = repo.label_history("lead_qualifier")
    document["label_history"] = [forged, *document["label_history"]]  # type: ignore[misc]
    _write(tmp_path, document)
    report = import_json(repo, tmp_path, on_conflict="replace")
    assert report.aborted and reason in report.invalid["lead_qualifier_versions.json"]
    assert repo.label_history("lead_qualifier") == log


def test_a_replacing_import_keeps_protected_labels_and_gates_unless_forced(
    repo: SqlAgentRepository, store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _protected_export(repo, tmp_path)
    gates, log = repo.label_gates("lead_qualifier"), repo.label_history("lead_qualifier")
    # The probe's file: production on version 3 (0 runs), its gate gone, a forged forced move.
    forged = {**document, "labels": {"production": 3, "staging": 3}}
    del forged["gates"]
    passed = [{"version": 3, "runs": 600, "successes": 590, "mean_duration": 1.0}]
    forged["label_history"] = [_entry(forced=True, checks=passed), *document["label_history"]]  # type: ignore[misc]
    moved = {**document, "labels": {"production": 3, "staging": 3}}
    dropped = {key: value for key, value in document.items() if key != "gates"}
    looser = {**document, "gates": {"production": {"min_runs": 5, "min_success_rate": 0.95}}}
    for crafted, what in (
        (forged, "drop its gate"),
        (moved, "move it from version 2 to version 3"),
        (dropped, "drop its gate"),
        (looser, "loosen its gate to at least 5 runs"),
    ):
        _write(tmp_path, crafted)
        for dry_run in (True, False):
            with pytest.raises(ProtectedImportError) as refused:
                import_json(repo, tmp_path, on_conflict="replace", dry_run=dry_run)
            assert (refused.value.label, refused.value.gate) == ("production", gates["production"])
            assert what in str(refused.value) and "at least 50 runs" in str(refused.value)
        assert repo.labels("lead_qualifier") == {"production": 2, "staging": 3}
        assert repo.label_gates("lead_qualifier") == gates
        assert repo.label_history("lead_qualifier") == log
    stricter = {**document, "gates": {"production": {"min_runs": 80, "min_success_rate": 0.99}}}
    _write(tmp_path, stricter)  # a stricter gate, the label where it is: no force needed
    assert "lead_qualifier" in import_json(repo, tmp_path, on_conflict="replace").replaced
    assert repo.label_gates("lead_qualifier")["production"].min_runs == 80
    assert all(m.imported for m in repo.label_history("lead_qualifier"))

    _write(tmp_path, forged)
    for blank in (None, "   "):
        with pytest.raises(InvalidInputError, match="a forced move must say why"):
            import_json(repo, tmp_path, on_conflict="replace", force=True, note=blank)
    assert main(["import", str(tmp_path), "--url", store_url, "--on-conflict", "replace"]) == 1
    assert "label 'production' is protected" in capsys.readouterr().err
    assert repo.labels("lead_qualifier") == {"production": 2, "staging": 3}
    argv = ["import", str(tmp_path), "--url", store_url, "--on-conflict", "replace", "--force"]
    assert main([*argv, "--note", "restore the backup of 1 December"]) == 0
    assert repo.labels("lead_qualifier") == {"production": 3, "staging": 3}
    assert repo.label_gates("lead_qualifier") == {}
    newest, imported, *older = repo.label_history("lead_qualifier")
    assert (newest.from_version, newest.to_version) == (2, 3)
    assert newest.forced and not newest.imported
    assert newest.note == "restore the backup of 1 December"
    assert newest.checks is not None and newest.checks[0].runs == 0
    assert not newest.checks[0].passed
    assert imported.imported and imported.forced and imported.checks is not None
    assert (imported.checks[0].runs, imported.checks[0].successes) == (600, 590)
    assert all(m.imported for m in older)
