"""The long versions of the multi-process guarantee tests: many processes, many calls, many kills.

Runs the scenarios of ``tests/workers/scenarios.py`` (the ones ``tests/test_concurrency.py``,
``tests/test_crash_safety.py`` and ``tests/test_schema_safety.py`` run small) with larger numbers,
each on a fresh store: a temporary SQLite file, and/or a temporary schema of the PostgreSQL
database named by ``--postgres-url`` (default ``$ACTI_STORE_TEST_POSTGRES_URL``), dropped after.
Prints what each scenario checked and every problem found; exits 1 if any guarantee broke::

    python -m benchmarks.stress --processes 8 --calls 2500 --kill-cycles 100 --engine both
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.workers import scenarios

POSTGRES_ENV = "ACTI_STORE_TEST_POSTGRES_URL"
#: Problems printed per failed scenario (the rest are counted).
SHOWN_PROBLEMS = 20

Fresh = Callable[[], AbstractContextManager[str]]


@dataclass(frozen=True)
class Scenario:
    name: str
    #: What a pass proves, with ``{option}`` placeholders filled from the arguments.
    checks: str
    run: Callable[[Fresh, argparse.Namespace], list[str]]


def _once(run: Callable[[str, argparse.Namespace], list[str]]) -> Callable[..., list[str]]:
    """A scenario that runs once on one fresh store."""

    def on_fresh_store(fresh: Fresh, args: argparse.Namespace) -> list[str]:
        with fresh() as url:
            return run(url, args)

    return on_fresh_store


def _open_rounds(fresh: Fresh, args: argparse.Namespace) -> list[str]:
    problems: list[str] = []
    for round_ in range(args.open_rounds):
        with fresh() as url:
            found = scenarios.open_race(url, processes=args.processes)
        problems += [f"round {round_}: {problem}" for problem in found]
    return problems


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "records-one-agent",
        "{processes} processes x {calls} record_execution calls on one agent at once: no call "
        "failed (no 'database is locked', no serialization error); execution_count, "
        "success_count + error_count and total_executions exact; the 50 records kept are exactly "
        "the 50 newest inserted, each process's in call order",
        _once(
            lambda url, a: scenarios.record_storm(
                url, processes=a.processes, calls=a.calls, agents=1
            )
        ),
    ),
    Scenario(
        "records-spread",
        "the same spread round-robin over {agents} agents: the same checks per agent",
        _once(
            lambda url, a: scenarios.record_storm(
                url, processes=a.processes, calls=a.calls, agents=a.agents
            )
        ),
    ),
    Scenario(
        "version-race",
        "2 processes read version N then update with expected_version=N, {race_rounds} rounds: "
        "each round exactly one won (N+1), the other got VersionConflictError",
        _once(lambda url, a: scenarios.version_race(url, rounds=a.race_rounds)),
    ),
    Scenario(
        "update-storm",
        "{update_processes} processes x {updates} updates without expected_version, each its own "
        "field: versions 2..N+1 each returned once, no field overwritten by a stale write, tag "
        "index in step, counters untouched",
        _once(
            lambda url, a: scenarios.update_storm(
                url, processes=a.update_processes, updates=a.updates
            )
        ),
    ),
    Scenario(
        "killed-records",
        "{kill_cycles} SIGKILLs at random moments of record_execution loops: store valid "
        "(SQLite integrity_check), counters equal the runs committed, history = the newest runs "
        "with no gap, recording resumes where the killed process stopped",
        _once(lambda url, a: scenarios.killed_records(url, cycles=a.kill_cycles)),
    ),
    Scenario(
        "killed-updates",
        "{kill_cycles} SIGKILLs at random moments of update loops: the agent is always one whole "
        "version (fields and tag index), counters untouched, updating resumes",
        _once(lambda url, a: scenarios.killed_updates(url, cycles=a.kill_cycles)),
    ),
    Scenario(
        "killed-imports",
        "{kill_cycles} SIGKILLs at random moments of importing {files} agent files: every agent "
        "of one generation or none, never a part or a mix; re-running the import completes it",
        _once(lambda url, a: scenarios.killed_imports(url, cycles=a.kill_cycles, files=a.files)),
    ),
    Scenario(
        "killed-exports",
        "{kill_cycles} SIGKILLs at random moments of exporting {files} agents: every *.json file "
        "whole and valid (old or new), re-running the export completes it, no temporary file left",
        _once(lambda url, a: scenarios.killed_exports(url, cycles=a.kill_cycles, files=a.files)),
    ),
    Scenario(
        "open-race",
        "{processes} processes open (and migrate) a fresh store at the same moment, "
        "{open_rounds} times: all succeeded",
        _open_rounds,
    ),
)


@contextmanager
def sqlite_store() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="acti_stress_") as directory:
        yield f"sqlite:///{directory}/store.db"


def postgres_store(admin_url: str) -> Fresh:
    """Fresh stores in the PostgreSQL database at ``admin_url``: one new schema each, dropped
    after; the store URL selects it with ``search_path`` so that child processes can open it."""

    @contextmanager
    def fresh() -> Iterator[str]:
        schema = f"acti_stress_{uuid.uuid4().hex[:12]}"
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
            url = make_url(admin_url).update_query_dict({"options": f"-csearch_path={schema}"})
            yield url.render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            admin.dispose()

    return fresh


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stress", description=__doc__)
    parser.add_argument("--engine", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get(POSTGRES_ENV),
        help=f"database for the PostgreSQL runs (default: ${POSTGRES_ENV})",
    )
    parser.add_argument("--processes", type=int, default=8, help="concurrent processes")
    parser.add_argument("--calls", type=int, default=2500, help="record_execution calls each")
    parser.add_argument("--agents", type=int, default=10, help="agents of the spread run")
    parser.add_argument("--race-rounds", type=int, default=200)
    parser.add_argument("--update-processes", type=int, default=4)
    parser.add_argument("--updates", type=int, default=250, help="updates per process")
    parser.add_argument("--kill-cycles", type=int, default=100, help="SIGKILLs per operation")
    parser.add_argument("--files", type=int, default=300, help="agents per import/export")
    parser.add_argument("--open-rounds", type=int, default=20)
    parser.add_argument(
        "--only", nargs="+", choices=[s.name for s in SCENARIOS], help="run only these"
    )
    args = parser.parse_args(argv)
    if args.engine != "sqlite" and not args.postgres_url:
        parser.error(f"--postgres-url (or ${POSTGRES_ENV}) is needed for PostgreSQL runs")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    engines: dict[str, Fresh] = {}
    if args.engine in ("sqlite", "both"):
        engines["sqlite"] = sqlite_store
    if args.engine in ("postgresql", "both"):
        engines["postgresql"] = postgres_store(args.postgres_url)
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    failed = 0
    for engine, fresh in engines.items():
        for scenario in chosen:
            print(f"[{engine}] {scenario.name}: {scenario.checks.format(**vars(args))}", flush=True)
            started = time.monotonic()
            try:
                problems = scenario.run(fresh, args)
            except Exception as exc:  # a child failed (e.g. "database is locked"): report it
                problems = [f"{type(exc).__name__}: {exc}"]
            took = time.monotonic() - started
            if problems:
                failed += 1
                print(f"    FAILED in {took:.1f}s: {len(problems)} problems", flush=True)
                for problem in problems[:SHOWN_PROBLEMS]:
                    print(f"      - {problem}", flush=True)
            else:
                print(f"    ok in {took:.1f}s", flush=True)
    total = len(engines) * len(chosen)
    print(f"{total - failed} of {total} scenarios held every guarantee.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
