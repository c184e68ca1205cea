"""Tenants under load (issue 28, §5): on each engine, 8 writer processes write two tenants at
once, agents of the same names in both, while a reader process per tenant reads it every way
the store reads (search, list, get, history, versions, export) and finds only its own rows; at
the end each tenant holds exactly what the writers say they wrote to it.

The children are real processes (``spawn``), started and watched by ``workers.harness``; the
work lives in ``workers.tenants``.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from conftest import migrate_from_template
from workers import tenants
from workers.harness import run_children

from acti_store import SqlAgentRepository, open_repository

WRITERS = 8
#: Seconds of load, once every child is up.
SECONDS = 4.0


def test_two_tenants_under_load_never_see_each_other(
    request: pytest.FixtureRequest, store_url: str, tmp_path: Path
) -> None:
    migrate_from_template(request, store_url)
    tenants.setup(store_url)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS + len(tenants.TENANTS))
    writers = [("writer", store_url, i, barrier, SECONDS) for i in range(WRITERS)]
    readers = [("reader", store_url, t, barrier, SECONDS, str(tmp_path)) for t in tenants.TENANTS]
    results = run_children(ctx, tenants.role, [*writers, *readers], timeout=240)
    wrote, rounds = results[:WRITERS], results[WRITERS:]
    assert all(count > 0 for count in rounds), rounds
    steps = [sum(w[t]["shared_runs"].values()) for w in wrote for t in tenants.TENANTS]
    assert all(count > 0 for count in steps), steps
    print(f"writer steps per tenant: {steps}; reader rounds: {rounds}")

    for tenant in tenants.TENANTS:
        repo = open_repository(store_url, tenant=tenant)
        try:
            _check_counts(repo, tenant, [w[tenant] for w in wrote])
        finally:
            repo.close()


def _check_counts(repo: SqlAgentRepository, tenant: str, wrote: list[dict[str, Any]]) -> None:
    """``tenant``'s agents and counters are exactly what the writers report."""
    own = {f"writer_{i}": w for i, w in enumerate(wrote) if w["exists"]}
    agents = {agent.name: agent for agent in repo.list_agents()}
    assert set(agents) == {*tenants.SHARED, tenants.ONLY[tenant], *own}
    for name, mine in own.items():
        agent = agents[name]
        assert agent.metadata.version == mine["version"], name
        assert agent.metadata.execution_count == mine["runs"], name
        assert repo.labels(name) == ({"prod": mine["version"]} if mine["runs"] else {})
    for name in tenants.SHARED:
        runs = sum(w["shared_runs"].get(name, 0) for w in wrote)
        updates = sum(w["updates"].get(name, 0) for w in wrote)
        assert agents[name].metadata.execution_count == runs, name
        assert agents[name].metadata.version == 1 + updates, name
        history = repo.get_history(name)
        assert history.total_executions == runs
        assert all(r.task.startswith(tenants.marker(tenant)) for r in history.executions)
    assert repo.get(tenants.ONLY[tenant]).metadata.version == 1
