"""Writers and a follower that keep going while the primary dies (``tests/test_pg_failover.py``).

Each writer opens the store once, through a multi-host URL, and loops until told to stop: a run
of one of its own two agents (``record_execution``) on most calls, an update of one (a change in
the feed) on every :data:`UPDATE_EVERY`-th. It appends one JSON line to its own file for every
call: ``{"ack": n, ...}`` for the n-th acknowledged call, ``{"error": class name, ...}`` for one
that raised (then it pauses :data:`RETRY_PAUSE` and goes on, as an application would). The
follower reads ``changes(after=last)`` in a loop and logs every change it sees, and its errors,
the same way. The files are the record: a child's acknowledged call is in its file (flushed)
before its next call, whatever happens to the child afterwards.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import IO, Any, Final

from acti_store import AgentConfig, ExecutionRecord, open_repository

#: Every this many calls of a writer is an update (a change in the feed); the others are runs.
UPDATE_EVERY: Final = 5
#: A writer's pause after a failed call before the next one.
RETRY_PAUSE: Final = 0.05
#: The follower's pause between reads of the feed that found nothing new.
FOLLOW_PAUSE: Final = 0.01
PROMPT: Final = "You are a careful assistant that qualifies leads and writes short notes. "


def agents(writer: int) -> tuple[str, str]:
    """The two agents only ``writer`` touches."""
    return (f"writer_{writer}_a", f"writer_{writer}_b")


def config(name: str) -> AgentConfig:
    return AgentConfig.model_validate(
        {"name": name, "description": f"{name} made", "system_prompt": PROMPT, "tools": ["crm"]}
    )


def run(writer: int, call: int) -> ExecutionRecord:
    """The record of ``writer``'s ``call``-th call, made now."""
    return ExecutionRecord.model_validate(
        {
            "timestamp": datetime.now(UTC),
            "task": f"writer {writer}, call {call}",
            "result_summary": "done",
            "success": True,
            "duration_seconds": 0.1,
        }
    )


def setup(url: str, writers: int) -> None:
    """Create every writer's agents (the feed's first ``2 * writers`` changes)."""
    repo = open_repository(url, export_dir="")
    try:
        for writer in range(writers):
            for name in agents(writer):
                repo.create(config(name))
    finally:
        repo.close()


def _log(file: IO[str], **entry: Any) -> None:
    file.write(json.dumps({**entry, "at": time.time()}) + "\n")
    file.flush()


def _error(file: IO[str], exc: Exception, **entry: Any) -> None:
    transient = getattr(exc, "transient", None)
    _log(file, error=type(exc).__name__, transient=transient, message=str(exc)[:300], **entry)


def writer(url: str, index: int, path: str, stop: Event) -> None:
    """Write until ``stop`` is set; log each call to ``path``."""
    names = agents(index)
    repo = open_repository(url, export_dir="", migrate=False)
    acknowledged = 0
    try:
        with Path(path).open("a") as file:
            call = 0
            while not stop.is_set():
                call += 1
                agent = names[call % 2]
                op = "update" if call % UPDATE_EVERY == 0 else "run"
                try:
                    if op == "update":
                        note = f"{agent} updated by call {call}"
                        version = repo.update(agent, {"description": note}).metadata.version
                    else:
                        repo.record_execution(agent, run(index, call))
                        version = None
                except Exception as exc:  # every error is logged: the test judges each class
                    _error(file, exc, op=op, agent=agent)
                    time.sleep(RETRY_PAUSE)
                    continue
                acknowledged += 1
                _log(file, ack=acknowledged, op=op, agent=agent, version=version)
    finally:
        repo.close()


def follower(url: str, path: str, stop: Event) -> None:
    """Follow the feed until ``stop`` is set, then read it to its end; log each change seen."""
    repo = open_repository(url, export_dir="", read_only=True)
    last = 0
    try:
        with Path(path).open("a") as file:
            caught_up = False
            while not caught_up:
                stopping = stop.is_set()  # read the feed once more after the writers stop
                try:
                    found = repo.changes(after=last, limit=100)
                except Exception as exc:
                    _error(file, exc, op="changes")
                    time.sleep(RETRY_PAUSE)
                    continue
                for change in found:
                    _log(
                        file,
                        seq=change.seq,
                        kind=change.kind,
                        agent=change.agent,
                        version=change.version,
                    )
                    last = change.seq
                if not found:
                    caught_up = stopping
                    time.sleep(FOLLOW_PAUSE)
    finally:
        repo.close()


def read_log(path: Path) -> list[dict[str, Any]]:
    """The entries a child logged, in order (a last line cut short by a kill is left out)."""
    entries = []
    for line in path.read_text().splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return entries
