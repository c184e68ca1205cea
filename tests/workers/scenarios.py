"""The multi-process scenarios, each on a fresh store and returning the problems it found.

The tests run them small (``tests/test_concurrency.py``, ``tests/test_crash_safety.py``) and
``benchmarks.stress`` runs them large; both report ``[]`` when every guarantee held. Each takes the
URL of an empty store (not yet migrated) and opens, migrates and closes it itself.
"""

from __future__ import annotations

import random
import tempfile
import time
import uuid
from collections.abc import Callable
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from acti_store import (
    AgentConfig,
    SqlAgentRepository,
    export_json,
    import_json,
    open_repository,
)
from acti_store.schema import agents as agents_table

from . import checks, children
from .harness import ChildError, KilledChild, context, run_children

#: Longest any one scenario's children may take before they are killed and the scenario fails.
TIMEOUT = 600.0


def agent_config(name: str, **fields: Any) -> AgentConfig:
    """A valid agent configuration called ``name``, with ``fields`` overridden."""
    values: dict[str, Any] = {
        "name": name,
        "description": "Qualifies inbound leads by assessing BANT criteria",
        "system_prompt": f"{children.PROMPT_BASE}version 1",
        "tools": ["communication", "crm"],
        "stratum": "RAI",
        "tags": ["sales", "qualification"],
    }
    return AgentConfig.model_validate(values | fields)


def _opened(url: str) -> SqlAgentRepository:
    return open_repository(url)


# -- many processes at once -----------------------------------------------------------------------


def record_storm(url: str, *, processes: int, calls: int, agents: int) -> list[str]:
    """``processes`` workers make ``calls`` ``record_execution`` calls each, at once, spread
    round-robin over ``agents`` agents. No call may fail; every agent's counters must equal the
    calls it got, and it must keep exactly the 50 newest records (see ``checks.fifo_problems``)."""
    names = tuple(f"agent_{i}" for i in range(agents))
    repo = _opened(url)
    try:
        checks.install_trim_audit(repo.engine)
        for name in names:
            repo.create(agent_config(name))
        ctx = context()
        barrier = ctx.Barrier(processes, timeout=TIMEOUT)
        failures = run_children(
            ctx,
            children.record_calls,
            [(url, worker, calls, names, barrier) for worker in range(processes)],
            timeout=TIMEOUT,
        )
        problems = [failure for worker in failures for failure in worker]  # "database is locked"
        problems += checks.sqlite_integrity_problems(repo.engine)
        made = [c for w in range(processes) for c in children.record_plan(w, calls, names)]
        for name in names:
            problems += checks.fifo_problems(repo, name, [c for c in made if c.agent == name])
        return problems
    finally:
        repo.close()


def version_race(url: str, *, rounds: int) -> list[str]:
    """Two workers read the same version, then both update expecting it, ``rounds`` times:
    each round exactly one must win (N -> N+1) and the other get ``VersionConflictError``."""
    repo = _opened(url)
    try:
        repo.create(agent_config("contested"))
        ctx = context()
        barrier = ctx.Barrier(2, timeout=TIMEOUT)
        outcomes = run_children(
            ctx,
            children.race_updates,
            [(url, worker, rounds, "contested", barrier) for worker in range(2)],
            timeout=TIMEOUT,
        )
        problems = []
        for round_, pair in enumerate(zip(*outcomes, strict=True)):
            # Both read version N = round + 1: one moves it to N + 1, the other finds N + 1.
            if sorted(pair) != [("conflict", round_ + 2), ("won", round_ + 2)]:
                problems.append(f"round {round_}: outcomes {pair}")
        agent = repo.get("contested")
        winner = 0 if outcomes[0][-1][0] == "won" else 1
        final = (agent.metadata.version, agent.description)
        if final != (rounds + 1, f"round {rounds - 1} won by worker {winner}"):
            problems.append(f"after {rounds} rounds the agent is at {final}")
        return problems
    finally:
        repo.close()


