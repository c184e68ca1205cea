"""The results of ``benchmarks.million``: its header figures, its table, its targets, its chart."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import sqlalchemy

from .backends.acti import interchange_functions
from .measure import git_state
from .results import machine_meta, write_figures
from .workload import SEARCH_KINDS

if TYPE_CHECKING:
    from .million_config import MillionConfig

#: Imported agents read back and compared with their exported files, spread over the store.
READ_BACK_SAMPLE: Final = 200

#: Peak RSS of export/import at the largest size over the size before it: at most this.
RSS_GROWTH_LIMIT: Final = 1.2
MIB: Final = 1024 * 1024


def _postgres_versions(url: str | None) -> dict[str, str]:
    """The server's and psycopg's versions (none without PostgreSQL)."""
    if not url:
        return {}
    import psycopg  # only with PostgreSQL (the postgres extra)

    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            server = str(conn.exec_driver_sql("SHOW server_version").scalar_one())
    finally:
        engine.dispose()
    return {"PostgreSQL": server.split()[0], "psycopg": psycopg.__version__}


def meta(config: MillionConfig, code: str, load_before: Any, seconds: float) -> dict[str, Any]:
    """What was run, on what, when (the ``meta`` of the results document)."""
    _, _, interchange = interchange_functions()
    return {
        **machine_meta(seconds),
        "postgres_versions": _postgres_versions(config.postgres_url),
        "seed": config.seed,
        "sizes": list(config.sizes),
        "gets": config.gets,
        "record_executions": config.records,
        "searches_per_kind": config.searches_per_kind,
        "read_back_sample": READ_BACK_SAMPLE,
        "inline_io": config.inline_io,
        "acti_store_interchange": interchange,
        "acti_store_code": code,
        **git_state(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }


# --------------------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------------------


def _by_engine(results: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    engines: dict[str, list[dict[str, Any]]] = {}
    for row in results:
        engines.setdefault(row["engine"], []).append(row)
    return {engine: sorted(rows, key=lambda r: r["agents"]) for engine, rows in engines.items()}


def targets(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per engine, export and import: peak RSS at the largest size at most 1.2x the peak at the
    size before it (memory must not grow with the number of agents); not measured with one size
    or in-process runs (``--inline-io``)."""
    found = []
    for engine, rows in _by_engine(results).items():
        for op in ("export", "import"):
            if len(rows) < 2 or any(r[op]["inline"] for r in rows):
                row = rows[-1]
                found.append(
                    {
                        "name": f"{engine} {op} peak RSS",
                        "goal": "flat with the agents",
                        "measured": f"{row[op]['peak_rss_mb']:.0f} MB @{row['agents']:,}",
                        "met": None,
                    }
                )
                continue
            before, last = rows[-2], rows[-1]
            ratio = last[op]["peak_rss_mb"] / before[op]["peak_rss_mb"]
            found.append(
                {
                    "name": f"{engine} {op} peak RSS @{last['agents']:,}",
                    "goal": f"<= {RSS_GROWTH_LIMIT}x @{before['agents']:,}",
                    "measured": f"{last[op]['peak_rss_mb']:.0f} MB vs "
                    f"{before[op]['peak_rss_mb']:.0f} MB ({ratio:.2f}x)",
                    "met": ratio <= RSS_GROWTH_LIMIT,
                }
            )
    return found


# --------------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------------


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _pair(figures: dict[str, Any]) -> str:
    return f"{_ms(figures['median_ms'])} / {_ms(figures['p90_ms'])}"


def _rows(row: dict[str, Any]) -> list[tuple[str, str]]:
    """``(what, value)`` of one engine at one size, in the table's order."""
    size = row["database_bytes"]["total"] / MIB
    lines = [
        ("build s (bulk_put, not timed)", f"{row['phases_s']['build']:.1f}"),
        ("database on disk MB", f"{size:,.0f}"),
        ("get median / p90 ms", _pair(row["get"])),
        ("record_execution median / p90 ms", _pair(row["record_execution"])),
    ]
    lines += [
        (f"search {kind} median / p90 ms", _pair(row["search"][kind])) for kind in SEARCH_KINDS
    ]
    listing = row["list"]
    lines.append(
        (
            "list text chars / artifact bytes",
            f"{listing['text_chars']:,} / {listing['artifact_bytes']:,}",
        )
    )
    for op in ("export", "import"):
        io = row[op]
        lines += [
            (f"{op} s / agents/s", f"{io['seconds']:.1f} / {io['agents_per_s']:,.0f}"),
            (f"{op} peak RSS MB (+delta)", f"{io['peak_rss_mb']:.0f} (+{io['delta_rss_mb']:.0f})"),
        ]
    return lines


