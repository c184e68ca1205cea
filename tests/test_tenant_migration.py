"""Revision 0009_tenants on every engine: a store made before tenants keeps every row (the
default tenant's), the downgrade is clean with one tenant and refused, changing nothing, with
several."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import FakeClock, make_config
from sqlalchemy import Engine

from acti_store import (
    ExecutionRecord,
    SchemaVersionError,
    SearchQuery,
    SqlAgentRepository,
    open_repository,
)
from acti_store.engine import make_engine
from acti_store.revisions import current_revisions, upgrade_schema

BEFORE = "0008_mariadb_search"
HEAD = "0015_tenant_logins"


@pytest.fixture
def engine(repo: SqlAgentRepository) -> Iterator[Engine]:
    made = make_engine(repo.engine.url)
    try:
        yield made
    finally:
        made.dispose()


def fill(repo: SqlAgentRepository) -> dict[str, object]:
    """Agents with tags, histories, versions, labels and an archive; what a reader sees."""
    for name in ("lead_qualifier", "support_bot"):
        repo.create(make_config(name))
        repo.update(name, {"description": f"The second version of {name}"})
        repo.set_label(name, "production", 1, note="pinned")
        for index in range(3):
            repo.record_execution(
                name,
                ExecutionRecord(
                    timestamp=repo.now(),
                    task=f"task {index}",
                    result_summary="done",
                    success=index != 1,
                    duration_seconds=0.5,
                    tool_calls_count=index,
                ),
            )
    repo.create(make_config("archived_bot"))
    repo.record_execution(
        "archived_bot",
        ExecutionRecord(
            timestamp=repo.now(),
            task="archived task",
            result_summary="done",
            success=True,
            duration_seconds=0.5,
            tool_calls_count=0,
        ),
    )
    repo.delete("archived_bot", delete_history=False)
    return seen(repo)


def seen(repo: SqlAgentRepository) -> dict[str, object]:
    names = ("lead_qualifier", "support_bot")
    return {
        "agents": [a.model_dump(mode="json") for a in repo.list_agents()],
        "found": [a.name for a in repo.search(SearchQuery(tags=["sales"], query="lead"))],
        "histories": [repo.get_history(n, limit=50).model_dump(mode="json") for n in names],
        "versions": [[v.model_dump(mode="json") for v in repo.versions(n)] for n in names],
        "labels": [repo.labels(n) for n in names],
        "moves": [[m.model_dump(mode="json") for m in repo.label_history(n)] for n in names],
        "stats": [
            {k: v.model_dump(mode="json") for k, v in repo.version_stats(n).items()} for n in names
        ],
        "archive": repo.archived_history("archived_bot").model_dump(mode="json"),
    }


def test_a_store_made_before_tenants_keeps_every_row_through_both_ways(
    repo: SqlAgentRepository, engine: Engine, clock: FakeClock
) -> None:
    before = fill(repo)
    repo.close()

    assert upgrade_schema(engine, BEFORE) == ({HEAD}, {BEFORE})
    assert upgrade_schema(engine, "head") == ({BEFORE}, {HEAD})

    reopened = open_repository(engine.url, clock=clock)
    try:
        assert seen(reopened) == before
        assert reopened.tenants() == {"default": 2}
    finally:
        reopened.close()


def test_the_downgrade_is_refused_while_another_tenant_holds_rows(
    repo: SqlAgentRepository, engine: Engine, clock: FakeClock
) -> None:
    before = fill(repo)
    acme = open_repository(engine.url, clock=clock, tenant="acme")
    try:
        acme.create(make_config("lead_qualifier", description="The agent of acme's leads"))
    finally:
        acme.close()

    with pytest.raises(SchemaVersionError, match="tenants other than 'default' \\(acme\\)"):
        upgrade_schema(engine, BEFORE)

    assert current_revisions(engine)[0] == {HEAD}
    assert seen(repo) == before  # nothing changed: the next open is not refused either
    again = open_repository(engine.url, clock=clock, tenant="acme")
    try:
        assert again.get("lead_qualifier").description == "The agent of acme's leads"
    finally:
        again.close()
