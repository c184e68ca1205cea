"""Entry points of child processes. Each opens the store itself from its URL (never inherits one).

Every call a child makes is numbered, so the parent can compute exactly what the store must hold
afterwards (see :mod:`.checks`): a lost count, a lost record or a record kept out of order shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

from acti_store import (
    Agent,
    AgentMetadata,
    AgentStoreError,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    VersionConflictError,
    export_json,
    import_json,
    open_repository,
)
from acti_store.documents import agent_document, dumps, history_document

#: A system prompt long enough for the model's 50-character minimum; children append a marker.
PROMPT_BASE = "You are a test agent. Answer briefly, and say which update wrote this prompt: "


@dataclass(frozen=True)
class Call:
    """One planned ``record_execution`` call of a worker."""

    agent: str
    execution_id: str
    task: str
    success: bool


def record_plan(worker: int, calls: int, agents: tuple[str, ...]) -> list[Call]:
    """The calls ``worker`` makes, in order: round-robin over ``agents``, every third a failure.

    The task ``w03-c00042`` is worker 3's call 42, so each record names its author and position.
    """
    return [
        Call(
            agent=agents[(worker + i) % len(agents)],
            execution_id=f"w{worker}-c{i}",
            task=f"w{worker:02d}-c{i:05d}",
            success=i % 3 != 0,
        )
        for i in range(calls)
    ]


def parse_task(task: str) -> tuple[int, int]:
    """``(worker, call)`` of a task written by :func:`record_plan`."""
    worker, call = task.split("-")
    return int(worker[1:]), int(call[1:])


def record_calls(
    url: str, worker: int, calls: int, agents: tuple[str, ...], barrier: Barrier
) -> list[str]:
    """Make this worker's planned calls once every worker is ready; return the failures."""
    repo = open_repository(url, migrate=False)
    failures: list[str] = []
    try:
        barrier.wait()
        for i, call in enumerate(record_plan(worker, calls, agents)):
            record = ExecutionRecord(
                execution_id=call.execution_id,
                timestamp=datetime.now(UTC),
                task=call.task,
                result_summary="ok" if call.success else "failed",
                success=call.success,
                duration_seconds=0.5,
                error_type=None if call.success else "ExecutionError",
            )
            try:
                repo.record_execution(call.agent, record)
            except AgentStoreError as exc:
                failures.append(f"call {i} on {call.agent}: {type(exc).__name__}: {exc}")
    finally:
        repo.close()
    return failures


def race_updates(
    url: str, worker: int, rounds: int, name: str, barrier: Barrier
) -> list[tuple[str, int]]:
    """Each round: read the version, wait for every racer to have read it, update expecting it.

    Returns one ``("won", new version)`` or ``("conflict", version found)`` per round.
    """
    repo = open_repository(url, migrate=False)
    outcomes: list[tuple[str, int]] = []
    try:
        for round_ in range(rounds):
            barrier.wait()  # the previous round is over for everyone
            version = repo.get(name).metadata.version
            barrier.wait()  # every racer holds the same version N
            change = AgentUpdate(description=f"round {round_} won by worker {worker}")
            try:
                agent = repo.update(name, change, expected_version=version)
            except VersionConflictError as exc:
                outcomes.append(("conflict", exc.actual))
            else:
                outcomes.append(("won", agent.metadata.version))
    finally:
        repo.close()
    return outcomes


def field_update(worker: int, k: int) -> AgentUpdate:
    """Update ``k`` of ``worker``: each worker owns one field and writes a value naming ``k``."""
    field = worker % 4
    if field == 0:
        return AgentUpdate(description=f"description by worker {worker}, update {k:04d}")
    if field == 1:
        return AgentUpdate(system_prompt=f"{PROMPT_BASE}worker {worker}, update {k:04d}")
    if field == 2:
        return AgentUpdate(tags=[f"w{worker}-u{k}", "concurrent"])
    return AgentUpdate(model=f"test:worker-{worker}-update-{k:04d}")


