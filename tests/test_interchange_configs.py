"""A folder of configurations written by hand (no ``_metadata``) imports (issue 49, item 6).

Each file becomes a new agent at version 1 with the store's metadata (created now, no runs); an
agent of that name already in the store follows the import's ``on_conflict`` policy. Run through
``import_json`` on each engine and through ``acti-store import DIR`` in a real process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FakeClock, make_config
from test_cli_errors_commands import acti_store

from acti_store import AgentConfig, AgentExistsError, import_json, open_repository
from acti_store.interchange import rewrite_documents
from acti_store.repository import SqlAgentRepository

#: Two configurations as a person writes them: the configuration's fields, nothing else.
BY_HAND = {
    "lead_qualifier": {
        "name": "lead_qualifier",
        "description": "Qualifies inbound leads by assessing BANT criteria",
        "system_prompt": "You are a professional lead qualification specialist. "
        "Assess budget, authority, need and timeline for every lead.",
        "tools": ["communication", "crm"],
    },
    "research_assistant": {
        "name": "research_assistant",
        "description": "Researches a topic and summarises what it finds",
        "system_prompt": "You are a careful research assistant. Search, read and summarise "
        "the sources you find, citing each one.",
        "tools": ["websearch"],
        "stratum": "RAI",
        "tags": ["research"],
    },
}


def write_folder(folder: Path, documents: dict[str, dict[str, object]]) -> Path:
    folder.mkdir()
    for name, document in documents.items():
        (folder / f"{name}.json").write_text(json.dumps(document, indent=2))
    return folder


@pytest.fixture
def by_hand(tmp_path: Path) -> Path:
    return write_folder(tmp_path / "configs", BY_HAND)


def test_configs_written_by_hand_import_as_new_agents_at_version_1(
    repo: SqlAgentRepository, clock: FakeClock, by_hand: Path
) -> None:
    started = clock.current
    report = import_json(repo, by_hand)
    assert report.ok and not report.aborted
    assert report.imported == ["lead_qualifier", "research_assistant"]
    assert report.configs == ["lead_qualifier", "research_assistant"]
    assert report.upgraded == []
    assert report.counts == {
        "imported": 2,
        "replaced": 0,
        "skipped": 0,
        "upgraded": 0,
        "configs": 2,
    }
    agent = repo.get("research_assistant")
    assert agent.config == AgentConfig.model_validate(BY_HAND["research_assistant"])
    meta = agent.metadata
    assert meta.version == 1 and meta.created_at == meta.updated_at
    assert meta.created_at >= started  # the store's time, not a time the file made up
    assert (meta.execution_count, meta.success_count, meta.error_count) == (0, 0, 0)
    assert meta.last_executed_at is None
    assert [v.version for v in repo.versions("lead_qualifier")] == [1]

    # Importing the same folder again changes nothing: every agent is there already.
    again = import_json(repo, by_hand)
    assert again.skipped == ["lead_qualifier", "research_assistant"] and again.imported == []
    assert repo.get("research_assistant").metadata == meta


def test_an_agent_already_in_the_store_follows_on_conflict(
    repo: SqlAgentRepository, by_hand: Path
) -> None:
    repo.create(make_config("lead_qualifier", description="The store's own lead qualifier"))
    repo.update("lead_qualifier", {"model": "openai:gpt-4o"})
    assert repo.get("lead_qualifier").metadata.version == 2

    skipped = import_json(repo, by_hand)  # skip, the default: the store's agent is kept
    assert skipped.skipped == ["lead_qualifier"] and skipped.imported == ["research_assistant"]
    assert repo.get("lead_qualifier").description == "The store's own lead qualifier"

    with pytest.raises(AgentExistsError):
        import_json(repo, by_hand, on_conflict="fail")
    assert repo.get("lead_qualifier").metadata.version == 2

    replaced = import_json(repo, by_hand, on_conflict="replace")
    assert sorted(replaced.replaced) == ["lead_qualifier", "research_assistant"]
    agent = repo.get("lead_qualifier")
    assert agent.description == BY_HAND["lead_qualifier"]["description"]
    assert agent.metadata.version == 1  # the file's agent, new: at version 1


def test_a_dry_run_reports_configs_and_writes_nothing(
    repo: SqlAgentRepository, by_hand: Path
) -> None:
    report = import_json(repo, by_hand, dry_run=True)
    assert report.imported == ["lead_qualifier", "research_assistant"]
    assert report.counts["configs"] == 2
    assert repo.list_names() == []


def test_a_config_still_gets_every_field_checked(repo: SqlAgentRepository, tmp_path: Path) -> None:
    bad = dict(BY_HAND["lead_qualifier"], description="short", version=3)
    folder = write_folder(tmp_path / "bad", {"lead_qualifier": bad})
    report = import_json(repo, folder)
    assert report.aborted and repo.list_names() == []
    reason = report.invalid["lead_qualifier.json"]
    assert "description:" in reason and "version: Extra inputs are not permitted" in reason
    assert "_metadata" not in reason


def test_a_null_metadata_block_is_still_refused(repo: SqlAgentRepository, tmp_path: Path) -> None:
    document = dict(BY_HAND["lead_qualifier"], _metadata=None)
    folder = write_folder(tmp_path / "null", {"lead_qualifier": document})
    report = import_json(repo, folder)
    assert report.invalid == {"lead_qualifier.json": "_metadata: Field required"}


def test_rewrite_leaves_configs_written_by_hand_as_they_are(by_hand: Path) -> None:
    before = {p.name: p.read_bytes() for p in by_hand.iterdir()}
    assert rewrite_documents(by_hand).rewritten == []
    assert {p.name: p.read_bytes() for p in by_hand.iterdir()} == before


@pytest.mark.slow
def test_acti_store_import_takes_a_folder_written_by_hand(by_hand: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    done = acti_store(["import", str(by_hand), "--url", url])
    assert done.status == 0, done.stderr
    assert done.stderr == ""
    assert "2 agent(s) imported" in done.stdout and "0 invalid file(s)" in done.stdout
    assert (
        "Written by hand (no _metadata): 2 agent(s), given the store's metadata (version 1) "
        "where imported." in done.stdout
    )
    assert "--partial" not in done.stdout
    with open_repository(url) as repo:
        assert repo.list_names() == ["lead_qualifier", "research_assistant"]
        assert repo.get("lead_qualifier").metadata.version == 1

    again = acti_store(["import", str(by_hand), "--url", url, "--on-conflict", "fail"])
    assert again.status == 1 and again.stderr.startswith("error: ")
    assert len(again.stderr.splitlines()) == 1 and "Traceback" not in again.stderr
