"""A process of the pooler's load test (``tests/test_pooler.py``): for ``seconds`` it creates,
reads, lists, searches and runs agents of its tenant through a pooler in transaction mode, as
the app role of docs/tenants.md (row-level security applies), and counts what went wrong.

Both tenants' processes make agents of the same pattern of names; each agent's description
carries its tenant's marker, so a row of the other tenant is told at once.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from acti_store import AgentConfig, ExecutionRecord, open_repository

PROMPT = "You are a careful assistant that qualifies leads and writes short notes for sales. "


def marker(tenant: str) -> str:
    return f"marker{tenant}xyz"


def run(url: str, schema: str, tenant: str, worker: int, barrier: Any, seconds: float) -> Any:
    """Rounds of every operation for ``seconds``; returns the rounds done and the problems seen
    (``errors`` by exception class, ``empty`` answers, ``foreign`` rows)."""
    problems: Counter[str] = Counter()
    rounds = 0
    with open_repository(url, schema=schema, tenant=tenant, pooler="transaction") as repo:
        barrier.wait()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            name = f"w{worker}_{rounds}"
            try:
                _round(repo, tenant, name, problems)
            except Exception as exc:  # counted, then on: the test asserts none was seen
                problems[f"error {type(exc).__name__}: {str(exc)[:200]}"] += 1
            rounds += 1
    return {"rounds": rounds, "problems": dict(+problems)}


def _round(repo: Any, tenant: str, name: str, problems: Counter[str]) -> None:
    own = marker(tenant)
    repo.create(
        AgentConfig(
            name=name,
            description=f"{own} agent {name}",
            system_prompt=PROMPT,
            tools=["crm"],
            tags=[tenant],
        )
    )
    agent = repo.get(name)
    if own not in agent.description:
        problems["foreign get"] += 1
    names = repo.list_names()
    if not names:
        problems["empty list"] += 1
    elif name not in names:
        problems["own agent missing from list"] += 1
    found = repo.search({"query": name, "limit": 5})
    if not found:
        problems["empty search"] += 1
    problems["foreign search"] += sum(own not in a.description for a in found)
    repo.record_execution(
        name,
        ExecutionRecord(
            timestamp=repo.now(),
            task=f"{own} task",
            result_summary="done",
            success=True,
            duration_seconds=0.1,
            tool_calls_count=1,
        ),
    )
    history = repo.get_history(name)
    if history.total_executions != 1:
        problems["history count"] += 1
    problems["foreign history"] += sum(own not in r.task for r in history.executions)
