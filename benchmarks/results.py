"""The results document of ``benchmarks.run``: its sanity figures, its text, its files."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy

from . import client_scaling
from .backends.acti import interchange_functions
from .measure import OpStats, git_state
from .report import (
    MYSQL_BACKENDS,
    ON_POSTGRES,
    REFERENCE,
    Target,
    render_growth,
    render_search_kinds,
    render_tables,
    render_targets,
    targets,
    write_chart,
)
from .workload import Workload

if TYPE_CHECKING:
    from .run_config import BenchConfig, Run


def sanity(answers: dict[str, Any], workload: Workload | None) -> dict[str, Any]:
    """Evidence that the checks compared something: non-empty answers, a FIFO that trimmed."""
    runs: dict[str, int] = {}
    for execution in workload.executions if workload is not None else ():
        runs[execution.name] = runs.get(execution.name, 0) + 1
    searches = answers.get("search", {}).get(REFERENCE, {})
    scale = answers.get("search_scale", {}).get(REFERENCE, {})
    histories = answers.get("history_read", {}).get(REFERENCE, {})
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


def _postgres_versions(config: BenchConfig) -> dict[str, str]:
    """The server's and the PostgreSQL client libraries' versions (none without PostgreSQL)."""
    if not config.postgres_url:
        return {}
    import psycopg  # only with PostgreSQL (the postgres extra)

    from .backends.raw_psycopg import libpq_url

    with psycopg.connect(libpq_url(config.postgres_url)) as conn:
        server = conn.execute("SHOW server_version").fetchone()
    return {
        "PostgreSQL": server[0].split()[0] if server else "?",
        "psycopg": psycopg.__version__,
        "langgraph-checkpoint-postgres": version("langgraph-checkpoint-postgres"),
    }


def _mysql_versions(config: BenchConfig) -> dict[str, str]:
    """The MariaDB/MySQL server's and pymysql's versions (none without ``--mysql-url``)."""
    if not config.mysql_url:
        return {}
    import pymysql  # type: ignore[import-untyped]  # only with MariaDB/MySQL (mysql extra)

    from .backends.raw_pymysql import connect_args

    with pymysql.connect(**connect_args(config.mysql_url)) as conn, conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        row = cur.fetchone()
    server = str(row[0]) if row else "?"
    name = "MariaDB" if "mariadb" in server.lower() else "MySQL"
    return {name: server.split("-")[0], "pymysql": pymysql.__version__}


def document(run: Run, workload: Workload | None, seconds: float) -> dict[str, Any]:
    """The results document of a finished run (what ``<name>.json`` holds)."""
    config = run.config
    _, _, interchange = interchange_functions()
    return {
        "meta": {
            **machine_meta(seconds),
            "postgres_versions": _postgres_versions(config),
            "mysql_versions": _mysql_versions(config),
            "seed": config.seed,
            "size": vars(config.size),
            "search_agents": config.search_agents,
            "json_search_sample": config.json_search_sample,
            "json_search_sample_scale": config.json_search_sample_scale,
            "peer_search_sample": config.peer_search_sample,
            "peer_search_sample_scale": config.peer_search_sample_scale,
            "acti_store_interchange": interchange,
            "scale_build_seconds": run.notes.get("scale_build_seconds"),
            "acti_store_code": run.notes["code"],
            **git_state(),
            "load_average_before": run.notes["load_before"],
            "load_average_after": os.getloadavg(),
            "reference": REFERENCE,
        },
        "operations": [s.as_dict() for s in run.stats],
        "client_scaling": [c.as_dict() for c in run.notes.get("client_scaling", [])],
        "checks": {
            "ok": run.checker.ok,
            "compared": run.checker.compared,
            "mismatches": [vars(m) for m in run.checker.mismatches],
            "sanity": sanity(run.checker.answers, workload),
        },
        "targets": [vars(t) for t in targets(run.stats, config.size.agents, config.search_agents)],
    }


def render(results: dict[str, Any]) -> str:
    meta = results["meta"]
    stats = [_stats_from(d) for d in results["operations"]]
    agents, search_agents = meta["size"]["agents"], meta["search_agents"]
    checks = results["checks"]
    servers = meta.get("postgres_versions", {}) | meta.get("mysql_versions", {})
    versions = "".join(f", {name} {v}" for name, v in servers.items())
    scaling = client_scaling.render(results.get("client_scaling", []))
    parts = [
        f"acti_store benchmark — {meta['date']}, Python {meta['python']}, SQLite {meta['sqlite']}, "
        f"SQLAlchemy {meta['sqlalchemy']}{versions}, {meta['cpus']} CPUs, "
        f"runtime {meta['runtime_s']} s",
        f"acti_store export/import: {meta['acti_store_interchange']}",
        "",
        render_tables(stats, agents, search_agents),
        "",
        *([growth, ""] if (growth := render_growth(stats)) else []),
        *([kinds, ""] if (kinds := render_search_kinds(stats, agents, search_agents)) else []),
        *([scaling, ""] if scaling else []),
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


def machine_meta(seconds: float) -> dict[str, Any]:
    """When a run ended, how long it took, and on what (the start of a results document's
    ``meta``)."""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "runtime_s": round(seconds, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
    }


def write_figures(out: Path, name: str, results: dict[str, Any], text: str) -> list[Path]:
    """``<out>/<name>.json`` (every figure) and ``.txt`` (the printed tables); their paths."""
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{name}.json"
    json_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", "utf-8")
    text_path = out / f"{name}.txt"
    text_path.write_text(text + "\n", "utf-8")
    return [json_path, text_path]


def write_results(
    out: Path, name: str, results: dict[str, Any], text: str, *, chart: bool
) -> list[Path]:
    """``write_figures`` and (with ``chart``) ``<out>/<name>.png``; returns the paths."""
    written = write_figures(out, name, results, text)
    if chart:
        meta = results["meta"]
        stats = [_stats_from(d) for d in results["operations"]]
        postgres = [b for b in ON_POSTGRES if any(s.backend == b for s in stats)]
        mysql = [b for b in MYSQL_BACKENDS if any(s.backend == b for s in stats)]
        also = f" + PostgreSQL: {', '.join(postgres)}" if postgres else ""
        also += f" + MariaDB: {', '.join(mysql)}" if mysql else ""
        png = out / f"{name}.png"
        write_chart(
            stats,
            png,
            meta["size"]["agents"],
            meta["search_agents"],
            f"acti_store vs raw sqlite3 vs JSON files{also} — ops/s, log scale "
            f"(N={meta['size']['agents']:,}, search also at {meta['search_agents']:,})",
        )
        written.append(png)
    return written
