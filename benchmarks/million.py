"""acti_store at scale: a store of up to a million agents with histories, on SQLite and PostgreSQL.

    python -m benchmarks.million [--sizes 100000 1000000] [--postgres-url URL]
                                 [--out benchmarks/results] [--name million] [--workdir DIR]

For each size and engine (a SQLite file always; with ``--postgres-url`` a schema of a database
created for the run and dropped at the end, as ``benchmarks.run`` does it), a store of ``size``
agents is built through ``bulk_put`` in chunks of 2,000 (``benchmarks.run.build_scale_stores`` on
``workload.bulk_agents``: about 45 % of the agents have run, their newest ``min(runs, 50)``
records kept; most keep 0-3, about 1.5 % the full 50; deterministic for ``--seed``). Both engines
are fed from one pass of the generator; the build is not timed (its time is printed). Then:

* ``get`` of 2,000 random names and 2,000 ``record_execution`` calls (60 % to a hot 2 % of the
  agents, the rest Zipf over all, as ``workload.py`` does): median and p90;
* the workload's searches, 20 of each kind (word, two_words, ..., everything): median and p90 per
  kind;
* the ``list_created_agents`` tool on the store, invoked as a model does: characters of its text
  and bytes of its artifact's JSON (both bounded by design, whatever the store's size);
* the database's size on disk: the SQLite file and its ``-wal`` after a checkpoint, or
  ``pg_total_relation_size`` summed over the store's schema;
* export of the whole store and import into an empty store, each in a fresh subprocess
  (``benchmarks.probe``): wall time, agents/s and the peak RSS of the process while it ran
  (``VmHWM`` after ``/proc/self/clear_refs``). The export must hold one file per agent and one
  per agent that ran; the imported store must count every agent, and a sample must read back as
  its files say.

Exit 1 if a check fails or a target is missed: the peak RSS of export and import at the largest
size at most 1.2x the figure at the size before it (memory must not grow with the agents).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, Final

import sqlalchemy

from acti_store.models import SearchQuery
from acti_store.tools import make_builder_tools

from .backends import Backend, StoreSpec, open_backend
from .backends.acti import ActiStoreBackend
from .checks import Checker, first_difference
from .code_state import code_fingerprint
from .measure import percentile, run_probe
from .million_config import DEFAULT_SIZES, GETS, RECORDS, SEARCHES_PER_KIND, MillionConfig
from .million_report import READ_BACK_SAMPLE, meta, render, targets, write_results
from .report import ACTI_POSTGRES, ACTI_SQLITE, REFERENCE
from .run import build_scale_stores
from .run_config import DEFAULT_SEED, BenchConfig, Run
from .stores import Stores
from .workload import (
    SEARCH_KINDS,
    BenchClock,
    WorkloadSize,
    _execution_targets,
    _names,
    _record,
    bulk_span,
    created_at,
    make_searches,
    search_kind,
)

#: The runs recorded start this long after the last instant the built store holds.
RUNS_AFTER: Final = timedelta(days=200)
ENGINES: Final = {ACTI_SQLITE: "sqlite", ACTI_POSTGRES: "postgresql"}

perf = time.perf_counter_ns


@dataclass
class Measured:
    """Every figure of one engine at one size (one element of the results' ``results``)."""

    engine: str
    agents: int
    figures: dict[str, Any] = field(default_factory=dict)
    #: Wall seconds of each phase (build, get, record_execution, search, ..., export, import).
    phases: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def latency(latencies_ns: Sequence[int]) -> dict[str, float]:
    """Median and p90 (nearest rank) in milliseconds, and the number of calls."""
    ms = sorted(ns / 1e6 for ns in latencies_ns)
    return {"calls": len(ms), "median_ms": statistics.median(ms), "p90_ms": percentile(ms, 0.9)}


def timed(calls: Sequence[Callable[[], object]]) -> list[int]:
    """Each call's time in nanoseconds, after a garbage collection."""
    gc.collect()
    latencies = []
    for call in calls:
        start = perf()
        call()
        latencies.append(perf() - start)
    return latencies


# --------------------------------------------------------------------------------------------------
# The phases on a built store
# --------------------------------------------------------------------------------------------------


def measure_gets(
    backend: Backend, names: Sequence[str], rng: random.Random, count: int
) -> dict[str, float]:
    chosen = rng.choices(names, k=count)
    return latency(timed([partial(backend.get, name) for name in chosen]))


def measure_records(
    backend: Backend, names: Sequence[str], rng: random.Random, agents: int, count: int
) -> dict[str, float]:
    """``record_execution`` to hot and Zipf-chosen agents, at instants after the whole store's."""
    start = created_at(agents) + RUNS_AFTER
    calls = []
    clock = backend.clock
    for k, name in enumerate(_execution_targets(rng, names, count)):
        record = _record(rng, start + k * timedelta(seconds=7))

        def call(name: str = name, record: Any = record) -> None:
            if isinstance(clock, BenchClock):
                clock.set(record.timestamp)
            backend.record_execution(name, record)

        calls.append(call)
    return latency(timed(calls))


def measure_searches(
    backend: Backend, searches: Sequence[SearchQuery]
) -> tuple[dict[str, dict[str, float]], int]:
    """Median and p90 per search kind; how many searches found agents."""
    found: list[int] = []

    def call(query: SearchQuery) -> None:
        found.append(len(backend.search(query)))

    latencies = timed([partial(call, query) for query in searches])
    by_kind: dict[str, list[int]] = {}
    for i, ns in enumerate(latencies):
        by_kind.setdefault(search_kind(i), []).append(ns)
    return {kind: latency(by_kind[kind]) for kind in SEARCH_KINDS}, sum(1 for n in found if n)


def measure_listing(backend: Backend) -> dict[str, Any]:
    """The ``list_created_agents`` tool invoked as a model does: its text and artifact sizes."""
    assert isinstance(backend, ActiStoreBackend)
    tool = {t.name: t for t in make_builder_tools(backend.repo)}["list_created_agents"]
    call = {"type": "tool_call", "id": "1", "name": tool.name, "args": {}}
    start = perf()
    message = tool.invoke(call)
    seconds = (perf() - start) / 1e9
    artifact = message.artifact
    return {
        "text_chars": len(str(message.content)),
        "artifact_bytes": len(json.dumps(artifact, ensure_ascii=False).encode()),
        "total": artifact.get("total"),
        "ms": seconds * 1e3,
    }


def database_bytes(spec: StoreSpec) -> dict[str, int]:
    """The store's size on disk; the store must be closed (SQLite is checkpointed first)."""
    if spec.location.startswith("sqlite:///"):
        path = Path(spec.location.removeprefix("sqlite:///"))
        checkpoint = sqlite3.connect(path)
        try:
            checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            checkpoint.close()
        wal = path.with_name(path.name + "-wal")
        sizes = {"file": path.stat().st_size, "wal": wal.stat().st_size if wal.exists() else 0}
        return sizes | {"total": sizes["file"] + sizes["wal"]}
    engine = sqlalchemy.create_engine(spec.location)
    try:
        with engine.connect() as conn:
            total: int = conn.exec_driver_sql(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm', 'p')"
            ).scalar_one()
    finally:
        engine.dispose()
    return {"total": int(total)}


def check_export_import(
    measured: Measured, source: Backend, target: StoreSpec, folder: Path
) -> dict[str, int]:
    """The export holds a file per agent and per agent that ran; the imported store counts every
    agent; a sample of them reads back as its files say. Problems go to ``measured.problems``."""
    assert isinstance(source, ActiStoreBackend)
    files = sorted(os.listdir(folder))
    histories = sum(1 for f in files if f.endswith("_history.json"))
    agent_files = [f for f in files if f.endswith(".json") and not f.endswith("_history.json")]
    ran = source.repo.count({"min_executions": 1})
    imported = open_backend(target, BenchClock())
    try:
        assert isinstance(imported, ActiStoreBackend)
        count = imported.repo.count({})
        sample = agent_files[:: max(1, len(agent_files) // READ_BACK_SAMPLE)]
        for file in sample:
            name = file.removesuffix(".json")
            history = folder / f"{name}_history.json"
            expected = {
                "agent": json.loads((folder / file).read_bytes()),
                "history": json.loads(history.read_bytes()) if history.exists() else None,
            }
            actual = {
                "agent": imported.agent_document(imported.get(name)),
                "history": imported.history_document(imported.get_history(name, 50))
                if history.exists()
                else None,
            }
            if diff := first_difference(expected, actual):
                measured.problems.append(f"import read back {name}: {diff}")
    finally:
        imported.close()
    for what, got, want in (
        ("agent files", len(agent_files), measured.agents),
        ("history files", histories, ran),
        ("imported agents", count, measured.agents),
    ):
        if got != want:
            measured.problems.append(f"{what}: {got:,}, expected {want:,}")
    return {
        "agent_files": len(agent_files),
        "history_files": histories,
        "agents_that_ran": ran,
        "imported_agents": count,
        "read_back": len(sample),
    }


def probe(
    spec: StoreSpec, op: str, folder: Path, agents: int, code: str, *, inline: bool
) -> dict[str, Any]:
    """Export or import in a fresh subprocess: time, agents/s, peak RSS (``benchmarks.probe``;
    in this process when ``inline``, whose peak is then this process's)."""
    result = run_probe(spec, op, folder, code, inline=inline)
    return {
        "inline": inline,
        "seconds": result["seconds"],
        "agents_per_s": agents / result["seconds"],
        "peak_rss_mb": result["peak_rss_mb"],
        "baseline_rss_mb": result["baseline_rss_mb"],
        "delta_rss_mb": result["delta_rss_mb"],
        "peak_since": result["peak_since"],
        "path": result["path"],
    }


# --------------------------------------------------------------------------------------------------
# One size
# --------------------------------------------------------------------------------------------------


def measure_store(
    measured: Measured,
    backend: Backend,
    names: Sequence[str],
    searches: Sequence[SearchQuery],
    config: MillionConfig,
) -> None:
    """get, record_execution, search and the listing on the open store ``backend``."""
    rng = random.Random(config.seed + 3)
    phases = measured.phases
    label = f"{measured.engine} @{measured.agents:,}"

    def phase(name: str, run: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = run()
        phases[name] = time.perf_counter() - start
        log(f"  {label}: {name} {phases[name]:.1f} s")
        return result

    figures = measured.figures
    figures["get"] = phase("get", lambda: measure_gets(backend, names, rng, config.gets))
    figures["record_execution"] = phase(
        "record_execution",
        lambda: measure_records(backend, names, rng, measured.agents, config.records),
    )
    figures["search"], with_results = phase("search", lambda: measure_searches(backend, searches))
    figures["searches_with_results"] = with_results
    figures["list"] = phase("list", lambda: measure_listing(backend))
    if figures["list"]["total"] != measured.agents:
        measured.problems.append(f"list total {figures['list']['total']}, not {measured.agents}")


def export_and_import(
    measured: Measured, spec: StoreSpec, stores: Stores, code: str, tag: str, *, inline: bool
) -> None:
    """Export the store (closed meanwhile) and import it into an empty one, each in a subprocess;
    then the checks. The export folder and the SQLite files are removed afterwards."""
    label = f"{measured.engine} @{measured.agents:,}"
    folder = stores.workdir / f"export-{tag}"
    folder.mkdir()
    target = stores.spec(spec.label, f"{tag}_imported")
    try:
        for op, store in (("export", spec), ("import", target)):
            figures = probe(store, op, folder, measured.agents, code, inline=inline)
            measured.figures[op] = figures
            measured.phases[op] = figures["seconds"]
            log(
                f"  {label}: {op} {figures['seconds']:.1f} s, "
                f"{figures['agents_per_s']:,.0f} agents/s, peak RSS {figures['peak_rss_mb']:.0f} MB"
            )
        start = time.perf_counter()
        source = open_backend(spec, BenchClock())
        try:
            measured.figures["checks"] = check_export_import(measured, source, target, folder)
        finally:
            source.close()
        measured.phases["checks"] = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for store in (spec, target):
            if store.location.startswith("sqlite:///"):
                path = Path(store.location.removeprefix("sqlite:///"))
                for extra in ("", "-wal", "-shm"):
                    path.with_name(path.name + extra).unlink(missing_ok=True)


def run_size(agents: int, config: MillionConfig, stores: Stores, code: str) -> list[Measured]:
    """Build the stores of ``agents`` agents (every engine from one pass of the generator) and
    measure each engine in turn."""
    labels = [ACTI_SQLITE] + ([ACTI_POSTGRES] if config.postgres_url else [])
    tag = f"m{agents}"
    specs = {label: stores.spec(label, tag) for label in labels}
    bench = BenchConfig(size=WorkloadSize(), search_agents=agents, seed=config.seed, scale_io=True)
    run = Run(bench, stores, Checker(REFERENCE))
    log(f"{agents:,} agents: building {', '.join(labels)} (bulk_put, not timed)")
    start = time.perf_counter()
    backends = build_scale_stores(run, list(specs.values()))
    build_wall = time.perf_counter() - start
    log(f"  built in {build_wall:.1f} s (generating the agents included)")
    #: ``bulk_agents`` draws the names first from ``Random(seed + 1)``: the same names.
    names = _names(random.Random(config.seed + 1), agents)
    searches = make_searches(
        random.Random(config.seed + 2),
        config.searches_per_kind * len(SEARCH_KINDS),
        bulk_span(agents),
    )
    results = []
    try:
        for label in labels:
            measured = Measured(ENGINES[label], agents)
            measured.phases["build"] = run.notes["scale_build_seconds"][label]
            measured.figures["build_wall_s"] = build_wall
            backend = backends.pop(label)
            try:
                measure_store(measured, backend, names, searches, config)
            finally:
                backend.close()
            measured.figures["database_bytes"] = database_bytes(specs[label])
            export_and_import(
                measured,
                specs[label],
                stores,
                code,
                f"{tag}-{ENGINES[label]}",
                inline=config.inline_io,
            )
            for problem in measured.problems:
                log(f"  PROBLEM {measured.engine} @{agents:,}: {problem}")
            results.append(measured)
    finally:
        for backend in backends.values():
            backend.close()
    return results


def run_million(config: MillionConfig) -> dict[str, Any]:
    """Every size on every engine; returns the results document."""
    started = time.perf_counter()
    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="acti-million-", dir=config.workdir))
    stores = Stores(workdir, config.postgres_url)
    code = code_fingerprint()
    measured: list[Measured] = []
    try:
        for agents in config.sizes:
            measured += run_size(agents, config, stores, code)
    finally:
        stores.close()
        shutil.rmtree(workdir, ignore_errors=True)
    document: dict[str, Any] = {
        "meta": meta(config, code, load_before, time.perf_counter() - started),
        "results": [
            {"engine": m.engine, "agents": m.agents, **m.figures, "phases_s": m.phases}
            for m in measured
        ],
        "problems": [f"{m.engine} @{m.agents:,}: {p}" for m in measured for p in m.problems],
    }
    document["targets"] = targets(document["results"])
    return document


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> MillionConfig:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.million", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--postgres-url", help="also measure acti_store on PostgreSQL")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--name", default="million", help="result file stem")
    parser.add_argument("--workdir", type=Path, help="where the stores go (a temp dir)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--gets", type=int, default=GETS, help="gets of random names")
    parser.add_argument("--records", type=int, default=RECORDS, help="record_execution calls")
    parser.add_argument("--searches-per-kind", type=int, default=SEARCHES_PER_KIND)
    parser.add_argument(
        "--inline-io",
        action="store_true",
        help="export/import in this process (fast start, for smoke tests; no memory figure)",
    )
    parser.add_argument("--no-chart", action="store_true")
    args = parser.parse_args(argv)
    return MillionConfig(
        sizes=tuple(sorted(set(args.sizes))),
        postgres_url=args.postgres_url,
        out=args.out,
        name=args.name,
        workdir=args.workdir,
        seed=args.seed,
        chart=not args.no_chart,
        gets=args.gets,
        records=args.records,
        searches_per_kind=args.searches_per_kind,
        inline_io=args.inline_io,
    )


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    results = run_million(config)
    text = render(results)
    print()
    print(text)
    for path in write_results(config.out, config.name, results, text, chart=config.chart):
        print(f"wrote {path}")
    missed = any(t["met"] is False for t in results["targets"])
    return 1 if results["problems"] or missed else 0


if __name__ == "__main__":
    sys.exit(main())
