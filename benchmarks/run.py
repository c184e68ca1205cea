"""Benchmark acti_store against raw sqlite3 and the JSON-file design; check they all agree.

    python -m benchmarks.run [--agents 10000] [--search-agents 100000] [--postgres-url URL]
                             [--postgres-pooler-url URL] [--mysql-url URL]
                             [--out benchmarks/results] [--quick] [--no-client-scaling]

Phases, each backend in turn, all in one process (export/import in a subprocess each, for memory):

1. live workload at ``--agents`` N: create N agents (one call each), gets, updates,
   ``record_execution`` (Zipf-like, many agents past the 50-record FIFO), history reads, searches;
2. export every agent to contract-format files (compared byte for byte across backends), import
   them into an empty store; every imported agent and history must read back as its files say;
3. search at ``--search-agents`` M: a store built with each backend's bulk path (not timed), then
   the searches; with ``--scale-io``, export/import of that store too (peak memory at scale).

With ``--postgres-url``, acti_store[postgresql], the hand-written ``raw_psycopg`` and LangGraph's
``PostgresStore`` (``langgraph_pg``) run every phase too, each in a schema of a database created for
the run, and then the client-scaling probe (``client_scaling``: 1, 4, 16 client processes).
With ``--postgres-pooler-url`` too (the same server through a pooler in transaction mode, e.g.
PgBouncer), acti_store opened with ``pooler="transaction"`` through it runs every phase as one more
backend, acti_store[pg+pooler], on the same database (not in the client-scaling probe); its
ratios are printed against raw_psycopg and against acti_store[postgresql] (direct) of the run.
With ``--mysql-url`` (MariaDB/MySQL, ``mysql+pymysql://`` or ``mariadb+pymysql://``),
acti_store[mysql] and the hand-written ``raw_pymysql`` run every phase too, each store in a
database created for the run (no client-scaling probe).

Every answer is compared with raw sqlite3's (the reference); any difference is printed and makes the
exit status 1. Results go to ``<out>/<name>.json``, ``.txt`` and ``.png``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from . import client_scaling
from .backends import Backend, StoreSpec, open_backend
from .checks import Checker, check_import, digest, folder_digest
from .code_state import code_fingerprint
from .measure import OpStats, first_last, percentile, run_probe, summarize
from .report import (
    ACTI_MYSQL,
    ACTI_POSTGRES,
    ACTI_SQLITE,
    MYSQL_BACKENDS,
    ON_POSTGRES,
    POSTGRES_BACKENDS,
    RAW_PSYCOPG,
    RAW_PYMYSQL,
    REFERENCE,
)
from .results import document, print_mismatches, render, write_results
from .run_config import DEFAULT_SEED, BenchConfig, Run
from .stores import Stores, slug
from .workload import (
    BenchClock,
    Workload,
    WorkloadSize,
    bulk_agents,
    bulk_span,
    make_searches,
    make_workload,
    search_kind,
)

#: Backends whose export/import is measured at search scale (``--scale-io``; the server ones
#: when the run has them at that scale; not the peer, whose import alone takes an hour).
SCALE_IO_BACKENDS: Final = (
    REFERENCE,
    ACTI_SQLITE,
    RAW_PSYCOPG,
    ACTI_POSTGRES,
    RAW_PYMYSQL,
    ACTI_MYSQL,
)
#: Agents read back after each import at search scale (at N, all of them are).
SCALE_IMPORT_SAMPLE: Final = 2_000
# --------------------------------------------------------------------------------------------------
# The timed phases
# --------------------------------------------------------------------------------------------------

perf = time.perf_counter_ns


def _describe_query(query: Any) -> str:
    return json.dumps(query.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False)


def run_searches(
    run: Run,
    backend: Backend,
    label: str,
    op: str,
    searches: Sequence[Any],
    sample: int | None,
) -> None:
    """Time ``searches`` (the first ``sample`` only, when given) and record their answers."""
    chosen = list(enumerate(searches))[: sample if sample is not None else len(searches)]
    latencies, answers = [], {}
    gc.collect()
    for i, query in chosen:
        start = perf()
        found = backend.search(query)
        latencies.append(perf() - start)
        answers[i] = found
    stats = summarize(op, label, latencies)
    by_kind: dict[str, list[int]] = {}
    for (i, _), latency in zip(chosen, latencies, strict=True):
        by_kind.setdefault(search_kind(i), []).append(latency)
    stats.extra["median_ms_by_kind"] = {
        kind: statistics.median(values) / 1e6 for kind, values in by_kind.items()
    }
    stats.extra["p90_ms_by_kind"] = {
        kind: percentile(sorted(values), 0.9) / 1e6 for kind, values in by_kind.items()
    }
    if sample is not None and sample < len(searches):
        stats.extra["sampled"] = f"first {len(chosen)} of {len(searches)} searches"
    run.stats.append(stats)
    run.checker.add(
        op,
        label,
        {
            i: {
                "names": [backend.agent_document(a)["name"] for a in found],
                "documents": digest([backend.agent_document(a) for a in found]),
            }
            for i, found in answers.items()
        },
    )
    run.checker.labels[op] = [_describe_query(q) for q in searches]


def run_live(run: Run, spec: StoreSpec, workload: Workload) -> None:
    """The timed workload at N agents on the (empty) store ``spec``."""
    clock = BenchClock()
    label = spec.label
    backend = open_backend(spec, clock)
    checker = run.checker
    try:
        # create: one call per agent, as the tool does
        latencies, results = [], []
        gc.collect()
        for item in workload.creates:
            clock.set(item.at)
            start = perf()
            results.append(backend.create(item.config))
            latencies.append(perf() - start)
        run.stats.append(summarize("create", label, latencies))
        checker.add(
            "create",
            label,
            {i: digest(backend.agent_document(r)) for i, r in enumerate(results)},
        )
        checker.labels["create"] = [f"create {c.config.name}" for c in workload.creates]

        latencies, results = [], []
        gc.collect()
        for name in workload.gets:
            start = perf()
            results.append(backend.get(name))
            latencies.append(perf() - start)
        run.stats.append(summarize("get", label, latencies))
        checker.add("get", label, {i: backend.agent_document(r) for i, r in enumerate(results)})
        checker.labels["get"] = [f"get {name}" for name in workload.gets]

        latencies, results = [], []
        gc.collect()
        for update in workload.updates:
            clock.set(update.at)
            start = perf()
            results.append(backend.update(update.name, update.changes))
            latencies.append(perf() - start)
        run.stats.append(summarize("update", label, latencies))
        checker.add("update", label, {i: backend.agent_document(r) for i, r in enumerate(results)})
        checker.labels["update"] = [
            f"update {u.name} {sorted(u.changes.changes())}" for u in workload.updates
        ]

        latencies = []
        gc.collect()
        for execution in workload.executions:
            clock.set(execution.record.timestamp)
            start = perf()
            backend.record_execution(execution.name, execution.record)
            latencies.append(perf() - start)
        stats = summarize("record_execution", label, latencies)
        stats.extra["growth"] = first_last(latencies)
        run.stats.append(stats)

        latencies, results = [], []
        gc.collect()
        for name in workload.history_reads:
            start = perf()
            results.append(backend.get_history(name, workload.history_limit))
            latencies.append(perf() - start)
        run.stats.append(summarize("history_read", label, latencies))
        checker.add(
            "history_read", label, {i: backend.history_document(r) for i, r in enumerate(results)}
        )
        checker.labels["history_read"] = [f"history {n}" for n in workload.history_reads]

        sample = run.config.search_sample(label, scale=False)
        run_searches(run, backend, label, "search", workload.searches, sample)
    finally:
        backend.close()


def run_export(run: Run, live: StoreSpec, agents: int) -> Path:
    """Export the live store (timed, in a subprocess); returns the folder."""
    export_dir = run.stores.workdir / f"export-{slug(live.label)}"
    export_dir.mkdir()
    _probe(run, live, "export", export_dir, agents)
    return export_dir


def run_import(run: Run, label: str, export_dir: Path, agents: int) -> None:
    """Import a backend's export into an empty store (timed, in a subprocess); every agent must
    read back as its exported files say."""
    target = run.stores.spec(label, "imported")
    _probe(run, target, "import", export_dir, agents)
    check_import(run.checker, "import", target, export_dir)


def _probe(
    run: Run, spec: StoreSpec, op: str, directory: Path, agents: int, suffix: str = ""
) -> None:
    result = run_probe(spec, op, directory, run.notes["code"], inline=run.config.inline_io)
    keys = ("peak_rss_mb", "baseline_rss_mb", "delta_rss_mb", "peak_since", "path")
    extra = {k: result[k] for k in keys} | {"inline": run.config.inline_io}
    run.stats.append(OpStats(f"{op}{suffix}", spec.label, agents, result["seconds"], extra=extra))
    memory = (
        "in-process"
        if run.config.inline_io
        else f"peak RSS {result['peak_rss_mb']:.0f} MB (+{result['delta_rss_mb']:.0f})"
    )
    run.log(f"  {op}{suffix} {spec.label}: {result['seconds']:.1f} s, {memory}, {result['path']}")


def build_scale_stores(run: Run, specs: Sequence[StoreSpec]) -> dict[str, Backend]:
    """The M-agent stores, built chunk by chunk with each backend's bulk path (not timed)."""
    clock = BenchClock()
    backends = {spec.label: open_backend(spec, clock) for spec in specs}
    labels = list(backends)
    seconds = dict.fromkeys(labels, 0.0)
    for chunk in bulk_agents(
        run.config.search_agents, run.config.seed + 1, histories=run.config.scale_io
    ):
        for label, backend in backends.items():
            start = time.perf_counter()
            backend.bulk_load(chunk)
            seconds[label] += time.perf_counter() - start
    run.notes["scale_build_seconds"] = seconds
    run.log("  built: " + ", ".join(f"{label} {s:.1f} s" for label, s in seconds.items()))
    return backends


