"""Tenants (issue 28): one store, many customers; a tenant store sees and touches only its rows.

Each test runs on every engine: the default tenant's store (``repo``) and a tenant's store opened
on the same URL hold agents of the same names, and every operation of one leaves the other as
it was.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FakeClock, make_config
from langchain_core.messages import AIMessage

from acti_store import (
    AgentNotFoundError,
    ExecutionRecord,
    InvalidInputError,
    SearchQuery,
    SqlAgentRepository,
    export_json,
    import_json,
    open_repository,
)
from acti_store.execution import AgentRunner
from acti_store.testing import ScriptedChatModel
from acti_store.tools import make_builder_tools

NAME = "lead_qualifier"


@pytest.fixture
def acme(repo: SqlAgentRepository, clock: FakeClock) -> Iterator[SqlAgentRepository]:
    """The tenant ``acme``'s store, on the URL of ``repo`` (the default tenant's)."""
    store = open_repository(repo.engine.url, clock=clock, tenant="acme")
    try:
        yield store
    finally:
        store.close()


def record(repo: SqlAgentRepository, task: str, success: bool = True) -> None:
    repo.record_execution(
        NAME,
        ExecutionRecord(
            timestamp=repo.now(),
            task=task,
            result_summary="done",
            success=success,
            duration_seconds=1.5,
            tool_calls_count=0,
        ),
    )


def both(repo: SqlAgentRepository, acme: SqlAgentRepository) -> None:
    """The same names in both tenants, each with a description of its own."""
    for store, who in ((repo, "default"), (acme, "acme")):
        store.create(make_config(NAME, description=f"Qualifies leads of {who} customers"))
        store.create(make_config("support_bot", description=f"Answers {who} tickets", tags=[who]))


def test_names_are_unique_per_tenant_and_every_read_sees_one_tenant(
    repo: SqlAgentRepository, acme: SqlAgentRepository
) -> None:
    both(repo, acme)

    assert repo.tenant == "default" and acme.tenant == "acme"
    assert acme.get(NAME).description == "Qualifies leads of acme customers"
    assert repo.get(NAME).description == "Qualifies leads of default customers"
    for store, who, other in ((repo, "default", "acme"), (acme, "acme", "default")):
        listed = store.list_agents()
        assert [a.name for a in listed] == ["lead_qualifier", "support_bot"]
        assert all(other not in a.description for a in listed)
        assert store.count(SearchQuery()) == 2
        assert [a.name for a in store.search(SearchQuery(query=who))] == [
            "lead_qualifier",
            "support_bot",
        ]
        assert store.search(SearchQuery(query=other)) == []
        assert store.search(SearchQuery(tags=[other])) == []
        assert [a.name for a in store.search(SearchQuery(tags=[who]))] == ["support_bot"]
        assert store.count_by_stratum()["RAI"] == 2
        page = store.search_page(SearchQuery(limit=1))
        assert page.total == 2 and [a.name for a in page.agents] == ["lead_qualifier"]
    assert repo.tenants() == {"acme": 2, "default": 2}


def test_writes_of_one_tenant_leave_the_other_as_it_was(
    repo: SqlAgentRepository, acme: SqlAgentRepository
) -> None:
    both(repo, acme)

    acme.update(NAME, {"description": "Qualifies acme leads, second version"})
    acme.clone(NAME, "lead_qualifier_eu")
    acme.delete("support_bot")
    record(acme, "acme task", success=False)

    assert repo.get(NAME).metadata.version == 1 and acme.get(NAME).metadata.version == 2
    assert not repo.exists("lead_qualifier_eu") and repo.exists("support_bot")
    assert repo.get_history(NAME).total_executions == 0
    history = acme.get_history(NAME)
    assert [r.task for r in history.executions] == ["acme task"]
    with pytest.raises(AgentNotFoundError):
        repo.get("lead_qualifier_eu")
    # The default tenant may now take the name acme cloned to, and delete its own copy.
    repo.create(make_config("lead_qualifier_eu"))
    repo.delete(NAME)
    assert acme.get(NAME).metadata.version == 2


def test_versions_labels_and_stats_are_per_tenant(
    repo: SqlAgentRepository, acme: SqlAgentRepository
) -> None:
    both(repo, acme)
    acme.update(NAME, {"description": "Qualifies acme leads, second version"})
    acme.set_label(NAME, "production", 2, note="ship it")
    record(acme, "acme task")

    assert [v.version for v in acme.versions(NAME)] == [2, 1]
    assert [v.version for v in repo.versions(NAME)] == [1]
    assert acme.labels(NAME) == {"production": 2} and repo.labels(NAME) == {}
    assert [m.note for m in acme.label_history(NAME)] == ["ship it"]
    assert repo.label_history(NAME) == []
    assert acme.get_version(NAME, label="production").version == 2
    assert list(acme.version_stats(NAME)) == [2] and repo.version_stats(NAME) == {}
    assert acme.diff(NAME, 1, 2).changes and not repo.diff(NAME, 1, 1).changes
    acme.rollback(NAME, 1)
    assert acme.get(NAME).metadata.version == 3 and repo.get(NAME).metadata.version == 1
    # The archive of a deleted agent (its history kept) stays its tenant's.
    acme.delete(NAME, delete_history=False)
    assert repo.get_history(NAME).total_executions == 0
    assert [r.task for r in acme.archived_history(NAME).executions] == ["acme task"]
    assert repo.archived_history(NAME).executions == []


def test_export_and_import_move_one_tenants_agents(
    repo: SqlAgentRepository, acme: SqlAgentRepository, tmp_path: Path, clock: FakeClock
) -> None:
    both(repo, acme)
    record(acme, "acme task")
    export_json(acme, tmp_path / "acme")

    files = sorted(p.name for p in (tmp_path / "acme").iterdir())
    assert files == [
        "lead_qualifier.json",
        "lead_qualifier_history.json",
        "support_bot.json",  # never run: no history file
    ]
    exported = json.loads((tmp_path / "acme" / "lead_qualifier.json").read_text())
    assert exported["description"] == "Qualifies leads of acme customers"
    assert "tenant" not in exported  # the outputs/agents format is unchanged

    globex = open_repository(repo.engine.url, clock=clock, tenant="globex")
    try:
        report = import_json(globex, tmp_path / "acme")
        assert sorted(report.imported) == ["lead_qualifier", "support_bot"]
        assert globex.get(NAME).description == "Qualifies leads of acme customers"
        assert globex.get_history(NAME).total_executions == 1
    finally:
        globex.close()
    assert repo.get(NAME).description == "Qualifies leads of default customers"
    assert repo.get_history(NAME).total_executions == 0
    assert repo.tenants() == {"acme": 2, "default": 2, "globex": 2}


def test_the_json_mirror_and_the_tools_serve_their_tenant(
    repo: SqlAgentRepository, tmp_path: Path, clock: FakeClock
) -> None:
    mirrored = open_repository(
        repo.engine.url, clock=clock, tenant="acme", export_dir=tmp_path / "mirror"
    )
    try:
        repo.create(make_config(NAME, description="Qualifies leads of default customers"))
        mirrored.create(make_config(NAME, description="Qualifies leads of acme customers"))
        # The tenant's own subfolder: a shared ACTI_STORE_EXPORT_DIR never mixes tenants' files.
        on_disk = json.loads((tmp_path / "mirror" / "acme" / "lead_qualifier.json").read_text())
        assert on_disk["description"] == "Qualifies leads of acme customers"
        assert not (tmp_path / "mirror" / "lead_qualifier.json").exists()

        tools = {t.name: t for t in make_builder_tools(mirrored)}
        text = tools["get_agent_config"].invoke({"name": NAME})
        assert "acme customers" in text and "default customers" not in text
        listing = tools["list_created_agents"].invoke({})
        assert "Total: 1 agent(s)" in listing
    finally:
        mirrored.close()


async def test_a_run_is_recorded_in_its_tenant(
    repo: SqlAgentRepository, acme: SqlAgentRepository
) -> None:
    both(repo, acme)
    model = ScriptedChatModel(script=[AIMessage("Lead qualified as HIGH priority")])

    report = await AgentRunner(acme, model=model).run(acme.get(NAME), "Qualify Globex Corp")

    assert report.artifact["success"] is True
    assert [r.task for r in acme.get_history(NAME).executions] == ["Qualify Globex Corp"]
    assert repo.get_history(NAME).total_executions == 0


def test_a_tenant_name_follows_the_agent_name_rule(
    repo: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    for bad in ("Acme", "acme-corp", "", "a" * 65, "1acme"):
        with pytest.raises(InvalidInputError, match="tenant"):
            open_repository(repo.engine.url, tenant=bad)
    monkeypatch.setenv("ACTI_STORE_TENANT", "globex")
    store = open_repository(repo.engine.url)
    try:
        assert store.tenant == "globex"
    finally:
        store.close()
    monkeypatch.setenv("ACTI_STORE_TENANT", "Not A Name")
    with pytest.raises(InvalidInputError, match="ACTI_STORE_TENANT"):
        open_repository(repo.engine.url)


def test_the_cli_takes_a_tenant_and_lists_the_tenants(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "acti_store", "--url", url, *argv],
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert cli("quickstart").returncode == 0
    assert cli("--tenant", "acme", "quickstart").returncode == 0
    agent_file = tmp_path / "acme_only.json"
    agent_file.write_text(
        make_config("acme_only", description="Only in acme here").model_dump_json()
    )
    made = cli("--tenant", "acme", "create", str(agent_file))
    assert made.returncode == 0, made.stderr
    listed = cli("tenants")
    assert listed.returncode == 0
    assert listed.stdout == "acme     4 agents\ndefault  3 agents\n"
    assert json.loads(cli("tenants", "--json").stdout) == {"acme": 4, "default": 3}
    shown = cli("show", "acme_only", "--tenant", "acme")
    assert shown.returncode == 0 and "Only in acme here" in shown.stdout
    missing = cli("show", "acme_only")
    assert missing.returncode == 1 and "not found" in missing.stderr
    refused = cli("--tenant", "acme", "tenants")
    assert refused.returncode == 1
    assert refused.stderr == "error: tenants lists every tenant of the store: give it no --tenant\n"
    bad = cli("--tenant", "ACME", "list")
    assert bad.returncode == 1 and bad.stderr.startswith("error: invalid tenant: tenant: 'ACME'")
    for result in (missing, refused, bad):
        assert "Traceback" not in result.stderr
