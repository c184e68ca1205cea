"""A tenant's lifecycle (issue 49, item 2): registered (strict stores refuse writes for a tenant
nobody registered), limited (``max_agents``, checked inside the write's transaction, also under
concurrent writers) and erased (every row of it in every table, in one transaction).

Each test runs on every engine. Unlike the rest of the suite (conftest: ``ACTI_STORE_TENANTS``
is ``open`` there), these tests run without the variable: a store follows its recorded mode.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FakeClock, make_config
from sqlalchemy import text

from acti_store import (
    ExecutionRecord,
    InvalidInputError,
    SearchQuery,
    SqlAgentRepository,
    TenantExistsError,
    TenantLimitError,
    TenantNotFoundError,
    open_repository,
)
from acti_store.engine import make_engine
from acti_store.repository import tenant_admin
from acti_store.repository.port import ImportItem
from acti_store.revisions import upgrade_schema
from acti_store.tenancy import ENV_TENANTS, TENANT_TABLES

PROMPT_WORD = "zebracorn"


@pytest.fixture(autouse=True)
def _store_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's own mode decides (not the suite's ``ACTI_STORE_TENANTS=open``)."""
    monkeypatch.delenv(ENV_TENANTS, raising=False)


@pytest.fixture
def tenant_store(repo: SqlAgentRepository, clock: FakeClock) -> Iterator[SqlAgentRepository]:
    """Tenant ``acme``'s store, registered, on the URL of ``repo`` (the operator's)."""
    repo.create_tenant("acme")
    store = open_repository(repo.engine.url, clock=clock, tenant="acme")
    try:
        yield store
    finally:
        store.close()


def _rows_of(repo: SqlAgentRepository, tenant: str) -> dict[str, int]:
    """Every tenant table's rows of ``tenant``, read by hand (a superuser on PostgreSQL)."""
    with repo.engine.connect() as conn:
        if repo.engine.dialect.name == "postgresql":
            conn.execute(text("SELECT set_config('acti.tenant', :t, true)"), {"t": tenant})
        return {
            table: conn.execute(
                text(f"SELECT count(*) FROM {table} WHERE tenant = :t"), {"t": tenant}
            ).scalar_one()
            for table in sorted(TENANT_TABLES)
        }


def _fill(store: SqlAgentRepository) -> None:
    """An agent with a history, two versions, a label, a tag, a feed and a checkpoint."""
    store.create(make_config(description=f"Qualifies leads, {PROMPT_WORD} edition"))
    store.update_returning_previous("lead_qualifier", {"tools": ["crm"]})
    store.set_label("lead_qualifier", "prod", 1)
    store.record_execution(
        "lead_qualifier",
        ExecutionRecord(
            timestamp=store.now(),
            task="qualify",
            result_summary="done",
            success=True,
            duration_seconds=1.0,
            tool_calls_count=0,
        ),
    )
    store.save_checkpoint("relay", store.last_change())


def test_a_new_store_is_strict_and_refuses_writes_for_an_unregistered_tenant(
    repo: SqlAgentRepository, clock: FakeClock
) -> None:
    assert repo.tenant_mode() == "strict"
    with open_repository(repo.engine.url, clock=clock, tenant="acmee") as typo:
        with pytest.raises(TenantNotFoundError, match="tenants create acmee"):
            typo.create(make_config())
        item = ImportItem(name="lead_qualifier", agent=typo_agent(repo))
        with pytest.raises(TenantNotFoundError):
            typo.bulk_put([item])
        with pytest.raises(TenantNotFoundError):
            typo.save_checkpoint("relay", 0)
    assert "acmee" not in repo.tenants()
    assert sum(_rows_of(repo, "acmee").values()) == 0
    repo.create_tenant("acme")
    with open_repository(repo.engine.url, clock=clock, tenant="acme") as acme:
        acme.create(make_config())
        assert acme.list_names() == ["lead_qualifier"]
    assert repo.tenants() == {"acme": 1, "default": 1}  # to_import
    with pytest.raises(TenantExistsError):
        repo.create_tenant("acme")
    with pytest.raises(TenantExistsError):
        repo.create_tenant("default")
    repo.create(make_config())  # the default tenant is always registered


def typo_agent(repo: SqlAgentRepository):  # type: ignore[no-untyped-def]
    """An agent of the default tenant, to import into another."""
    repo.create(make_config(name="to_import"))
    agent = repo.get("to_import")
    return agent.model_copy(update={"name": "lead_qualifier"})


