"""Exports taken while other processes write: every exported agent must agree with its history.

:func:`export_under_writes` runs ``recorders`` processes recording runs and ``updaters`` processes
updating configs, continuously, while ``exporters`` processes each export the whole store once.
The parent then checks every exported folder (:func:`folder_problems`) and imports each one into a
fresh store, where nothing may be refused.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path

from acti_store import (
    Agent,
    AgentConfig,
    AgentMetadata,
    AgentUpdate,
    ExecutionRecord,
    ImportItem,
    export_json,
    import_json,
    open_repository,
)
from acti_store.documents import (
    DocumentError,
    agent_from_document,
    history_from_document,
    is_history_document,
    loads,
)
from acti_store.models import HISTORY_MAX_RECORDS

from .children import PROMPT_BASE
from .harness import context, run_children

TIMEOUT = 120.0


def _names(agents: int) -> tuple[str, ...]:
    return tuple(f"agent_{i:05d}" for i in range(agents))


def seed(url: str, agents: int) -> None:
    """``agents`` agents without history, put in one bulk transaction."""
    now = datetime.now(UTC)
    repo = open_repository(url)
    try:
        items = [
            ImportItem(
                name=name,
                agent=Agent(
                    name=name,
                    description=f"Agent {name} for the export under writes",
                    system_prompt=f"{PROMPT_BASE}seed",
                    tags=["snapshot"],
                    metadata=AgentMetadata(created_at=now, updated_at=now),
                ),
            )
            for name in _names(agents)
        ]
        repo.bulk_put(items)
    finally:
        repo.close()


def record_until_stopped(url: str, worker: int, agents: int, start: Barrier, stop: Event) -> int:
    """Record runs on random agents until ``stop``; returns how many."""
    names = _names(agents)
    rng = random.Random(worker)
    repo = open_repository(url, migrate=False)
    count = 0
    try:
        start.wait()
        while not stop.is_set():
            success = rng.random() < 0.7
            repo.record_execution(
                rng.choice(names),
                ExecutionRecord(
                    timestamp=datetime.now(UTC),
                    task=f"w{worker}-{count}",
                    result_summary="ok" if success else "failed",
                    success=success,
                    duration_seconds=0.25,
                    error_type=None if success else "ExecutionError",
                ),
            )
            count += 1
    finally:
        repo.close()
    return count


def update_until_stopped(url: str, worker: int, agents: int, start: Barrier, stop: Event) -> int:
    """Update random agents' configs until ``stop``; returns how many updates."""
    names = _names(agents)
    rng = random.Random(1000 + worker)
    repo = open_repository(url, migrate=False)
    count = 0
    try:
        start.wait()
        while not stop.is_set():
            repo.update(
                rng.choice(names),
                AgentUpdate(
                    description=f"updated by {worker}, update {count}",
                    tags=["snapshot", f"u{worker}-{count}"],
                ),
            )
            count += 1
    finally:
        repo.close()
    return count


def export_once(
    url: str, folder: str, start: Barrier, exported: Barrier, stop: Event, delay: float
) -> int:
    """Export the store once, ``delay`` seconds after every writer started; the last exporter to
    finish stops the writers. Returns the number of agents exported."""
    repo = open_repository(url, migrate=False)
    try:
        start.wait()
        time.sleep(delay)
        report = export_json(repo, folder)
    finally:
        repo.close()
        if exported.wait() == 0:
            stop.set()
    return report.agents


def create_until_stopped(url: str, started: Event, stop: Event) -> int:
    """Create agents whose names spread over a whole walk by name (before, inside and after the
    pages read so far), all matching ``pageable``, until ``stop``; ``started`` after the first."""
    repo = open_repository(url, migrate=False)
    created = 0
    try:
        while not stop.is_set():
            for prefix in ("page_", "page_0", "page_02", "page_04", "pagf_"):
                repo.create(
                    AgentConfig(
                        name=f"{prefix}new_{created:05d}",
                        description="Pageable newcomer",
                        system_prompt=f"{PROMPT_BASE}newcomer",
                    )
                )
            created += 1
            started.set()
    finally:
        repo.close()
    return created


def folder_problems(folder: Path) -> list[str]:
    """Every way an exported agent disagrees with its exported history."""
    problems: list[str] = []
    files = {path.name: path for path in folder.glob("*.json")}
    for file, path in sorted(files.items()):
        document = loads(path.read_bytes())
        if is_history_document(document):
            continue
        try:
            agent = agent_from_document(document)
        except DocumentError as exc:
            problems.append(f"{file}: {exc}")
            continue
        meta = agent.metadata
        history_file = files.get(f"{agent.name}_history.json")
        if history_file is None:
            if meta.execution_count:
                problems.append(f"{agent.name}: execution_count {meta.execution_count}, no history")
            continue
        try:
            history = history_from_document(loads(history_file.read_bytes()))
        except DocumentError as exc:
            problems.append(f"{history_file.name}: {exc}")
            continue
        runs = history.executions
        if history.total_executions != meta.execution_count:
            problems.append(
                f"{agent.name}: execution_count {meta.execution_count}, "
                f"total_executions {history.total_executions}"
            )
        if len(runs) != min(history.total_executions, HISTORY_MAX_RECORDS):
            problems.append(
                f"{agent.name}: {len(runs)} records for total_executions {history.total_executions}"
            )
        # Runs finish out of order (the timestamp is taken before the write), so the newest run
        # is the latest timestamp among the records, which ``last_executed_at`` must equal.
        newest = max((run.timestamp for run in runs), default=None)
        if newest != meta.last_executed_at:
            problems.append(
                f"{agent.name}: last_executed_at {meta.last_executed_at}, newest record {newest}"
            )
    return problems


def import_problems(folder: Path, url: str) -> list[str]:
    """Import ``folder`` into the fresh store at ``url``: every file invalid there is a problem."""
    repo = open_repository(url)
    try:
        report = import_json(repo, folder)
        problems = [f"{folder.name}/{file}: {reason}" for file, reason in report.invalid.items()]
        if report.aborted:
            problems.append(f"{folder.name}: the import was aborted")
        return problems
    finally:
        repo.close()


def export_under_writes(
    url: str,
    folders: list[Path],
    *,
    agents: int,
    recorders: int = 4,
    updaters: int = 2,
) -> tuple[list[int], list[int]]:
    """Run the writers and one exporter per folder at once (exports staggered over the run).

    Returns the writers' call counts and the agents each export wrote.
    """
    ctx = context()
    writers = recorders + updaters
    start = ctx.Barrier(writers + len(folders), timeout=TIMEOUT)
    exported = ctx.Barrier(len(folders), timeout=TIMEOUT)
    stop = ctx.Event()
    jobs = (
        [(record_until_stopped, (url, w, agents, start, stop)) for w in range(recorders)]
        + [(update_until_stopped, (url, w, agents, start, stop)) for w in range(updaters)]
        + [
            (export_once, (url, str(folder), start, exported, stop, 0.2 * i))
            for i, folder in enumerate(folders)
        ]
    )
    results = run_children(ctx, _dispatch, [(f, args) for f, args in jobs], timeout=TIMEOUT)
    return results[:writers], results[writers:]


def _dispatch(function: object, args: tuple[object, ...]) -> object:
    assert callable(function)
    return function(*args)