def update_storm(url: str, *, processes: int, updates: int) -> list[str]:
    """``processes`` workers update one agent ``updates`` times each without
    ``expected_version``, each worker its own field. Every update must get its own version
    (2..N+1, none twice), return what it wrote, and leave the other fields alone."""
    repo = _opened(url)
    try:
        repo.create(agent_config("shared"))
        repo.record_execution("shared", children.crash_record(2))
        ctx = context()
        barrier = ctx.Barrier(processes, timeout=TIMEOUT)
        obtained = run_children(
            ctx,
            children.update_own_field,
            [(url, worker, updates, "shared", barrier) for worker in range(processes)],
            timeout=TIMEOUT,
        )
        problems = []
        versions = sorted(version for worker in obtained for version, _ in worker)
        if versions != list(range(2, processes * updates + 2)):
            duplicated = sorted({v for v in versions if versions.count(v) > 1})[:5]
            problems.append(f"versions are not 2..{processes * updates + 1}: twice {duplicated}")
        for worker, results in enumerate(obtained):
            for k, (version, fields) in enumerate(results):
                if fields != children.field_update(worker, k).changes():
                    problems.append(f"worker {worker} update {k} (v{version}) returned {fields}")
            if [v for v, _ in results] != sorted(v for v, _ in results):
                problems.append(f"worker {worker}: versions out of order")
        agent = repo.get("shared")
        final: dict[str, Any] = {}
        for worker in range(processes):
            final |= children.field_update(worker, updates - 1).changes()
        stored = {field: getattr(agent, field) for field in final}
        if stored != final:  # a stale write overwrote another worker's field
            problems.append(f"final fields {stored}, expected {final}")
        if agent.metadata.version != processes * updates + 1:
            problems.append(f"final version {agent.metadata.version}")
        meta = agent.metadata
        if (meta.execution_count, meta.success_count, meta.error_count) != (1, 1, 0):
            problems.append(f"updates changed the counters: {meta}")
        return problems + checks.tag_index_problems(repo, "shared", agent.tags)
    finally:
        repo.close()


def open_race(url: str, *, processes: int) -> list[str]:
    """``processes`` children open (and so migrate) the store at ``url`` at the same moment."""
    ctx = context()
    barrier = ctx.Barrier(processes, timeout=TIMEOUT)
    names = run_children(ctx, children.open_at_once, [(url, barrier)] * processes, timeout=TIMEOUT)
    return [] if len({tuple(n) for n in names}) == 1 else [f"children saw {names}"]


# -- killed with SIGKILL --------------------------------------------------------------------------


def _kill(
    repo: SqlAgentRepository,
    ctx: ForkServerContext,
    target: Callable[..., None],
    url: str,
    *args: Any,
    delay: float,
) -> None:
    """Run ``target(url, *args, ready)`` in a child, SIGKILL it ``delay`` seconds after it is
    ready, and return once the store is done with it.

    On PostgreSQL the server session of a killed client can still be finishing its last statement
    (a COMMIT sent just before the kill commits after the client is gone), and a check reading
    meanwhile would see the store change under it. The child connects under its own
    ``application_name``; we wait until no session of that name is left.
    """
    postgresql = repo.engine.dialect.name == "postgresql"
    session = f"acti-killed-{uuid.uuid4().hex[:12]}"
    if postgresql:
        tagged = make_url(url).update_query_dict({"application_name": session})
        url = tagged.render_as_string(hide_password=False)
    KilledChild(ctx, target, url, *args).kill_after(delay)
    if postgresql:
        _wait_for_session_end(repo, session)


def _wait_for_session_end(repo: SqlAgentRepository, session: str, timeout: float = 60.0) -> None:
    """Wait until no PostgreSQL session with ``application_name`` = ``session`` is left."""
    query = sa.text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :s")
    deadline = time.monotonic() + timeout
    while True:
        with repo.engine.connect() as conn:  # a new transaction: pg_stat_activity is read afresh
            if not conn.execute(query, {"s": session}).scalar_one():
                return
        if time.monotonic() > deadline:
            raise ChildError(f"the server session of killed child {session} did not end")
        time.sleep(0.005)


def _kill_cycles(
    repo: SqlAgentRepository,
    url: str,
    target: Callable[..., None],
    check: Callable[[SqlAgentRepository, str], list[str]],
    *,
    cycles: int,
    max_run: float,
) -> list[str]:
    """Kill ``cycles`` children running ``target`` on ``crash_target``, each after a random time
    in ``[0, max_run)`` past its first write; after each kill run the integrity check and
    ``check``. The next child re-runs the interrupted work on what the killed one left."""
    ctx, rng = context(), random.Random()
    problems: list[str] = []
    for cycle in range(cycles):
        _kill(repo, ctx, target, url, "crash_target", delay=rng.uniform(0, max_run))
        found = checks.sqlite_integrity_problems(repo.engine) + check(repo, "crash_target")
        problems += [f"cycle {cycle}: {problem}" for problem in found]
    return problems


