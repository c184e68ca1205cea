"""Client scaling on PostgreSQL: ``record_execution`` from 1, 4 and 16 client processes at once.

For each PostgreSQL backend (acti_store, the hand-written ``raw_psycopg``, LangGraph's
``PostgresStore``) and each client count, on a fresh store (its own schema): C processes, started
from a fork server (``tests.workers.harness``) and released together by a barrier, each record K
runs, one call after another, either each on an agent of its own (``distinct``) or all on one
agent (``shared``: every run contends for that agent's row). Every call is timed in its process.

Reported per cell: aggregate throughput (runs recorded / wall time from the first client's start to
the last one's end), p50 and p99 latency over every call, and the runs the store counted
(``total_executions`` summed over the agents): acti_store and raw_psycopg must count every run
(a loss is a failure); the peer's counters are read-modify-write, so its losses are reported.
The clients run on the same machine as the server: on 2 cores, 16 Python processes compete with
PostgreSQL for the CPU, which caps every backend's aggregate alike.

    python -m benchmarks.client_scaling --url postgresql+psycopg://postgres@127.0.0.1:5432/test
        [--clients 1 4 16] [--calls 200] [--backends raw_psycopg ...]

Also run by ``python -m benchmarks.run --postgres-url URL`` (``--no-client-scaling`` skips it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any, Final

from sqlalchemy.engine import make_url

from acti_store.models import AgentConfig, ExecutionRecord
from tests.workers.harness import context, run_children

from .backends import StoreSpec, open_backend
from .measure import percentile
from .report import ACTI_POSTGRES, POSTGRES_BACKENDS, RAW_PSYCOPG
from .stores import KIND_OF
from .workload import BASE_TIME, BenchClock

#: Backends that must count every run (the peer's losses are reported, not failures).
EXACT: Final = (ACTI_POSTGRES, RAW_PSYCOPG)
MODES: Final = ("distinct", "shared")
DEFAULT_CLIENTS: Final = (1, 4, 16)
DEFAULT_CALLS: Final = 200
TIMEOUT: Final = 900.0

#: ``fresh(label, tag)``: the spec of an empty PostgreSQL store for ``label``.
Fresh = Callable[[str, str], StoreSpec]


@dataclass(frozen=True)
class Cell:
    """One backend, one mode, one client count."""

    backend: str
    mode: str
    clients: int
    runs: int
    seconds: float
    p50_ms: float
    p99_ms: float
    counted: int

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.seconds if self.seconds > 0 else float("inf")

    @property
    def lost(self) -> int:
        return self.runs - self.counted

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"runs_per_s": self.runs_per_s, "lost": self.lost}


def _config(name: str) -> AgentConfig:
    return AgentConfig.model_validate(
        {
            "name": name,
            "description": "Records runs for the client-scaling probe",
            "system_prompt": "You are a probe agent: you only exist to have your runs recorded.",
            "tools": ["crm"],
            "stratum": "RAI",
            "tags": ["probe"],
        }
    )


def _records(worker: int, calls: int) -> list[ExecutionRecord]:
    return [
        ExecutionRecord(
            execution_id=str(uuid.UUID(int=(worker << 32) | i, version=4)),
            timestamp=BASE_TIME + timedelta(seconds=i, microseconds=worker),
            task=f"client {worker} run {i}",
            result_summary="ok" if i % 5 else "failed",
            success=bool(i % 5),
            duration_seconds=0.25,
            tool_calls_count=i % 4,
            error_type=None if i % 5 else "ToolError",
        )
        for i in range(calls)
    ]


def client(spec_json: str, worker: int, calls: int, agent: str, barrier: Any) -> dict[str, Any]:
    """One client process: open the store, wait for the others, record ``calls`` runs on
    ``agent``; returns its start and end (``CLOCK_MONOTONIC``, shared by the processes) and the
    latency of each call in nanoseconds."""
    backend = open_backend(StoreSpec.from_json(spec_json), BenchClock())
    try:
        records = _records(worker, calls)
        barrier.wait()
        latencies = []
        start = time.monotonic()
        for record in records:
            began = time.perf_counter_ns()
            backend.record_execution(agent, record)
            latencies.append(time.perf_counter_ns() - began)
        end = time.monotonic()
    finally:
        backend.close()
    return {"start": start, "end": end, "latencies": latencies}


def measure_cell(fresh: Fresh, label: str, mode: str, clients: int, calls: int) -> Cell:
    spec = fresh(label, f"scaling_{mode}_{clients}")
    backend = open_backend(spec, BenchClock(BASE_TIME - timedelta(days=1)))
    try:
        agents = [f"probe_{mode}_{i:02d}" for i in range(clients if mode == "distinct" else 1)]
        for name in agents:
            backend.create(_config(name))
        ctx = context()
        barrier = ctx.Barrier(clients, timeout=TIMEOUT)
        outcomes = run_children(
            ctx,
            client,
            [(spec.to_json(), w, calls, agents[w % len(agents)], barrier) for w in range(clients)],
            timeout=TIMEOUT,
        )
        counted = sum(
            backend.history_document(backend.get_history(name, 1))["total_executions"]
            for name in agents
        )
    finally:
        backend.close()
    latencies = sorted(ns / 1e6 for outcome in outcomes for ns in outcome["latencies"])
    seconds = max(o["end"] for o in outcomes) - min(o["start"] for o in outcomes)
    return Cell(
        backend=label,
        mode=mode,
        clients=clients,
        runs=len(latencies),
        seconds=seconds,
        p50_ms=statistics.median(latencies),
        p99_ms=percentile(latencies, 0.99),
        counted=counted,
    )


def run_scaling(
    fresh: Fresh,
    labels: Sequence[str] = POSTGRES_BACKENDS,
    clients: Sequence[int] = DEFAULT_CLIENTS,
    calls: int = DEFAULT_CALLS,
    log: Callable[[str], None] = print,
) -> list[Cell]:
    """Every (mode, client count, backend) cell, in that order. Within a step the backends take
    turns going first: commit latency on a shared machine drifts (other jobs' disk flushes), and
    a fixed order would hand the same backend the same moment of each step."""
    cells = []
    for step, (mode, count) in enumerate((m, c) for m in MODES for c in clients):
        turn = step % len(labels)
        for label in [*labels[turn:], *labels[:turn]]:
            cell = measure_cell(fresh, label, mode, count, calls)
            log(
                f"  {label} {mode} x{count}: {cell.runs_per_s:,.0f} runs/s, "
                f"p99 {cell.p99_ms:.1f} ms, lost {cell.lost}"
            )
            cells.append(cell)
    order = {label: i for i, label in enumerate(labels)}
    return sorted(
        cells, key=lambda c: (MODES.index(c.mode), list(clients).index(c.clients), order[c.backend])
    )


def problems(cells: Sequence[Cell]) -> list[str]:
    """Lost counts of the backends that must count every run."""
    return [
        f"{c.backend} {c.mode} x{c.clients}: counted {c.counted} of {c.runs} runs"
        for c in cells
        if c.backend in EXACT and c.lost
    ]


def render(cells: Sequence[dict[str, Any]]) -> str:
    """The table, from ``Cell.as_dict()`` rows (as the results file keeps them)."""
    if not cells:
        return ""
    calls = cells[0]["runs"] // cells[0]["clients"]
    header = (
        f"{'client scaling':<24} {'agents':<9} {'clients':>7} {'runs':>6} {'runs/s':>8} "
        f"{'vs psycopg':>10} {'p50 ms':>8} {'p99 ms':>8} {'lost':>6}"
    )
    lines = [
        f"record_execution from C client processes at once, {calls} runs each; distinct: an agent "
        "per client, shared: one agent for all; lost = runs - total_executions",
        header,
        "-" * len(header),
    ]
    for row in cells:
        raw = next(
            (
                r
                for r in cells
                if r["backend"] == RAW_PSYCOPG
                and (r["mode"], r["clients"]) == (row["mode"], row["clients"])
            ),
            None,
        )
        ratio = f"{row['runs_per_s'] / raw['runs_per_s']:.2f}x" if raw else "-"
        lines.append(
            f"{row['backend']:<24} {row['mode']:<9} {row['clients']:>7} {row['runs']:>6} "
            f"{row['runs_per_s']:>8,.0f} {ratio:>10} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} "
            f"{row['lost']:>6}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Standalone: schemas of their own in the database at --url, dropped after
# --------------------------------------------------------------------------------------------------


@contextmanager
def schemas(url: str) -> Iterator[Fresh]:
    """``fresh`` stores in the database at ``url``: a new schema each, all dropped at the end."""
    import psycopg

    from .backends.raw_psycopg import libpq_url

    base = make_url(url).set(drivername="postgresql+psycopg")
    admin = psycopg.connect(libpq_url(base.render_as_string(hide_password=False)), autocommit=True)
    made: list[str] = []

    def fresh(label: str, tag: str) -> StoreSpec:
        schema = f"acti_scaling_{tag}_{uuid.uuid4().hex[:8]}"
        admin.execute(f'CREATE SCHEMA "{schema}"')
        made.append(schema)
        store = base.update_query_dict({"options": f"-csearch_path={schema}"})
        return StoreSpec(KIND_OF[label], label, store.render_as_string(hide_password=False))

    try:
        yield fresh
    finally:
        for schema in made:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.client_scaling", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--url", required=True, help="PostgreSQL database (schemas made there)")
    parser.add_argument("--clients", type=int, nargs="+", default=list(DEFAULT_CLIENTS))
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="runs per client")
    parser.add_argument(
        "--backends", nargs="+", choices=POSTGRES_BACKENDS, default=list(POSTGRES_BACKENDS)
    )
    parser.add_argument("--json", help="also write the cells to this file")
    args = parser.parse_args(argv)
    with schemas(args.url) as fresh:
        cells = run_scaling(fresh, args.backends, args.clients, args.calls)
    rows = [c.as_dict() for c in cells]
    print()
    print(render(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows, out, indent=2)
    found = problems(cells)
    for problem in found:
        print(f"LOST COUNTS: {problem}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