def render_table(results: Sequence[dict[str, Any]]) -> str:
    """One column per engine and size, one line per figure."""
    columns = [f"{row['engine']} @{row['agents']:,}" for row in results]
    cells = [_rows(row) for row in results]
    width = max(18, *(len(c) + 2 for c in columns))
    head = max(len(what) for what, _ in cells[0]) + 2
    lines = ["".ljust(head) + "".join(c.rjust(width) for c in columns)]
    lines.append("-" * (head + width * len(columns)))
    for i, (what, _) in enumerate(cells[0]):
        lines.append(what.ljust(head) + "".join(rows[i][1].rjust(width) for rows in cells))
    return "\n".join(lines)


def render_targets(items: Sequence[dict[str, Any]]) -> str:
    lines = [f"{'target':<36} {'goal':<22} {'measured':>28}  status"]
    for t in items:
        status = "not measured" if t["met"] is None else ("met" if t["met"] else "NOT MET")
        lines.append(f"{t['name']:<36} {t['goal']:<22} {t['measured']:>28}  {status}")
    return "\n".join(lines)


def render(document: dict[str, Any]) -> str:
    meta, results = document["meta"], document["results"]
    servers = "".join(f", {name} {v}" for name, v in meta["postgres_versions"].items())
    phases = [
        f"  {row['engine']} @{row['agents']:,}: "
        + ", ".join(f"{name} {seconds:.1f}" for name, seconds in row["phases_s"].items())
        for row in results
    ]
    checks = [
        f"  {row['engine']} @{row['agents']:,}: "
        + ", ".join(f"{k}={v:,}" for k, v in row["checks"].items())
        + f", searches_with_results={row['searches_with_results']}/"
        + f"{meta['searches_per_kind'] * len(SEARCH_KINDS)}"
        for row in results
        if "checks" in row
    ]
    problems = document["problems"]
    return "\n".join(
        [
            f"acti_store at scale — {meta['date']}, Python {meta['python']}, SQLite "
            f"{meta['sqlite']}, SQLAlchemy {meta['sqlalchemy']}{servers}, {meta['cpus']} CPUs, "
            f"runtime {meta['runtime_s']} s",
            f"get {meta['gets']:,} random names, record_execution {meta['record_executions']:,}, "
            f"{meta['searches_per_kind']} searches per kind; export/import "
            f"({meta['acti_store_interchange']}) in a fresh process each",
            "",
            render_table(results),
            "",
            render_targets(document["targets"]),
            "",
            "phases, wall seconds:",
            *phases,
            "checks: " + ("all passed" if not problems else "PROBLEMS"),
            *checks,
            *(f"  PROBLEM {p}" for p in problems),
        ]
    )


# --------------------------------------------------------------------------------------------------
# Files and chart
# --------------------------------------------------------------------------------------------------


def write_chart(results: Sequence[dict[str, Any]], path: Path, title: str) -> None:
    """Median latency of get, record_execution and each search kind against the number of agents
    (one panel per engine), and the peak RSS of export and import against it; log axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = _by_engine(results)
    fig, axes = plt.subplots(1, len(engines) + 1, figsize=(5.0 * (len(engines) + 1), 5.0))
    for ax, (engine, rows) in zip(axes, engines.items(), strict=False):
        sizes = [r["agents"] for r in rows]
        for op in ("get", "record_execution"):
            ax.plot(sizes, [r[op]["median_ms"] for r in rows], "o-", linewidth=2, label=op)
        colors = plt.get_cmap("tab10")
        for k, kind in enumerate(SEARCH_KINDS):
            medians = [r["search"][kind]["median_ms"] for r in rows]
            ax.plot(sizes, medians, "--", color=colors(k), label=f"search {kind}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("agents")
        ax.set_ylabel("median ms (log)")
        ax.set_title(f"acti_store[{engine}]: median latency", fontsize=10)
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    ax = axes[-1]
    for engine, rows in engines.items():
        sizes = [r["agents"] for r in rows]
        for op, style in (("export", "o-"), ("import", "s--")):
            peaks = [r[op]["peak_rss_mb"] for r in rows]
            ax.plot(sizes, peaks, style, label=f"{op} {engine}")
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("agents")
    ax.set_ylabel("peak RSS of the process, MB")
    ax.set_title("export / import peak RSS", fontsize=10)
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_results(
    out: Path, name: str, results: dict[str, Any], text: str, *, chart: bool
) -> list[Path]:
    """``results.write_figures`` and (with ``chart``) ``<out>/<name>.png``; returns the paths."""
    written = write_figures(out, name, results, text)
    if chart and results["results"]:
        png = out / f"{name}.png"
        sizes = ", ".join(f"{n:,}" for n in results["meta"]["sizes"])
        write_chart(results["results"], png, f"acti_store at scale ({sizes} agents with histories)")
        written.append(png)
    return written