def run_scale(run: Run) -> None:
    config = run.config
    labels = [
        label
        for label in run.stores.labels
        if (label not in ON_POSTGRES or config.postgres_scale)
        and (label not in MYSQL_BACKENDS or config.mysql_scale)
    ]
    run.log(f"search scale: building {config.search_agents:,}-agent stores ({', '.join(labels)})")
    specs = {label: run.stores.spec(label, "scale") for label in labels}
    backends = build_scale_stores(run, list(specs.values()))
    searches = make_searches(
        random.Random(config.seed + 2), config.size.searches, bulk_span(config.search_agents)
    )
    try:
        for label, backend in backends.items():
            sample = config.search_sample(label, scale=True)
            run_searches(run, backend, label, "search_scale", searches, sample)
            run.log(f"  search @{config.search_agents:,} {label}: done")
    finally:
        for backend in backends.values():
            backend.close()
    if not config.scale_io:
        return
    exports: dict[str, tuple[Path, dict[str, str]]] = {}
    for label in (label for label in SCALE_IO_BACKENDS if label in specs):
        spec = specs[label]
        export_dir = run.stores.workdir / f"export-scale-{slug(label)}"
        export_dir.mkdir()
        _probe(run, spec, "export", export_dir, config.search_agents, "_scale")
        exports[label] = (export_dir, folder_digest(export_dir))
        target = run.stores.spec(label, "scale_imported")
        _probe(run, target, "import", export_dir, config.search_agents, "_scale")
        check_import(run.checker, "import_scale", target, export_dir, SCALE_IMPORT_SAMPLE)
    for label in exports:
        if label != REFERENCE:
            run.checker.compare_folders("export_scale", label, exports[REFERENCE], exports[label])
    for export_dir, _ in exports.values():
        shutil.rmtree(export_dir)


