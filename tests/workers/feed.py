"""Writers and a follower of the change feed (``tests/test_changes_follow.py``).

Each writer makes agents of its own and moves a label of a shared agent, as fast as it can, and
reports each change it committed; the follower reads ``changes(after=last)`` in a tight loop
while they write, and reports every change it saw, in the order it saw them.
"""

from __future__ import annotations

import time
from typing import Any

from acti_store import AgentConfig, SqlAgentRepository, open_repository

SHARED = "shared_agent"
PROMPT = "You are a careful assistant that qualifies leads and writes short notes. "


def config(name: str, note: str = "made") -> AgentConfig:
    return AgentConfig.model_validate(
        {"name": name, "description": f"{name} {note}", "system_prompt": PROMPT, "tools": ["crm"]}
    )


def setup(url: str) -> None:
    repo = open_repository(url, export_dir="")
    try:
        repo.create(config(SHARED))
    finally:
        repo.close()


def role(kind: str, *args: Any) -> Any:
    return {"writer": writer, "follower": follower}[kind](*args)


def writer(url: str, index: int, barrier: Any, seconds: float) -> list[tuple[Any, ...]]:
    """Changes committed, as ``(kind, agent, version, label)``."""
    repo = open_repository(url, export_dir="", lock_timeout=60)
    made: list[tuple[Any, ...]] = []
    try:
        barrier.wait(timeout=120)
        end = time.monotonic() + seconds
        step = 0
        while time.monotonic() < end:
            name = f"writer_{index}_{step}"
            repo.create(config(name))
            made.append(("created", name, 1, None))
            agent = repo.update(name, {"description": f"{name} updated"})
            made.append(("updated", name, agent.metadata.version, None))
            note = f"updated by writer {index} at step {step}"
            shared = repo.update(SHARED, {"description": note})
            made.append(("updated", SHARED, shared.metadata.version, None))
            repo.set_label(name, "prod", 2)
            made.append(("label_set", name, 2, "prod"))
            if step % 3 == 0:
                repo.delete(name)
                made.append(("deleted", name, 2, None))
            step += 1
    finally:
        repo.close()
    return made


def follower(url: str, barrier: Any, seconds: float) -> list[tuple[Any, ...]]:
    """Every change seen by following the feed, as ``(seq, kind, agent, version, label)``."""
    repo = open_repository(url, export_dir="", read_only=True)
    seen: list[tuple[Any, ...]] = []
    try:
        barrier.wait(timeout=120)
        last = 0
        end = time.monotonic() + seconds + 5  # the writers' time, and their last commits
        while time.monotonic() < end:
            for change in repo.changes(after=last, limit=50):
                seen.append((change.seq, change.kind, change.agent, change.version, change.label))
                last = change.seq
    finally:
        repo.close()
    return seen


def table(repo: SqlAgentRepository) -> list[tuple[Any, ...]]:
    """The whole feed, read at once when nothing writes."""
    rows: list[tuple[Any, ...]] = []
    last = None
    while batch := repo.changes(after=last, limit=10_000):
        rows += [(c.seq, c.kind, c.agent, c.version, c.label) for c in batch]
        last = batch[-1].seq
    return rows
