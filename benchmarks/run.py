"""Benchmark acti_store against raw sqlite3 and the JSON-file design; check they all agree.

    python -m benchmarks.run [--agents 10000] [--search-agents 100000] [--postgres-url URL]
                             [--out benchmarks/results] [--quick]

Phases, each backend in turn, all in one process (export/import in a subprocess each, for memory):

1. live workload at ``--agents`` N: create N agents (one call each), gets, updates,
   ``record_execution`` (Zipf-like, many agents past the 50-record FIFO), history reads, searches;
2. export every agent to contract-format files (compared byte for byte across backends), import
   them into an empty store; every imported agent and history must read back as its files say;
3. search at ``--search-agents`` M: a store built with each backend's bulk path (not timed), then
   the searches; with ``--scale-io``, export/import of that store too (peak memory at scale).

Every answer is compared with raw sqlite3's (the reference); any difference is printed and makes the
exit status 1. Results go to ``<out>/<name>.json``, ``.txt`` and ``.png``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import sqlalchemy

from .backends import Backend, StoreSpec, open_backend
from .backends.acti import interchange_functions
from .checks import MAX_REPORTED, Checker, digest, first_difference, folder_digest
from .measure import OpStats, code_fingerprint, first_last, git_state, run_probe, summarize
from .report import (
    ACTI_SQLITE,
    JSON_FILES,
    REFERENCE,
    Target,
    render_growth,
    render_search_kinds,
    render_table,
    render_targets,
    targets,
    write_chart,
)
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

ACTI_POSTGRES: Final = "acti_store[postgresql]"
KIND_OF: Final = {
    REFERENCE: "raw_sqlite",
    ACTI_SQLITE: "acti_store",
    JSON_FILES: "json_files",
    ACTI_POSTGRES: "acti_store",
}
#: Backends whose export/import is measured at search scale (``--scale-io``).
SCALE_IO_BACKENDS: Final = (REFERENCE, ACTI_SQLITE)
#: Agents read back after each import at search scale (at N, all of them are).
SCALE_IMPORT_SAMPLE: Final = 2_000
DEFAULT_SEED: Final = 20250109


@dataclass(frozen=True)
class BenchConfig:
    size: WorkloadSize
    search_agents: int
    seed: int = DEFAULT_SEED
    postgres_url: str | None = None
    postgres_scale: bool = True
    out: Path = Path("benchmarks/results")
    name: str = "latest"
    #: The JSON store reads every file per search: it runs only the first K searches (all kinds
    #: and sorts are among the first 10) at N, and at M.
    json_search_sample: int = 20
    json_search_sample_scale: int = 5
    scale_io: bool = False
    #: Export/import in this process instead of a subprocess each (smoke tests: no memory figure).
    inline_io: bool = False
    chart: bool = True
    workdir: Path | None = None
    #: Run phases 1-2 (the N-agent workload); off: only the M-agent search (and --scale-io).
    live: bool = True


# --------------------------------------------------------------------------------------------------
# Stores: files in a work directory; PostgreSQL schemas in a database created for the run
# --------------------------------------------------------------------------------------------------


class Stores:
    """Hands out empty stores for each backend; removes them all at the end."""

    def __init__(self, workdir: Path, postgres_url: str | None) -> None:
        self.workdir = workdir
        self._admin: sqlalchemy.Engine | None = None
        self._database: str | None = None
        self._pg: sqlalchemy.Engine | None = None
        if postgres_url:
            url = sqlalchemy.make_url(postgres_url)
            self._admin = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
            self._database = f"acti_bench_{uuid.uuid4().hex[:10]}"
            with self._admin.connect() as conn:
                conn.exec_driver_sql(f'CREATE DATABASE "{self._database}"')
            self._pg_url = url.set(database=self._database)
            self._pg = sqlalchemy.create_engine(self._pg_url, isolation_level="AUTOCOMMIT")

    @property
    def labels(self) -> list[str]:
        labels = [REFERENCE, ACTI_SQLITE, JSON_FILES]
        return [*labels, ACTI_POSTGRES] if self._pg is not None else labels

    def spec(self, label: str, tag: str) -> StoreSpec:
        slug = _slug(label)
        kind = KIND_OF[label]
        if label == ACTI_POSTGRES:
            assert self._pg is not None
            schema = f"{tag}_{uuid.uuid4().hex[:6]}"
            with self._pg.connect() as conn:
                conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
            url = self._pg_url.update_query_dict({"options": f"-csearch_path={schema}"})
            return StoreSpec(kind, label, url.render_as_string(hide_password=False))
        if kind == "json_files":
            return StoreSpec(kind, label, str(self.workdir / f"{slug}-{tag}"))
        path = self.workdir / f"{slug}-{tag}.db"
        return StoreSpec(kind, label, f"sqlite:///{path}" if kind == "acti_store" else str(path))

    def close(self) -> None:
        if self._pg is not None:
            self._pg.dispose()
        if self._admin is not None:
            with self._admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{self._database}" WITH (FORCE)')
            self._admin.dispose()


# --------------------------------------------------------------------------------------------------
# The timed phases
# --------------------------------------------------------------------------------------------------

perf = time.perf_counter_ns


@dataclass
class Run:
    config: BenchConfig
    stores: Stores
    checker: Checker
    stats: list[OpStats] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def log(self, message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


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

        sample = run.config.json_search_sample if label == JSON_FILES else None
        run_searches(run, backend, label, "search", workload.searches, sample)
    finally:
        backend.close()


def run_export(run: Run, live: StoreSpec, agents: int) -> Path:
    """Export the live store (timed, in a subprocess); returns the folder."""
    export_dir = run.stores.workdir / f"export-{_slug(live.label)}"
    export_dir.mkdir()
    _probe(run, live, "export", export_dir, agents)
    return export_dir


def run_import(run: Run, label: str, export_dir: Path, agents: int) -> None:
    """Import a backend's export into an empty store (timed, in a subprocess); every agent must
    read back as its exported files say."""
    target = run.stores.spec(label, "imported")
    _probe(run, target, "import", export_dir, agents)
    check_import(run, "import", target, export_dir)


def _slug(label: str) -> str:
    return label.replace("[", "-").replace("]", "")


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


def check_import(run: Run, op: str, spec: StoreSpec, export_dir: Path, sample: int = 0) -> None:
    """Imported agents read back (``get``, ``get_history``) must equal their exported files.

    Every agent, or an evenly spread ``sample`` of them when given.
    """
    files = sorted(f for f in folder_digest(export_dir) if not f.endswith("_history.json"))
    if sample:
        files = files[:: max(1, len(files) // sample)]
    backend = open_backend(spec, BenchClock())
    bad = 0
    try:
        for file in files:
            name = file.removesuffix(".json")
            history_file = export_dir / f"{name}_history.json"
            expected = {
                "agent": json.loads((export_dir / file).read_bytes()),
                "history": json.loads(history_file.read_bytes())
                if history_file.exists()
                else {"agent_name": name, "executions": [], "total_executions": 0},
            }
            actual = {
                "agent": backend.agent_document(backend.get(name)),
                "history": backend.history_document(backend.get_history(name, 50)),
            }
            diff = first_difference(expected, actual)
            if diff:
                bad += 1
                if bad <= MAX_REPORTED:
                    run.checker.fail(f"{op} (read back)", spec.label, f"{name}: {diff}")
    finally:
        backend.close()
    if bad > MAX_REPORTED:
        run.checker.fail(f"{op} (read back)", spec.label, f"... and {bad - MAX_REPORTED} more")
    run.checker.compared.setdefault(f"{op} (read back)", {})[spec.label] = len(files)


def run_scale(run: Run) -> None:
    config = run.config
    labels = [
        label for label in run.stores.labels if label != ACTI_POSTGRES or config.postgres_scale
    ]
    run.log(f"search scale: building {config.search_agents:,}-agent stores ({', '.join(labels)})")
    specs = {label: run.stores.spec(label, "scale") for label in labels}
    backends = build_scale_stores(run, list(specs.values()))
    searches = make_searches(
        random.Random(config.seed + 2), config.size.searches, bulk_span(config.search_agents)
    )
    try:
        for label, backend in backends.items():
            sample = config.json_search_sample_scale if label == JSON_FILES else None
            run_searches(run, backend, label, "search_scale", searches, sample)
            run.log(f"  search @{config.search_agents:,} {label}: done")
    finally:
        for backend in backends.values():
            backend.close()
    if not config.scale_io:
        return
    exports: dict[str, tuple[Path, dict[str, str]]] = {}
    for label in SCALE_IO_BACKENDS:
        spec = specs[label]
        export_dir = run.stores.workdir / f"export-scale-{_slug(label)}"
        export_dir.mkdir()
        _probe(run, spec, "export", export_dir, config.search_agents, "_scale")
        exports[label] = (export_dir, folder_digest(export_dir))
        target = run.stores.spec(label, "scale_imported")
        _probe(run, target, "import", export_dir, config.search_agents, "_scale")
        check_import(run, "import_scale", target, export_dir, SCALE_IMPORT_SAMPLE)
    for label in SCALE_IO_BACKENDS:
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


def run_benchmark(config: BenchConfig) -> dict[str, Any]:
    """Run every phase; returns the results document (also written to ``config.out``)."""
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="acti-bench-", dir=config.workdir))
    stores = Stores(workdir, config.postgres_url)
    run = Run(config, stores, Checker(REFERENCE))
    run.notes["code"] = code_fingerprint()
    run.notes["load_before"] = os.getloadavg()
    workload = make_workload(config.size, config.seed) if config.live else None
    try:
        if workload is not None:
            run.log(f"workload: {config.size} seed={config.seed} (workdir {workdir})")
            run_live_phases(run, workload)
        run_scale(run)
    finally:
        stores.close()
        shutil.rmtree(workdir, ignore_errors=True)
    run.checker.compare()
    return _results(run, workload, time.perf_counter() - started)


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------


def _sanity(run: Run, workload: Workload | None) -> dict[str, Any]:
    """Evidence that the checks compared something: non-empty answers, a FIFO that trimmed."""
    runs: dict[str, int] = {}
    for execution in workload.executions if workload is not None else ():
        runs[execution.name] = runs.get(execution.name, 0) + 1
    reference = run.checker.answers
    searches = reference.get("search", {}).get(REFERENCE, {})
    scale = reference.get("search_scale", {}).get(REFERENCE, {})
    histories = reference.get("history_read", {}).get(REFERENCE, {})
    return {
        "agents_run": len(runs),
        "agents_past_50_records": sum(1 for n in runs.values() if n > 50),
        "most_runs_of_one_agent": max(runs.values(), default=0),
        "searches_with_results": _with_results(searches),
        "scale_searches_with_results": _with_results(scale),
        "history_reads_with_records": (
            f"{sum(1 for h in histories.values() if h['executions'])}/{len(histories)}"
        ),
    }


def _with_results(answers: dict[int, Any]) -> str:
    return f"{sum(1 for a in answers.values() if a['names'])}/{len(answers)}"


def _results(run: Run, workload: Workload | None, seconds: float) -> dict[str, Any]:
    config = run.config
    _, _, interchange = interchange_functions()
    return {
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "runtime_s": round(seconds, 1),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "sqlite": sqlite3.sqlite_version,
            "sqlalchemy": sqlalchemy.__version__,
            "seed": config.seed,
            "size": vars(config.size),
            "search_agents": config.search_agents,
            "json_search_sample": config.json_search_sample,
            "json_search_sample_scale": config.json_search_sample_scale,
            "acti_store_interchange": interchange,
            "scale_build_seconds": run.notes.get("scale_build_seconds"),
            "acti_store_code": run.notes["code"],
            **git_state(),
            "load_average_before": run.notes["load_before"],
            "load_average_after": os.getloadavg(),
            "reference": REFERENCE,
        },
        "operations": [s.as_dict() for s in run.stats],
        "checks": {
            "ok": run.checker.ok,
            "compared": run.checker.compared,
            "mismatches": [vars(m) for m in run.checker.mismatches],
            "sanity": _sanity(run, workload),
        },
        "targets": [vars(t) for t in targets(run.stats, config.size.agents, config.search_agents)],
    }


def render(results: dict[str, Any]) -> str:
    meta = results["meta"]
    stats = [_stats_from(d) for d in results["operations"]]
    agents, search_agents = meta["size"]["agents"], meta["search_agents"]
    checks = results["checks"]
    parts = [
        f"acti_store benchmark — {meta['date']}, Python {meta['python']}, SQLite {meta['sqlite']}, "
        f"SQLAlchemy {meta['sqlalchemy']}, {meta['cpus']} CPUs, runtime {meta['runtime_s']} s",
        f"acti_store export/import: {meta['acti_store_interchange']}",
        "",
        render_table(stats, agents, search_agents),
        "",
        *([growth, ""] if (growth := render_growth(stats)) else []),
        *([kinds, ""] if (kinds := render_search_kinds(stats, agents, search_agents)) else []),
        render_targets([_target_from(t) for t in results["targets"]]),
        "",
        "checks: " + ("all backends agree" if checks["ok"] else "MISMATCHES"),
        "  compared: "
        + "; ".join(
            f"{op}: " + ", ".join(f"{b} {n}" for b, n in by.items())
            for op, by in checks["compared"].items()
        ),
        "  sanity: " + ", ".join(f"{k}={v}" for k, v in checks["sanity"].items()),
    ]
    return "\n".join(parts)


def _stats_from(data: dict[str, Any]) -> OpStats:
    fields = {k: v for k, v in data.items() if k != "ops_per_s"}
    return OpStats(**fields)


def _target_from(data: dict[str, Any]) -> Target:
    return Target(**data)


def print_mismatches(results: dict[str, Any]) -> None:
    mismatches = results["checks"]["mismatches"]
    if not mismatches:
        return
    bar = "!" * 100
    print(f"\n{bar}\nCORRECTNESS CHECK FAILED: {len(mismatches)} mismatch(es) against {REFERENCE}")
    for m in mismatches:
        print(f"  [{m['op']}] {m['backend']}: {m['detail']}")
    print(f"{bar}\n", flush=True)


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> BenchConfig:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--agents", type=int, help="N: agents of the live workload (10000)")
    parser.add_argument("--search-agents", type=int, help="M: agents of the search store (100000)")
    parser.add_argument("--postgres-url", help="also measure acti_store on this PostgreSQL")
    parser.add_argument(
        "--no-postgres-scale", action="store_true", help="PostgreSQL: skip the search at M"
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
    overrides = {
        k: v
        for k, v in {
            "gets": args.gets,
            "updates": args.updates,
            "searches": args.searches,
            "executions": args.executions,
            "history_reads": args.history_reads,
        }.items()
        if v is not None
    }
    return BenchConfig(
        size=replace(base, **overrides),
        search_agents=args.search_agents or (5_000 if quick else 100_000),
        seed=args.seed,
        postgres_url=args.postgres_url,
        postgres_scale=not args.no_postgres_scale,
        out=args.out,
        name=args.name or ("quick" if quick else "latest"),
        json_search_sample=args.json_search_sample,
        json_search_sample_scale=args.json_search_sample_scale,
        scale_io=args.scale_io,
        inline_io=args.inline_io,
        live=not args.no_live,
        chart=not args.no_chart,
        workdir=args.workdir,
    )


def write_results(config: BenchConfig, results: dict[str, Any], text: str) -> list[Path]:
    config.out.mkdir(parents=True, exist_ok=True)
    json_path = config.out / f"{config.name}.json"
    json_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", "utf-8")
    text_path = config.out / f"{config.name}.txt"
    text_path.write_text(text + "\n", "utf-8")
    written = [json_path, text_path]
    if config.chart:
        meta = results["meta"]
        png = config.out / f"{config.name}.png"
        write_chart(
            [_stats_from(d) for d in results["operations"]],
            png,
            meta["size"]["agents"],
            meta["search_agents"],
            f"acti_store vs raw sqlite3 vs JSON files — ops/s, log scale "
            f"(N={meta['size']['agents']:,}, search also at {meta['search_agents']:,})",
        )
        written.append(png)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    results = run_benchmark(config)
    text = render(results)
    print()
    print(text)
    print_mismatches(results)
    for path in write_results(config, results, text):
        print(f"wrote {path}")
    return 0 if results["checks"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