def test_the_open_mode_is_a_choice_of_the_store_or_the_process(
    repo: SqlAgentRepository, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = repo.engine.url
    with open_repository(url, clock=clock, tenant="one", create_tenant=True) as one:
        one.create(make_config())
    monkeypatch.setenv(ENV_TENANTS, "open")
    with open_repository(url, clock=clock, tenant="two") as two:
        two.create(make_config())
    monkeypatch.setenv(ENV_TENANTS, "strict")
    repo.set_tenant_mode("open")
    with (
        open_repository(url, clock=clock, tenant="three") as three,
        pytest.raises(TenantNotFoundError),
    ):
        three.create(make_config())
    monkeypatch.delenv(ENV_TENANTS)
    with open_repository(url, clock=clock, tenant="four") as four:  # the store's mode now
        four.create(make_config())
    assert repo.tenant_mode() == "open"
    assert set(repo.tenants()) == {"default", "one", "two", "four"}
    monkeypatch.setenv(ENV_TENANTS, "lenient")
    with pytest.raises(InvalidInputError, match=ENV_TENANTS):
        open_repository(url, tenant="five")
    with pytest.raises(InvalidInputError):
        repo.set_tenant_mode("lenient")


def test_a_store_that_holds_data_keeps_the_open_mode_through_the_migration(
    store_url: str, clock: FakeClock
) -> None:
    """0014 records ``open`` on a store that holds data (here the default tenant's one agent,
    which PostgreSQL's row-level security hides from a session without its tenant), and
    ``strict`` on an empty one: each store taken back to 0013 and up again."""
    engine = make_engine(store_url)
    try:
        upgrade_schema(engine)
        upgrade_schema(engine, "0013_imported_moves")
        upgrade_schema(engine)
        with open_repository(store_url, clock=clock) as store:
            assert store.tenant_mode() == "strict"  # empty
            store.create(make_config())
        upgrade_schema(engine, "0013_imported_moves")
        upgrade_schema(engine)
    finally:
        engine.dispose()
    with open_repository(store_url, clock=clock) as store:
        assert store.tenant_mode() == "open"
    with open_repository(store_url, clock=clock, tenant="acme") as acme:
        acme.create(make_config())  # registered by writing, as before
        assert "acme" in acme.tenants()


def test_delete_tenant_erases_every_row_of_it_in_one_transaction(
    repo: SqlAgentRepository, tenant_store: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(tenant_store)
    _fill(repo)
    before = _rows_of(repo, "acme")
    default_before = _rows_of(repo, "default")
    assert all(before[t] for t in ("agents", "agent_changes", "agent_change_checkpoints"))
    previewed = repo.tenant_rows("acme")
    with repo.engine.connect() as conn:
        if repo.engine.dialect.name == "postgresql":
            conn.execute(text("SELECT set_config('acti.tenant', 'acme', true)"))
        acme_ids = {*conn.execute(text("SELECT id FROM agents WHERE tenant = 'acme'")).scalars()}

    failing = tenant_admin.Prepared(text("SELECT no_such_column FROM agent_tenants"))
    monkeypatch.setattr(tenant_admin, "_UNREGISTER", failing)
    with pytest.raises(Exception):  # noqa: B017 - the store translates it: any failure
        repo.delete_tenant("acme")
    assert _rows_of(repo, "acme") == before  # nothing erased: one transaction
    monkeypatch.undo()
    monkeypatch.delenv(ENV_TENANTS, raising=False)

    erased = repo.delete_tenant("acme")
    assert erased == previewed
    assert {t: n for t, n in erased.items() if t != "agent_tenants"} == before
    assert erased["agent_tenants"] == 1
    assert sum(_rows_of(repo, "acme").values()) == 0
    assert _rows_of(repo, "default") == default_before
    assert "acme" not in repo.tenants()
    assert [a.name for a in repo.list_agents()] == ["lead_qualifier"]
    if repo.engine.dialect.name == "sqlite":  # the text index keeps none of its text
        with repo.engine.connect() as conn:
            found = conn.execute(
                text("SELECT rowid FROM agents_fts WHERE agents_fts MATCH :w"), {"w": PROMPT_WORD}
            ).scalars()
            logged = conn.execute(text("SELECT agent_id FROM agents_fts_log")).scalars()
            assert not acme_ids & ({*found} | {*logged})
    assert [a.name for a in repo.search(SearchQuery(query=PROMPT_WORD))] == ["lead_qualifier"]
    with pytest.raises(TenantNotFoundError):
        repo.delete_tenant("acme")
    with pytest.raises(InvalidInputError, match="delete its agents one by one"):
        repo.delete_tenant("default")
    with pytest.raises(TenantNotFoundError):  # a strict store: acme is gone for writes too
        tenant_store.create(make_config(name="again"))


def test_max_agents_refuses_creates_clones_and_imports_past_the_limit(
    repo: SqlAgentRepository, tenant_store: SqlAgentRepository
) -> None:
    repo.set_tenant("acme", max_agents=2)
    assert repo.tenant_limits() == {"acme": 2, "default": None}
    tenant_store.create(make_config(name="one"))
    tenant_store.create(make_config(name="two"))
    with pytest.raises(TenantLimitError, match=r"at most 2 agents \(max_agents\)") as refused:
        tenant_store.create(make_config(name="three"))
    assert (refused.value.limit, refused.value.count) == (2, 3)
    with pytest.raises(TenantLimitError):
        tenant_store.clone("one", "three")
    new = tenant_store.get("one").model_copy(update={"name": "three"})
    with pytest.raises(TenantLimitError):
        tenant_store.bulk_put([ImportItem(name="three", agent=new)])
    assert tenant_store.list_names() == ["one", "two"]
    again = tenant_store.get("one")
    assert (
        tenant_store.bulk_put([ImportItem(name="one", agent=again)], "replace").count("replaced")
        == 1
    )  # a replace adds no agent
    repo.set_tenant("acme", max_agents=None)
    tenant_store.create(make_config(name="three"))
    repo.set_tenant("default", max_agents=0)
    with pytest.raises(TenantLimitError):
        repo.create(make_config())
    with pytest.raises(TenantNotFoundError):
        repo.set_tenant("globex", max_agents=1)


def test_max_agents_holds_when_writers_create_at_once(
    repo: SqlAgentRepository, tenant_store: SqlAgentRepository, clock: FakeClock
) -> None:
    limit, writers = 3, 8
    repo.set_tenant("acme", max_agents=limit)
    stores = [open_repository(repo.engine.url, clock=clock, tenant="acme") for _ in range(writers)]
    start = threading.Barrier(writers)
    outcomes: list[str] = []

    def create(index: int) -> None:
        start.wait()
        try:
            stores[index].create(make_config(name=f"agent_{index}"))
            outcomes.append("created")
        except TenantLimitError:
            outcomes.append("refused")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(writers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for store in stores:
            store.close()
    assert sorted(outcomes) == ["created"] * limit + ["refused"] * (writers - limit)
    assert len(tenant_store.list_names()) == limit


def _cli(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTI_STORE_")}
    return subprocess.run(
        [sys.executable, "-m", "acti_store", *words],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_cli_creates_limits_and_deletes_a_tenant(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert _cli("--url", url, "tenants", "create", "acme", cwd=tmp_path).returncode == 0
    done = _cli("tenants", "set", "acme", "--max-agents", "1", "--url", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _cli("--url", url, "--tenant", "acme", "quickstart", cwd=tmp_path).returncode == 1
    over = _cli("--url", url, "--tenant", "acme", "quickstart", cwd=tmp_path)
    assert over.returncode == 1 and len(over.stderr.splitlines()) == 1
    assert "at most 1 agent (max_agents)" in over.stderr and "Traceback" not in over.stderr
    typo = _cli("--url", url, "--tenant", "acmee", "quickstart", cwd=tmp_path)
    assert typo.stderr.startswith("error: Tenant 'acmee' is not registered")
    kept = _cli("--url", url, "tenants", "delete", "default", cwd=tmp_path)
    assert kept.returncode == 1 and kept.stderr.count("\n") == 1

    preview = _cli("--url", url, "tenants", "delete", "acme", cwd=tmp_path)
    assert preview.returncode == 1 and "agents                    1" in preview.stdout
    printed = preview.stdout.split("To confirm, run: ")[1].strip()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    words = shlex.split(printed)
    assert words[0] == "acti-store"
    erased = _cli(*words[1:], cwd=elsewhere)
    assert erased.returncode == 0, erased.stderr
    assert "Deleted tenant 'acme'" in erased.stdout
    listed = _cli("--url", url, "tenants", "--json", cwd=tmp_path)
    assert listed.stdout.strip().startswith("{") and "acme" not in listed.stdout
    again = _cli(*words[1:], cwd=elsewhere)
    assert again.returncode == 1 and "does not match" in again.stderr  # bound to what it showed
    gone = _cli("--url", url, "tenants", "delete", "acme", "--yes", cwd=tmp_path)
    assert gone.returncode == 1 and "not registered" in gone.stderr
