"""Rendering the results: the table, the targets the store must reach, the chart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .measure import OpStats

REFERENCE: Final = "raw_sqlite3"
ACTI_SQLITE: Final = "acti_store[sqlite]"
JSON_FILES: Final = "json_files"
ACTI_POSTGRES: Final = "acti_store[postgresql]"
#: The practical limit on PostgreSQL: the reference of the PostgreSQL table's ratios.
RAW_PSYCOPG: Final = "raw_psycopg"
LANGGRAPH_PG: Final = "langgraph_pg"
POSTGRES_BACKENDS: Final = (ACTI_POSTGRES, RAW_PSYCOPG, LANGGRAPH_PG)
#: acti_store on the same server through a pooler in transaction mode (``--postgres-pooler-url``,
#: ``pooler="transaction"``): also compared with acti_store[postgresql], the store without it.
ACTI_POOLED: Final = "acti_store[pg+pooler]"
#: Every backend on the PostgreSQL server (the pooled one only with a pooler's URL).
ON_POSTGRES: Final = (ACTI_POSTGRES, ACTI_POOLED, RAW_PSYCOPG, LANGGRAPH_PG)
ACTI_MYSQL: Final = "acti_store[mysql]"
#: The practical limit on MariaDB: the reference of the MariaDB table's ratios.
RAW_PYMYSQL: Final = "raw_pymysql"
MYSQL_BACKENDS: Final = (ACTI_MYSQL, RAW_PYMYSQL)
#: The server engines' tables: (title, their backends, the hand-written reference, its column).
SERVER_TABLES: Final = (
    ("PostgreSQL", ON_POSTGRES, RAW_PSYCOPG, "vs psycopg", "psycopg"),
    ("MariaDB", MYSQL_BACKENDS, RAW_PYMYSQL, "vs pymysql", "pymysql"),
)
#: Operations whose acti_store throughput must be at least half of raw sqlite3's.
HALF_OF_RAW: Final = (
    "create",
    "get",
    "update",
    "record_execution",
    "history_read",
    "export",
    "import",
)
RSS_LIMIT_MB: Final = 150.0
FLAT_LIMIT: Final = 1.5
SEARCH_SCALE_LIMIT_MS: Final = 10.0
#: The slowest kind of search's p90 at the scale size (each kind: 1 in 10 of the searches).
SEARCH_KIND_P90_LIMIT_MS: Final = 25.0
#: A kind of search within this median meets its goal whatever raw sqlite3 takes.
SEARCH_KIND_FLOOR_MS: Final = 1.0


def op_title(op: str, agents: int, search_agents: int) -> str:
    titles = {
        "history_read": "history read (limit 10)",
        "search": f"search @{agents:,}",
        "search_scale": f"search @{search_agents:,}",
        "export": f"export @{agents:,}",
        "import": f"import @{agents:,}",
        "export_scale": f"export @{search_agents:,}",
        "import_scale": f"import @{search_agents:,}",
    }
    return titles.get(op, op)


def _find(stats: Sequence[OpStats], op: str, backend: str) -> OpStats | None:
    return next((s for s in stats if s.op == op and s.backend == backend), None)


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def render_table(
    stats: Sequence[OpStats],
    agents: int,
    search_agents: int,
    backends: Sequence[str] | None = None,
    references: Sequence[tuple[str, str]] = (("vs raw", REFERENCE),),
) -> str:
    """Per operation and backend: calls, ops/s, median and p90 latency, and ops/s relative to
    each of ``references`` (``(column title, backend)``). Only ``backends`` when given."""
    widths = [max(7, len(title)) for title, _ in references]
    ratio_titles = " ".join(f"{t:>{w}}" for (t, _), w in zip(references, widths, strict=True))
    header = (
        f"{'operation':<26} {'backend':<24} {'calls':>7} {'ops/s':>10} {'median ms':>10} "
        f"{'p90 ms':>9} {ratio_titles}  notes"
    )
    lines = [header, "-" * len(header)]
    shown = [s for s in stats if backends is None or s.backend in backends]
    ops = list(dict.fromkeys(s.op for s in shown))
    for op in ops:
        title = op_title(op, agents, search_agents)
        for s in (s for s in shown if s.op == op):
            ratios = []
            for _, backend in references:
                reference = _find(stats, op, backend)
                ratios.append(f"{s.ops_per_s / reference.ops_per_s:.2f}x" if reference else "-")
            notes = []
            if s.extra.get("inline"):
                notes.append(f"{s.total_s:.1f} s, in-process (no memory figure)")
            elif "peak_rss_mb" in s.extra:
                notes.append(
                    f"{s.total_s:.1f} s, peak RSS {s.extra['peak_rss_mb']:.0f} MB "
                    f"(+{s.extra['delta_rss_mb']:.0f})"
                )
            if "sampled" in s.extra:
                notes.append(f"{s.extra['sampled']}")
            cells = " ".join(f"{r:>{w}}" for r, w in zip(ratios, widths, strict=True))
            lines.append(
                f"{title:<26} {s.backend:<24} {s.calls:>7} {_rate(s.ops_per_s):>10} "
                f"{_ms(s.median_ms):>10} {_ms(s.p90_ms):>9} {cells}  {'; '.join(notes)}".rstrip()
            )
            title = ""
    return "\n".join(lines)


def render_tables(stats: Sequence[OpStats], agents: int, search_agents: int) -> str:
    """The main table (SQLite and files, vs raw sqlite3) and, for each server engine that ran
    (PostgreSQL, MariaDB), a table of its own: ops/s relative to its hand-written store
    (``raw_psycopg``, ``raw_pymysql``: the engine's practical limit) and to raw sqlite3; with
    acti_store behind a pooler, also to acti_store directly (``vs direct``)."""
    ran = {s.backend for s in stats}
    servers = [
        (title, [b for b in backends if b in ran], reference, column, driver)
        for title, backends, reference, column, driver in SERVER_TABLES
        if ran & set(backends)
    ]
    if not servers:
        return render_table(stats, agents, search_agents)
    on_servers = {b for _, backends, *_ in servers for b in backends}
    others = list(dict.fromkeys(s.backend for s in stats if s.backend not in on_servers))
    parts = []
    if others:
        parts += [render_table(stats, agents, search_agents, others), ""]
    for i, (title, backends, reference, column, driver) in enumerate(servers):
        references: tuple[tuple[str, str], ...] = (("vs sqlite3", REFERENCE),)
        if reference in ran:
            references = ((column, reference), *references)
        direct = ""
        if ACTI_POOLED in backends and ACTI_POSTGRES in ran:
            references = (*references, ("vs direct", ACTI_POSTGRES))
            direct = f"; vs direct: to {ACTI_POSTGRES}, the same store without the pooler"
        parts += [
            *([""] if i else []),
            f"{title} (ratios: ops/s relative to {reference}, the hand-written {driver} store, "
            f"and to {REFERENCE}{direct})",
            render_table(stats, agents, search_agents, backends, references),
        ]
    return "\n".join(parts)


def render_growth(stats: Sequence[OpStats]) -> str:
    """record_execution: median (and mean) latency of the first vs the last 1,000 calls."""
    lines = [
        f"{'record_execution':<24} {'first ms':>9} {'last ms':>9} {'last/first':>10}"
        f"   {'mean: first':>11} {'last':>7}"
    ]
    for s in stats:
        if s.op == "record_execution" and "growth" in s.extra:
            g = s.extra["growth"]
            lines.append(
                f"{s.backend:<24} {g['first_ms']:>9.3f} {g['last_ms']:>9.3f} "
                f"{g['last_over_first']:>9.2f}x   "
                f"{g['first_mean_ms']:>11.3f} {g['last_mean_ms']:>7.3f}"
            )
    if len(lines) == 1:
        return ""
    lines[0] += f"   (median of the first vs last {_window(stats)} calls)"
    return "\n".join(lines)


def render_search_kinds(stats: Sequence[OpStats], agents: int, search_agents: int) -> str:
    """Median and p90 search latency (ms) per kind of search: which filters are slow, per
    backend (a run before p90s were kept shows the medians alone)."""
    tables = []
    for key, title in (("median_ms_by_kind", "median"), ("p90_ms_by_kind", "p90")):
        rows = [s for s in stats if key in s.extra and s.backend != JSON_FILES]
        if not rows:
            continue
        kinds = list(dict.fromkeys(k for s in rows for k in s.extra[key]))
        lines = [
            f"{f'search {title} ms by kind':<26} {'backend':<24} "
            + " ".join(f"{k[:10]:>10}" for k in kinds)
        ]
        for s in rows:
            by_kind = s.extra[key]
            cells = " ".join(
                f"{by_kind[k]:>10.2f}" if k in by_kind else f"{'-':>10}" for k in kinds
            )
            lines.append(f"{op_title(s.op, agents, search_agents):<26} {s.backend:<24} {cells}")
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


def _window(stats: Sequence[OpStats]) -> int:
    for s in stats:
        if "growth" in s.extra:
            window: int = s.extra["growth"]["window"]
            return window
    return 0


@dataclass(frozen=True)
class Target:
    name: str
    goal: str
    measured: str
    met: bool | None  #: None: not measured in this run


def targets(stats: Sequence[OpStats], agents: int, search_agents: int) -> list[Target]:
    """The goals acti_store (SQLite) must reach, evaluated on this run."""
    result = []
    for op in HALF_OF_RAW:
        acti, raw = _find(stats, op, ACTI_SQLITE), _find(stats, op, REFERENCE)
        if acti and raw:
            ratio = acti.ops_per_s / raw.ops_per_s
            measured = f"{ratio:.2f}x"
            if acti.median_ms and raw.median_ms:  # less sensitive to stalls than throughput
                measured += f" (median {raw.median_ms / acti.median_ms:.2f}x)"
            title = op_title(op, agents, search_agents)
            result.append(Target(title, ">= 0.50x raw ops/s", measured, ratio >= 0.5))
    acti, raw, files = (_find(stats, "search", b) for b in (ACTI_SQLITE, REFERENCE, JSON_FILES))
    if acti and raw and acti.median_ms and raw.median_ms:
        ratio = acti.median_ms / raw.median_ms
        result.append(
            Target(f"search @{agents:,} median", "<= 2x raw", f"{ratio:.2f}x raw", ratio <= 2)
        )
    if acti and files and acti.median_ms and files.median_ms:
        speedup = files.median_ms / acti.median_ms
        result.append(
            Target(
                f"search @{agents:,} median",
                ">= 50x faster than JSON files",
                f"{speedup:.0f}x",
                speedup >= 50,
            )
        )
    for op, size in (("search", agents), ("search_scale", search_agents)):
        if kinds := _kind_target(stats, op, size):
            result.append(kinds)
    scale = _find(stats, "search_scale", ACTI_SQLITE)
    if scale and scale.median_ms is not None:
        result.append(
            Target(
                f"search @{search_agents:,} median",
                f"<= {SEARCH_SCALE_LIMIT_MS:.0f} ms",
                f"{scale.median_ms:.1f} ms",
                scale.median_ms <= SEARCH_SCALE_LIMIT_MS,
            )
        )
    if scale and "p90_ms_by_kind" in scale.extra:
        every = scale.extra["median_ms_by_kind"].get("everything")
        if every is not None:
            result.append(
                Target(
                    f"search @{search_agents:,} every filter",
                    f"median <= {SEARCH_SCALE_LIMIT_MS:.0f} ms",
                    f"{every:.1f} ms",
                    every <= SEARCH_SCALE_LIMIT_MS,
                )
            )
        kind, worst = max(scale.extra["p90_ms_by_kind"].items(), key=lambda item: item[1])
        result.append(
            Target(
                f"search @{search_agents:,} p90 by kind",
                f"each <= {SEARCH_KIND_P90_LIMIT_MS:.0f} ms",
                f"{worst:.1f} ms ({kind})",
                worst <= SEARCH_KIND_P90_LIMIT_MS,
            )
        )
    record = _find(stats, "record_execution", ACTI_SQLITE)
    if record and "growth" in record.extra:
        growth = record.extra["growth"]["last_over_first"]
        result.append(
            Target(
                "record_execution flat",
                f"median last/first 1,000 <= {FLAT_LIMIT}x",
                f"{growth:.2f}x",
                growth <= FLAT_LIMIT,
            )
        )
    for op in ("export", "import"):
        title = f"{op} @{search_agents:,} peak RSS"
        goal = f"< {RSS_LIMIT_MB:.0f} MB"
        scale, live = _find(stats, f"{op}_scale", ACTI_SQLITE), _find(stats, op, ACTI_SQLITE)
        if scale is not None and scale.extra.get("inline"):
            result.append(Target(title, goal, "in-process run", None))
        elif scale is not None:
            peak = scale.extra["peak_rss_mb"]
            result.append(Target(title, goal, f"{peak:.0f} MB", peak < RSS_LIMIT_MB))
        elif live is not None and not live.extra.get("inline"):  # --scale-io not run: N figure
            measured = f"{live.extra['peak_rss_mb']:.0f} MB @{agents:,}"
            result.append(Target(title, goal, measured, None))
    return result


def _kind_target(stats: Sequence[OpStats], op: str, size: int) -> Target | None:
    """Each kind of search's median within 2x raw sqlite3's (or under ``SEARCH_KIND_FLOOR_MS``)
    and under ``SEARCH_SCALE_LIMIT_MS``: the kinds that miss, with their ratio and time."""
    acti, raw = _find(stats, op, ACTI_SQLITE), _find(stats, op, REFERENCE)
    if not (acti and raw and "median_ms_by_kind" in acti.extra):
        return None
    ours, theirs = acti.extra["median_ms_by_kind"], raw.extra["median_ms_by_kind"]
    misses = [
        f"{kind} {ms / theirs[kind]:.1f}x ({ms:.1f} ms)"
        for kind, ms in ours.items()
        if kind in theirs
        and (ms > max(2 * theirs[kind], SEARCH_KIND_FLOOR_MS) or ms > SEARCH_SCALE_LIMIT_MS)
    ]
    return Target(
        f"search @{size:,} each kind",
        f"<= 2x raw or {SEARCH_KIND_FLOOR_MS:.0f} ms, <= {SEARCH_SCALE_LIMIT_MS:.0f} ms",
        ", ".join(misses) if misses else f"all {len(ours)} kinds",
        not misses,
    )


def render_targets(items: Sequence[Target]) -> str:
    lines = [f"{'target (acti_store on SQLite)':<36} {'goal':<30} {'measured':>22}  status"]
    for t in items:
        status = "not measured" if t.met is None else ("met" if t.met else "NOT MET")
        lines.append(f"{t.name:<36} {t.goal:<30} {t.measured:>22}  {status}")
    return "\n".join(lines)


CHART_OPS: Final = (
    "create",
    "get",
    "update",
    "record_execution",
    "history_read",
    "search",
    "search_scale",
    "export",
    "import",
    "export_scale",
    "import_scale",
)


def write_chart(
    stats: Sequence[OpStats], path: Path, agents: int, search_agents: int, title: str
) -> None:
    """Grouped bars: ops/s per backend per operation, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [op for op in CHART_OPS if any(s.op == op for s in stats)]
    backends = list(dict.fromkeys(s.backend for s in stats))
    width = 0.8 / len(backends)
    fig, ax = plt.subplots(figsize=(max(8.0, 1.3 * len(ops)), 5.0))
    for i, backend in enumerate(backends):
        xs, ys = [], []
        for j, op in enumerate(ops):
            s = _find(stats, op, backend)
            if s is not None:
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(s.ops_per_s)
        ax.bar(xs, ys, width=width, label=backend)
    ax.set_yscale("log")
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels(
        [op_title(op, agents, search_agents).replace(" @", "\n@") for op in ops], fontsize=8
    )
    ax.set_ylabel("operations per second (log; export/import: agents per second)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