def run_live_phases(run: Run, workload: Workload) -> None:
    """Phase 1 on every backend, then phase 2: the exports back to back, the imports back to back
    (close in time, so that a burst of disk activity elsewhere hits them alike), and the exported
    folders compared across backends."""
    agents = workload.size.agents
    live: dict[str, StoreSpec] = {}
    for label in run.stores.labels:
        run.log(f"live workload at {agents:,} agents: {label}")
        live[label] = run.stores.spec(label, "live")
        run_live(run, live[label], workload)
    run.log(f"export and import at {agents:,} agents")
    exports = {label: run_export(run, spec, agents) for label, spec in live.items()}
    for label, export_dir in exports.items():
        run_import(run, label, export_dir, agents)
    reference = (exports[REFERENCE], folder_digest(exports[REFERENCE]))
    for label, directory in exports.items():
        if label != REFERENCE:
            run.checker.compare_folders(
                "export", label, reference, (directory, folder_digest(directory))
            )


def run_client_scaling(run: Run) -> None:
    """The client-scaling probe on the run's database; acti_store or raw_psycopg losing a count
    fails the run (the peer's losses are reported)."""
    clients, calls = run.config.scaling_clients, run.config.scaling_calls
    run.log(f"client scaling: {', '.join(map(str, clients))} client processes x {calls} runs")
    cells = client_scaling.run_scaling(
        run.stores.spec, POSTGRES_BACKENDS, clients, calls, log=run.log
    )
    run.notes["client_scaling"] = cells
    for problem in client_scaling.problems(cells):
        run.checker.fail("client scaling", problem.split(" ", 1)[0], problem)


