"""``{name}_versions.json`` on both engines: written by ``export_json(versions=True)`` beside
files that stay byte for byte what they were, read back by ``import_json``, a byte-identical
round trip, and "file names decide" for an agent called ``x_versions``."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import make_config

from acti_store import ExecutionRecord, SqlAgentRepository, export_json, import_json


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
