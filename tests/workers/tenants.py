"""Two tenants under load (``tests/test_tenant_load.py``): writers write both at once, a reader
per tenant checks it never sees the other's rows.

Both tenants hold agents of the same names; what tells their rows apart is the tenant's marker,
in every description and every recorded task, and the tenant's tag. Each tenant also holds one
agent the other has not (``ONLY``).
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from acti_store import (
    AgentConfig,
    AgentNotFoundError,
    ExecutionRecord,
    SqlAgentRepository,
    export_json,
    open_repository,
)

TENANTS = ("acme", "globex")
#: Agents every writer runs and updates, in both tenants.
SHARED = ("shared_alpha", "shared_beta")
#: The agent only each tenant has.
ONLY = {"acme": "only_acme", "globex": "only_globex"}
PROMPT = "You are a careful assistant that qualifies leads and writes short notes. "


def marker(tenant: str) -> str:
    return f"marker{tenant}xyz"


def other(tenant: str) -> str:
    return TENANTS[1 - TENANTS.index(tenant)]


def config(tenant: str, name: str, note: str = "made") -> AgentConfig:
    return AgentConfig.model_validate(
        {
            "name": name,
            "description": f"{marker(tenant)} {name} {note}",
            "system_prompt": PROMPT,
            "tools": ["crm"],
            "stratum": "RAI",
            "tags": ["sales", tenant],
        }
    )


def record(repo: SqlAgentRepository, tenant: str, task: str) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=repo.now(),
        task=f"{marker(tenant)} {task}",
        result_summary="done",
        success=True,
        duration_seconds=0.5,
    )


def setup(url: str) -> None:
    """Both tenants' shared agents and each one's own."""
    for tenant in TENANTS:
        repo = open_repository(url, tenant=tenant)
        try:
            for name in (*SHARED, ONLY[tenant]):
                repo.create(config(tenant, name))
        finally:
            repo.close()


def writer(url: str, index: int, barrier: Any, seconds: float) -> dict[str, Any]:
    """Write both tenants for ``seconds``: its own agent (the same name in both) created,
    updated, run, labelled, deleted and made again; runs and updates of the shared agents.
    Returns, per tenant, what it left: its agent's state, its runs and updates of each shared
    agent."""
    own = f"writer_{index}"
    repos = {tenant: open_repository(url, tenant=tenant) for tenant in TENANTS}
    state = {
        t: {
            "exists": False,
            "version": 0,
            "runs": 0,
            "shared_runs": Counter(),
            "updates": Counter(),
        }
        for t in TENANTS
    }
    try:
        barrier.wait(120)
        end, step = time.monotonic() + seconds, 0
        while time.monotonic() < end:
            for tenant, repo in repos.items():
                mine = state[tenant]
                shared = SHARED[(index + step) % len(SHARED)]
                if not mine["exists"]:
                    repo.create(config(tenant, own, f"step {step}"))
                    mine.update(exists=True, version=1, runs=0)
                elif step % 6 == 5:
                    repo.delete(own)
                    mine["exists"] = False
                else:
                    change = {"description": f"{marker(tenant)} {own} step {step}"}
                    mine["version"] = repo.update(own, change).metadata.version
                    repo.record_execution(own, record(repo, tenant, f"{own} {step}"))
                    mine["runs"] += 1
                    repo.set_label(own, "prod", mine["version"])
                repo.record_execution(shared, record(repo, tenant, f"{own} {step}"))
                mine["shared_runs"][shared] += 1
                if step % 3 == 0:
                    repo.update(shared, {"description": f"{marker(tenant)} {shared} by {own}"})
                    mine["updates"][shared] += 1
            step += 1
    finally:
        for repo in repos.values():
            repo.close()
    return {
        tenant: {**mine, "shared_runs": dict(mine["shared_runs"]), "updates": dict(mine["updates"])}
        for tenant, mine in state.items()
    }


def _check_text(tenant: str, text: str, what: str) -> None:
    assert marker(other(tenant)) not in text, f"{tenant} sees {what}: {text!r}"


def _check_agent(tenant: str, agent: Any) -> None:
    assert marker(tenant) in agent.description, f"{tenant} sees {agent.name}: {agent.description}"
    _check_text(tenant, agent.description, agent.name)
    assert tenant in agent.tags and other(tenant) not in agent.tags, (tenant, agent.tags)
    assert agent.name != ONLY[other(tenant)], f"{tenant} sees {agent.name}"


def reader(url: str, tenant: str, barrier: Any, seconds: float, folder: str) -> int:
    """Read ``tenant`` for ``seconds`` every way the store reads; each read must hold the
    tenant's rows only. Returns how many rounds it read."""
    repo = open_repository(url, tenant=tenant)
    rounds = 0
    try:
        barrier.wait(120)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            _read_round(repo, tenant, Path(folder) / f"{tenant}-{rounds}")
            rounds += 1
    finally:
        repo.close()
    return rounds


def _read_round(repo: SqlAgentRepository, tenant: str, out: Path) -> None:
    listed = repo.list_agents()
    names = {agent.name for agent in listed}
    assert {*SHARED, ONLY[tenant]} <= names, names
    for agent in listed:
        _check_agent(tenant, agent)
    for query in ({"query": marker(tenant)}, {"tags": [tenant]}, {"query": "writer"}):
        for agent in repo.search(query):
            _check_agent(tenant, agent)
    assert repo.search({"query": marker(other(tenant))}) == []
    assert repo.search({"tags": [other(tenant)]}) == []
    try:
        repo.get(ONLY[other(tenant)])
        raise AssertionError(f"{tenant} gets {ONLY[other(tenant)]}")
    except AgentNotFoundError:
        pass
    for name in sorted(names):
        try:
            _check_agent(tenant, repo.get(name))
            history = repo.get_history(name)
            versions = repo.versions(name)
        except AgentNotFoundError:  # a writer's agent, deleted meanwhile
            continue
        for run in history.executions:
            assert run.task.startswith(marker(tenant)), f"{tenant} sees run {run.task!r}"
        for version in versions:
            _check_text(tenant, version.config.description, f"{name} v{version.version}")
    export_json(repo, out)
    for path in out.rglob("*"):
        if path.is_file():
            _check_text(tenant, path.read_text(errors="replace"), f"export {path.name}")
    shutil.rmtree(out)


def role(kind: str, *args: Any) -> Any:
    """One child's work: ``writer`` or ``reader``."""
    return {"writer": writer, "reader": reader}[kind](*args)