def update_own_field(
    url: str, worker: int, updates: int, name: str, barrier: Barrier
) -> list[tuple[int, dict[str, Any]]]:
    """Apply this worker's updates without ``expected_version``; return each version obtained
    and the field value the returned agent holds."""
    repo = open_repository(url, migrate=False)
    obtained: list[tuple[int, dict[str, Any]]] = []
    try:
        barrier.wait()
        for k in range(updates):
            change = field_update(worker, k)
            agent = repo.update(name, change)
            fields = change.changes()
            obtained.append((agent.metadata.version, {f: getattr(agent, f) for f in fields}))
    finally:
        repo.close()
    return obtained


def open_at_once(url: str, barrier: Barrier) -> list[str]:
    """Open (and so migrate) the store at the same moment as the other children."""
    barrier.wait()
    repo = open_repository(url)
    try:
        return repo.list_names()
    finally:
        repo.close()


# -- loops the parent kills with SIGKILL -----------------------------------------------------------


def crash_record(number: int) -> ExecutionRecord:
    """The record of run ``number`` (1-based) of :func:`record_until_killed`: even runs succeed."""
    success = number % 2 == 0
    return ExecutionRecord(
        execution_id=f"run-{number}",
        timestamp=datetime.now(UTC),
        task=str(number),
        result_summary="ok" if success else "failed",
        success=success,
        duration_seconds=0.25,
        error_type=None if success else "ExecutionError",
    )


def record_until_killed(url: str, name: str, ready: Event) -> None:
    """Record runs numbered on from the stored count until killed; ``ready`` after the first."""
    repo = open_repository(url, migrate=False)
    number = repo.get(name).metadata.execution_count
    while True:
        number += 1
        repo.record_execution(name, crash_record(number))
        ready.set()


def crash_update(version: int) -> AgentUpdate:
    """The update that produces ``version``: every field it sets names that version."""
    return AgentUpdate(
        description=f"written as version {version}",
        system_prompt=f"{PROMPT_BASE}version {version}",
        tags=[f"v{version}", "crash-test"],
    )


def update_until_killed(url: str, name: str, ready: Event) -> None:
    """Update the agent to version N+1 over and over until killed; ``ready`` after the first."""
    repo = open_repository(url, migrate=False)
    while True:
        version = repo.get(name).metadata.version
        repo.update(name, crash_update(version + 1), expected_version=version)
        ready.set()


def export_until_killed(url: str, folder: str, ready: Event) -> None:
    """Export the store to ``folder`` over and over until killed; ``ready`` before the first."""
    repo = open_repository(url, migrate=False)
    ready.set()
    while True:
        export_json(repo, folder)


def import_until_killed(url: str, folder: str, ready: Event) -> None:
    """Import ``folder`` (replacing) over and over until killed; ``ready`` before the first."""
    repo = open_repository(url, migrate=False)
    ready.set()
    while True:
        import_json(repo, folder, on_conflict="replace")


# -- generations of a folder of agent files: import and export kill cycles -------------------------


def generation_description(generation: int, name: str) -> str:
    """The description every agent has in ``generation``."""
    return f"Generation {generation} of agent {name}"


def has_history(name: str) -> bool:
    """Every tenth agent of a generation folder has a history file."""
    return name.endswith("0")


def write_generation(folder: Path, names: list[str], generation: int) -> None:
    """Write ``folder`` as the export of ``names`` at ``generation``: each agent's description
    and tags name the generation, and each history (see :func:`has_history`) holds three runs
    whose tasks name it."""
    folder.mkdir(parents=True, exist_ok=True)
    created = datetime(2025, 1, 9, 14, 30, tzinfo=UTC)
    for name in names:
        agent = Agent(
            name=name,
            description=generation_description(generation, name),
            system_prompt=f"{PROMPT_BASE}generation {generation}",
            tags=["crash-test", f"gen-{generation}"],
            metadata=AgentMetadata(created_at=created, updated_at=created, version=generation),
        )
        (folder / f"{name}.json").write_text(dumps(agent_document(agent)), encoding="utf-8")
        if has_history(name):
            runs = [  # newest first: run n started n minutes after the agent was created
                crash_record(n).model_copy(
                    update={
                        "task": f"g{generation}-run{n}",
                        "timestamp": created + timedelta(minutes=n),
                    }
                )
                for n in (3, 2, 1)
            ]
            history = ExecutionHistory(
                agent_name=name, executions=runs, total_executions=generation + 3
            )
            (folder / f"{name}_history.json").write_text(
                dumps(history_document(history)), encoding="utf-8"
            )