def run_benchmark(config: BenchConfig) -> dict[str, Any]:
    """Run every phase; returns the results document (also written to ``config.out``)."""
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="acti-bench-", dir=config.workdir))
    stores = Stores(workdir, config.postgres_url, config.mysql_url, config.postgres_pooler_url)
    run = Run(config, stores, Checker(REFERENCE))
    run.notes["code"] = code_fingerprint()
    run.notes["load_before"] = os.getloadavg()
    workload = make_workload(config.size, config.seed) if config.live else None
    try:
        if workload is not None:
            run.log(f"workload: {config.size} seed={config.seed} (workdir {workdir})")
            run_live_phases(run, workload)
        run_scale(run)
        if config.postgres_url and config.scaling_probe:
            run_client_scaling(run)
    finally:
        stores.close()
        shutil.rmtree(workdir, ignore_errors=True)
    run.checker.compare()
    return document(run, workload, time.perf_counter() - started)


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> BenchConfig:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--agents", type=int, help="N: agents of the live workload (10000)")
    parser.add_argument("--search-agents", type=int, help="M: agents of the search store (100000)")
    parser.add_argument(
        "--postgres-url", help="also measure acti_store, raw_psycopg and langgraph_pg on it"
    )
    parser.add_argument(
        "--postgres-pooler-url",
        help="the same server through a pooler in transaction mode (PgBouncer): also measure "
        'acti_store opened with pooler="transaction" through it (needs --postgres-url)',
    )
    parser.add_argument(
        "--no-postgres-scale", action="store_true", help="PostgreSQL: skip the search at M"
    )
    parser.add_argument(
        "--mysql-url",
        help="MariaDB/MySQL (mysql+pymysql://...): also measure acti_store and raw_pymysql on it",
    )
    parser.add_argument(
        "--no-mysql-scale", action="store_true", help="MariaDB/MySQL: skip the search at M"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--name", help="result file stem (latest; quick with --quick)")
    parser.add_argument("--quick", action="store_true", help="smoke size: N=1000, M=5000")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--gets", type=int)
    parser.add_argument("--updates", type=int)
    parser.add_argument("--searches", type=int)
    parser.add_argument("--executions", type=int, help="record_execution calls (2 x N)")
    parser.add_argument("--history-reads", type=int)
    parser.add_argument("--json-search-sample", type=int, default=20)
    parser.add_argument("--json-search-sample-scale", type=int, default=5)
    parser.add_argument("--peer-search-sample", type=int, help="langgraph_pg: first K at N (all)")
    parser.add_argument("--peer-search-sample-scale", type=int, default=20)
    parser.add_argument(
        "--no-client-scaling", action="store_true", help="PostgreSQL: skip the client-scaling probe"
    )
    parser.add_argument("--scaling-clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--scaling-calls", type=int, default=200, help="runs per client process")
    parser.add_argument(
        "--scale-io",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also export/import the M-agent store, built with histories (slow: minutes)",
    )
    parser.add_argument(
        "--inline-io",
        action="store_true",
        help="export/import in this process (fast start, for smoke tests; memory not comparable)",
    )
    parser.add_argument(
        "--no-live", action="store_true", help="skip the N-agent workload: only the M-agent phase"
    )
    parser.add_argument("--no-chart", action="store_true")
    parser.add_argument("--workdir", type=Path, help="where the stores go (a temp dir)")
    args = parser.parse_args(argv)
    if args.postgres_pooler_url and not args.postgres_url:
        parser.error("--postgres-pooler-url needs --postgres-url (the same server, directly)")

    quick = args.quick
    agents = args.agents or (1_000 if quick else 10_000)
    base = WorkloadSize(
        agents=agents,
        gets=500 if quick else 2_000,
        updates=200 if quick else 500,
        searches=100 if quick else 200,
        executions=2 * agents,
        history_reads=500 if quick else 2_000,
    )
    counts = ("gets", "updates", "searches", "executions", "history_reads")
    overrides = {k: getattr(args, k) for k in counts if getattr(args, k) is not None}
    return BenchConfig(
        size=replace(base, **overrides),
        search_agents=args.search_agents or (5_000 if quick else 100_000),
        seed=args.seed,
        postgres_url=args.postgres_url,
        postgres_scale=not args.no_postgres_scale,
        postgres_pooler_url=args.postgres_pooler_url,
        mysql_url=args.mysql_url,
        mysql_scale=not args.no_mysql_scale,
        out=args.out,
        name=args.name or ("quick" if quick else "latest"),
        json_search_sample=args.json_search_sample,
        json_search_sample_scale=args.json_search_sample_scale,
        peer_search_sample=args.peer_search_sample,
        peer_search_sample_scale=args.peer_search_sample_scale,
        scaling_probe=not args.no_client_scaling,
        scaling_clients=tuple(args.scaling_clients),
        scaling_calls=args.scaling_calls,
        scale_io=args.scale_io,
        inline_io=args.inline_io,
        live=not args.no_live,
        chart=not args.no_chart,
        workdir=args.workdir,
    )


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    results = run_benchmark(config)
    text = render(results)
    print()
    print(text)
    print_mismatches(results)
    for path in write_results(config.out, config.name, results, text, chart=config.chart):
        print(f"wrote {path}")
    return 0 if results["checks"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