def killed_records(url: str, *, cycles: int, max_run: float = 0.15) -> list[str]:
    """Children loop on ``record_execution`` and are killed: the counters must equal the runs
    committed, the history must be the newest of them with no gap, and recording goes on."""
    repo = _opened(url)
    try:
        repo.create(agent_config("crash_target"))
        for number in range(1, 46):  # close to the 50-record limit: most kills hit the FIFO trim
            repo.record_execution("crash_target", children.crash_record(number))
        problems = _kill_cycles(
            repo,
            url,
            children.record_until_killed,
            checks.history_problems,
            cycles=cycles,
            max_run=max_run,
        )
        count = repo.get("crash_target").metadata.execution_count
        if count < 45 + cycles:  # each child recorded at least once before it was killed
            problems.append(f"only {count - 45} runs recorded in {cycles} cycles")
        for number in range(count + 1, count + 4):
            repo.record_execution("crash_target", children.crash_record(number))
        if repo.get("crash_target").metadata.execution_count != count + 3:
            problems.append("recording did not go on from where the last child was killed")
        return problems + checks.history_problems(repo, "crash_target")
    finally:
        repo.close()


def killed_updates(url: str, *, cycles: int, max_run: float = 0.15) -> list[str]:
    """Children loop on ``update`` and are killed: the agent must always be one whole version
    (every field and the tag index of that version), the counters untouched, and updating goes
    on from the version left."""
    repo = _opened(url)
    try:
        repo.create(agent_config("crash_target"))
        repo.record_execution("crash_target", children.crash_record(1))
        problems = _kill_cycles(
            repo,
            url,
            children.update_until_killed,
            checks.update_problems,
            cycles=cycles,
            max_run=max_run,
        )
        version = repo.get("crash_target").metadata.version
        if version < 1 + cycles:  # each child updated at least once before it was killed
            problems.append(f"only {version - 1} updates in {cycles} cycles")
        meta = repo.get("crash_target").metadata
        if (meta.execution_count, meta.success_count, meta.error_count) != (1, 0, 1):
            problems.append(f"updates changed the counters: {meta}")
        repo.update("crash_target", children.crash_update(version + 1), expected_version=version)
        return problems + checks.update_problems(repo, "crash_target")
    finally:
        repo.close()


def _duration(operation: Callable[[], object]) -> float:
    started = time.monotonic()
    operation()
    return time.monotonic() - started


def killed_imports(url: str, *, cycles: int, files: int) -> list[str]:
    """Children import a folder of ``files`` agents (a new generation each cycle, replacing the
    last) and are killed: the store must hold every agent of one generation, never a mix or a
    part; re-running the import completes it."""
    names = [f"crash_agent_{i:04d}" for i in range(files)]
    repo = _opened(url)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) / "agents"
            children.write_generation(folder, names, 1)
            took = _duration(lambda: import_json(repo, folder))  # generation 1, not interrupted
            ctx, rng = context(), random.Random()
            problems: list[str] = []
            for generation in range(2, cycles + 2):
                children.write_generation(folder, names, generation)
                delay = rng.uniform(0, 1.5 * took)
                _kill(repo, ctx, children.import_until_killed, url, str(folder), delay=delay)
                found = checks.sqlite_integrity_problems(repo.engine)
                found += checks.store_generation_problems(repo, names, {generation - 1, generation})
                report = import_json(repo, folder, on_conflict="replace")
                if report.invalid or len(report.imported + report.replaced) != files:
                    found.append(f"re-running the import: {report}")
                found += checks.store_generation_problems(repo, names, {generation})
                problems += [f"generation {generation}: {problem}" for problem in found]
            return problems
    finally:
        repo.close()


def killed_exports(url: str, *, cycles: int, files: int) -> list[str]:
    """Children export ``files`` agents (whose descriptions change each cycle) and are killed:
    every ``*.json`` file must be a whole document, old or new; re-running the export completes
    it, and leaves no temporary file of the killed one behind."""
    names = [f"crash_agent_{i:04d}" for i in range(files)]
    repo = _opened(url)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            source, folder = Path(scratch) / "source", Path(scratch) / "export"
            children.write_generation(source, names, 1)
            import_json(repo, source)
            took = _duration(lambda: export_json(repo, Path(scratch) / "timing"))
            ctx, rng = context(), random.Random()
            problems: list[str] = []
            for generation in range(1, cycles + 1):
                with repo.engine.begin() as conn:  # every agent file must be rewritten
                    conn.execute(
                        sa.update(agents_table).values(
                            description=sa.literal(f"Generation {generation} of agent ")
                            + agents_table.c.name
                        )
                    )
                delay = rng.uniform(0, 1.5 * took)
                _kill(repo, ctx, children.export_until_killed, url, str(folder), delay=delay)
                allowed = {generation - 1, generation}
                found = checks.export_folder_problems(folder, names, allowed)
                export_json(repo, folder)
                found += checks.export_folder_problems(folder, names, {generation})
                leftovers = sorted(p.name for p in folder.iterdir() if p.suffix != ".json")
                if leftovers:
                    found.append(f"left behind: {leftovers[:3]}")
                problems += [f"generation {generation}: {problem}" for problem in found]
            return problems
    finally:
        repo.close()
