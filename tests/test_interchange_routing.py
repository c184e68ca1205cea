"""Splits, gates and the label log's routing fields in ``{name}_versions.json``: written only
when not their default (a store that never split, protected or forced a label writes the bytes
it always wrote), read present or absent, checked on import, and a byte-identical round trip on
each engine, from Python and through ``acti-store export`` / ``import``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import make_config

from acti_store import (
    Agent,
    AgentMetadata,
    ExecutionRecord,
    SqlAgentRepository,
    export_json,
    import_json,
)
from acti_store.documents import DocumentError, dumps
from acti_store.errors import GateRefusedError
from acti_store.interchange.versions_file import parse_versions, versions_document
from acti_store.versioning import AgentVersion, GateCheck, LabelGate, LabelMove, VersionLog

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
FILE = "lead_qualifier_versions.json"
NEW_KEYS = ("from_weights", "to_weights", "rollback", "forced", "checks")


# --------------------------------------------------------------------------------------------------
# The document alone
# --------------------------------------------------------------------------------------------------


def _agent(version: int = 4) -> Agent:
    config = make_config(description=f"Qualifies leads, version {version}")
    meta = AgentMetadata(created_at=T0, updated_at=T0 + timedelta(hours=version), version=version)
    return Agent(**config.model_dump(), metadata=meta)


def _log(agent: Agent, **routing: Any) -> VersionLog:
    versions = [
        AgentVersion(
            name=agent.name,
            version=n,
            config=make_config(description=f"Qualifies leads, version {n}"),
            created_at=T0 + timedelta(hours=n),
            message=f"v{n}",
        )
        for n in range(agent.metadata.version, 0, -1)
    ]
    return VersionLog(versions=versions, **routing)


CHECK = GateCheck(version=4, runs=3, successes=2, mean_duration=1.25, failures=["3 runs"])
ROUTED: dict[str, Any] = {
    "labels": {"production": 3, "staging": 4},
    "splits": {"production": {3: 90, 4: 10}},
    "gates": {"production": LabelGate(min_runs=50, min_success_rate=0.95)},
    "label_history": [
        LabelMove(
            label="production",
            from_version=3,
            to_version=3,
            moved_at=T0 + timedelta(days=2),
            note="canary",
            from_weights=None,
            to_weights={3: 90, 4: 10},
            forced=True,
            checks=[CHECK],
        ),
        LabelMove(
            label="production",
            from_version=4,
            to_version=3,
            moved_at=T0 + timedelta(days=1),
            rollback=True,
            checks=[],
        ),
        LabelMove(label="staging", from_version=None, to_version=4, moved_at=T0),
    ],
}


def test_a_store_without_routing_writes_exactly_the_old_keys() -> None:
    agent = _agent()
    move = LabelMove(label="production", from_version=None, to_version=3, moved_at=T0, note="ok")
    document = versions_document(agent, _log(agent, labels={"production": 3}, label_history=[move]))
    assert list(document) == [
        "agent_name", "current_version", "versions", "labels", "label_history",
    ]  # fmt: skip
    assert list(document["label_history"][0]) == [
        "label", "from_version", "to_version", "moved_at", "note",
    ]  # fmt: skip


def test_routing_is_written_where_it_is_not_the_default() -> None:
    agent = _agent()
    document = json.loads(dumps(versions_document(agent, _log(agent, **ROUTED))))
    assert list(document) == [
        "agent_name", "current_version", "versions", "labels", "splits", "gates", "label_history",
    ]  # fmt: skip
    assert document["labels"] == {"production": 3, "staging": 4}
    assert document["splits"] == {"production": {"3": 90, "4": 10}}
    assert document["gates"] == {
        "production": {"min_runs": 50, "min_success_rate": 0.95, "max_mean_duration": None}
    }
    split, rollback, plain = document["label_history"]
    assert split["to_weights"] == {"3": 90, "4": 10} and split["forced"] is True
    assert split["checks"] == [
        {"version": 4, "runs": 3, "successes": 2, "mean_duration": 1.25, "failures": ["3 runs"]}
    ]
    assert [k for k in split if k in NEW_KEYS] == ["to_weights", "forced", "checks"]
    assert [k for k in rollback if k in NEW_KEYS] == ["rollback", "checks"]
    assert rollback["checks"] == []  # a gate that checked nothing is still a gate
    assert [k for k in plain if k in NEW_KEYS] == []


def test_the_document_reads_back_as_the_same_log() -> None:
    agent = _agent()
    log = _log(agent, **ROUTED)
    text = dumps(versions_document(agent, log))
    parsed = parse_versions(FILE, json.loads(text), agent)
    assert parsed.splits == {"production": {3: 90, 4: 10}}
    assert parsed.gates == ROUTED["gates"]
    # Read back, each entry is marked imported (history a file brought, not a move made here).
    assert all(move.imported for move in parsed.label_history)
    assert [m.model_copy(update={"imported": False}) for m in parsed.label_history] == ROUTED[
        "label_history"
    ]
    assert dumps(versions_document(agent, parsed)) == text


def test_a_split_on_a_version_newer_than_the_agent_is_left_out_with_its_label() -> None:
    agent = _agent(3)  # the log is newer: version 4 is not the agent file's
    log = _log(_agent(4), **ROUTED)
    document = versions_document(agent, log)
    assert "splits" not in document
    assert document["labels"] == {}
    assert "gates" in document  # a gate needs no version


def _routed_document() -> tuple[Agent, dict[str, Any]]:
    agent = _agent()
    return agent, json.loads(dumps(versions_document(agent, _log(agent, **ROUTED))))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["splits"]["production"].update({"4": 5}),
            "splits.production: the weights sum to 95; splits.production must split over 2 to "
            '10 versions, each with a whole percent from 1 to 100, summing to 100 (e.g. {"3": '
            '90, "4": 10})',
        ),
        (
            lambda d: d["splits"].update({"production": {"3": 90, "9": 10}}),
            "split 'production': version 9 is not a listed version",
        ),
        (
            lambda d: d["splits"].update({"production": {"3": 10, "4": 90}}),
            "label 'production' must be on its split's main version 4 (the largest share, the "
            "older version on a tie), not 3",
        ),
        (
            lambda d: d["splits"].update({"canary": {"3": 50, "4": 50}}),
            "split 'canary' must be a label in labels",
        ),
        (
            lambda d: d["splits"].update({"production": {"3": 100}}),
            "splits.production must split over 2 to 10 versions",
        ),
        (
            lambda d: d["splits"]["production"].update({"4": True}),
            "splits.production: version 4 has True;",
        ),
        (
            lambda d: d["splits"]["production"].update({"04": 10}),
            "splits.production: '04' is not a version number;",
        ),
        (lambda d: d.update({"splits": [3, 4]}), "splits must be an object"),
        (
            lambda d: d["gates"]["production"].update({"min_success_rate": 1.5}),
            "gates.production: min_success_rate: Input should be less than or equal to 1",
        ),
        (
            lambda d: d["gates"]["production"].update({"max_mean_duration": 0}),
            "gates.production: max_mean_duration: Input should be greater than 0",
        ),
        (
            lambda d: d["gates"]["production"].update({"min_runs": True}),
            "gates.production: min_runs: Input should be a valid integer",
        ),
        (
            lambda d: d["gates"]["production"].update({"min_success_rate": "0.95"}),
            "gates.production: min_success_rate: Input should be a valid number",
        ),
        (lambda d: d.update({"gates": []}), "gates must be an object"),
        (
            lambda d: d["gates"].update({"Prod": {}}),
            "gate 'Prod' must be on a valid label",
        ),
        (
            lambda d: d["label_history"][0].update({"to_weights": {"3": 60, "4": 60}}),
            "label_history: to_weights: the weights sum to 120;",
        ),
        (
            lambda d: d["label_history"][0].update({"to_version": 4}),
            "label_history: a move of 'production' has to_weights with main version 3, but "
            "to_version 4",
        ),
        (
            lambda d: d.update({"canaries": {}}),
            "not a versions document: its keys must be agent_name, current_version, versions, "
            "labels, label_history (and splits and gates when it has some)",
        ),
    ],
)
def test_bad_routing_in_a_file_is_refused(change: Any, message: str) -> None:
    agent, document = _routed_document()
    change(document)
    with pytest.raises(DocumentError) as caught:
        parse_versions(FILE, document, agent)
    assert str(caught.value).startswith(message), str(caught.value)


def test_an_old_file_and_explicit_defaults_read_as_no_routing() -> None:
    agent, document = _routed_document()
    old = {k: v for k, v in document.items() if k not in ("splits", "gates")}
    old["labels"] = {"staging": 4}
    old["label_history"] = [
        {k: v for k, v in m.items() if k not in NEW_KEYS} for m in document["label_history"]
    ]
    log = parse_versions(FILE, old, agent)
    assert (log.splits, log.gates) == ({}, {})
    assert all(not m.rollback and not m.forced and m.checks is None for m in log.label_history)
    assert dumps(versions_document(agent, log)) == dumps(old)
    explicit = {**old, "splits": {}, "gates": {}}
    explicit["label_history"] = [
        {**m, "from_weights": None, "to_weights": None, "rollback": False, "forced": False}
        for m in old["label_history"]
    ]
    assert parse_versions(FILE, explicit, agent) == log


# --------------------------------------------------------------------------------------------------
# Through a store
# --------------------------------------------------------------------------------------------------


def _run(repo: SqlAgentRepository, version: int, success: bool = True) -> None:
    record = ExecutionRecord(
        timestamp=repo.now(), task="t", result_summary="r", success=success, duration_seconds=2.0
    )
    repo.record_execution("lead_qualifier", record, version=version)


def _routed_store(repo: SqlAgentRepository) -> None:
    """Versions 1 to 4; ``production`` protected, split 90/10 by force, moved and rolled back;
    ``staging`` set then rolled back away; a gate on a label not set yet."""
    repo.create(make_config(), message="first cut")
    for n in (2, 3, 4):
        repo.update("lead_qualifier", {"description": f"Qualifies leads, take {n}"})
    for _ in range(3):
        _run(repo, 3)
    _run(repo, 4, success=False)
    repo.protect_label("lead_qualifier", "production", min_runs=3, min_success_rate=0.9)
    repo.protect_label("lead_qualifier", "canary", max_mean_duration=30.0)
    repo.set_label("lead_qualifier", "production", 3, note="first release")
    with pytest.raises(GateRefusedError):
        repo.set_label("lead_qualifier", "production", {3: 90, 4: 10})
    repo.set_label("lead_qualifier", "production", {3: 90, 4: 10}, force=True, note="canary")
    repo.set_label("lead_qualifier", "staging", 4)
    repo.set_label("lead_qualifier", "production", {3: 50, 4: 50}, force=True, note="half")
    # Back to 90/10: the gate still refuses version 4.
    repo.rollback_label("lead_qualifier", "production", force=True, note="half was too much")
    repo.rollback_label("lead_qualifier", "staging")  # undoes its first set: removed
    repo.create(make_config("web_researcher", tools=["websearch"]))


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_routed_store_round_trips_byte_identical(repo: SqlAgentRepository, tmp_path) -> None:
    _routed_store(repo)
    weights, gates = repo.label_weights("lead_qualifier"), repo.label_gates("lead_qualifier")
    history = repo.label_history("lead_qualifier")
    assert weights == {"production": {3: 90, 4: 10}}
    assert [(m.rollback, m.forced) for m in history[:3]] == [
        (True, False), (True, True), (False, True),
    ]  # fmt: skip
    export_json(repo, tmp_path / "first", versions=True)
    document = json.loads((tmp_path / "first" / FILE).read_bytes())
    assert document["splits"] == {"production": {"3": 90, "4": 10}}
    assert document["labels"] == {"production": 3}
    assert set(document["gates"]) == {"canary", "production"}
    plain = json.loads((tmp_path / "first" / "web_researcher_versions.json").read_bytes())
    assert list(plain) == [
        "agent_name", "current_version", "versions", "labels", "label_history",
    ]  # fmt: skip
    for name in repo.list_names():
        repo.delete(name)
    report = import_json(repo, tmp_path / "first")
    assert report.ok and sorted(report.imported) == ["lead_qualifier", "web_researcher"]
    assert repo.label_weights("lead_qualifier") == weights
    assert repo.labels("lead_qualifier") == {"production": 3}
    assert repo.label_gates("lead_qualifier") == gates
    imported = repo.label_history("lead_qualifier")
    assert all(move.imported for move in imported)
    assert [m.model_copy(update={"imported": False}) for m in imported] == history
    export_json(repo, tmp_path / "second", versions=True)
    assert _files(tmp_path / "second") == _files(tmp_path / "first")
    # What was imported rolls back like what was made here (the runs' counts are not in files).
    back = repo.rollback_label("lead_qualifier", "production", force=True, note="undo 90/10")
    assert back == {3: 100}


def test_an_old_versions_file_still_imports(repo: SqlAgentRepository, tmp_path) -> None:
    """A file written before labels could route (its five keys, five keys a move)."""
    repo.create(make_config())
    repo.update("lead_qualifier", {"description": "Qualifies leads, second try"})
    export_json(repo, tmp_path)  # the agent file, without versions
    agent = repo.get("lead_qualifier")
    old = {
        "agent_name": "lead_qualifier",
        "current_version": 2,
        "versions": [
            {
                "version": n,
                "created_at": f"2026-10-0{n}T08:00:00.000000+00:00",
                "message": None,
                "config": json.loads((tmp_path / "lead_qualifier.json").read_bytes())
                | ({} if n == 2 else {"description": "An older description"}),
            }
            for n in (2, 1)
        ],
        "labels": {"production": 2},
        "label_history": [
            {
                "label": "production",
                "from_version": 1,
                "to_version": 2,
                "moved_at": "2026-10-03T08:00:00.000000+00:00",
                "note": "approved",
            },
            {
                "label": "production",
                "from_version": None,
                "to_version": 1,
                "moved_at": "2026-10-02T08:00:00.000000+00:00",
                "note": None,
            },
        ],
    }
    for version in old["versions"]:
        version["config"] = {k: version["config"][k] for k in _CONFIG_KEYS}
    (tmp_path / FILE).write_text(dumps(old), encoding="utf-8")
    repo.delete("lead_qualifier")
    report = import_json(repo, tmp_path)
    assert report.ok, report.invalid
    assert repo.get("lead_qualifier").config == agent.config
    assert repo.label_weights("lead_qualifier") == {"production": {2: 100}}
    assert repo.label_gates("lead_qualifier") == {}
    moves = repo.label_history("lead_qualifier")
    assert [(m.before, m.after, m.rollback, m.forced, m.checks) for m in moves] == [
        ({1: 100}, {2: 100}, False, False, None),
        (None, {1: 100}, False, False, None),
    ]
    export_json(repo, tmp_path / "again", versions=True)
    assert (tmp_path / "again" / FILE).read_text(encoding="utf-8") == dumps(old)
    assert repo.rollback_label("lead_qualifier", "production") == {1: 100}


_CONFIG_KEYS = ("name", "description", "system_prompt", "tools", "model", "stratum", "tags")


def test_a_bad_split_in_a_file_imports_nothing(repo: SqlAgentRepository, tmp_path) -> None:
    _routed_store(repo)
    export_json(repo, tmp_path, versions=True)
    path = tmp_path / FILE
    document = json.loads(path.read_bytes())
    document["splits"]["production"] = {"3": 90, "4": 20}
    path.write_text(dumps(document), encoding="utf-8")
    for name in repo.list_names():
        repo.delete(name)
    report = import_json(repo, tmp_path, all_or_nothing=False)
    assert report.invalid[FILE].startswith("splits.production: the weights sum to 110; ")
    assert report.invalid["lead_qualifier.json"] == (
        f"not imported: its versions file {FILE} is invalid"
    )
    assert repo.list_names() == ["web_researcher"]


def _cli(*argv: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTI_STORE_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return subprocess.run(
        [sys.executable, "-m", "acti_store", *argv, "--url", url],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_cli_round_trip_keeps_the_routing(
    repo: SqlAgentRepository, store_url: str, tmp_path: Path
) -> None:
    """``acti-store export --versions`` then ``import`` into the emptied store, in processes of
    their own, then export again: the same bytes."""
    _routed_store(repo)
    first, second = tmp_path / "first", tmp_path / "second"
    done = _cli("export", str(first), "--versions", url=store_url)
    assert done.returncode == 0, done.stderr
    assert b'"splits"' in _files(first)[FILE]
    for name in repo.list_names():
        repo.delete(name)
    done = _cli("import", str(first), url=store_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.label_weights("lead_qualifier") == {"production": {3: 90, 4: 10}}
    assert [m.forced for m in repo.label_history("lead_qualifier")][:3] == [False, True, True]
    done = _cli("export", str(second), "--versions", url=store_url)
    assert done.returncode == 0, done.stderr
    assert _files(second) == _files(first)
