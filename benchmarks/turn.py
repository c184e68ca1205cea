"""What a user pays per agent turn, and how much of it is the store's.

The loop an application runs per turn: resolve the production configuration from a
``ConfigCache`` (``cache.get(name, label="production")``, from memory while the change feed says
it is unchanged), then run that version (``AgentRunner.run(version, task)``: no read) with an
instant scripted model (one tool call to the MCP server, then the answer) and ONE warm MCP server
over stdio (``tests/mcp_servers/crm_server.py``, ``keep_servers``: it stays up between turns);
the runner records the run (its history record and counters) as usual. Turns go one after another
(``--turns``) and in bursts of ``--concurrent`` asyncio tasks on one loop (``--rounds`` bursts).

The store's time per turn is measured from outside acti_store: the runner and the cache are given
the store wrapped in a timing proxy (``TimedRepository``) that times every repository method, sync
and async, and charges it to the current turn (a ``ContextVar``). ``acall``/``acall_in_thread``
(how the runner reaches the store from its loop) count as their hop to the store's thread and
back plus the store calls the work makes; the work's own computing (rendering the report) is not
the store's. ``cache.get`` is timed itself (a miss's reads are inside it, not counted twice).
The cache's follower threads (watch, confirm) are no turn's: reported apart.

Prints, per engine (SQLite always; PostgreSQL with ``--postgres-url``, MariaDB with
``--mysql-url``: a schema / database created for the run and dropped, as ``stores`` does) and
concurrency, the turn's wall time (median, p90, p99), the store's ms per turn (median, p90), its
share of the turn, the repository calls per turn and where their time goes, and a pass/miss line
per target (store < 1 ms per turn on SQLite, < 3 ms on PostgreSQL, median)::

    python -m benchmarks.turn [--turns 200] [--concurrent 16] [--rounds 20] [--postgres-url URL]
                              [--mysql-url URL] [--out benchmarks/results/turn]
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import functools
import importlib.metadata
import inspect
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import sqlalchemy
from langchain_core.messages import AIMessage

from acti_store import AgentConfig, ConfigCache, open_repository
from acti_store.execution import AgentRunner
from acti_store.repository import AgentRepository
from acti_store.testing import ScriptedChatModel, calls, tool_call

from .report import ACTI_MYSQL, ACTI_POSTGRES, ACTI_SQLITE
from .stores import Stores
from .warm_runs import CATEGORIES, _ms, catalog

AGENT: Final = "turn_probe"
LABEL: Final = "production"
TASK: Final = "Who is the main contact at Acme Corp?"
PROMPT: Final = "You answer CRM questions with the CRM tools, in one short sentence."
TIMEOUT: Final = 300.0
WARMUP: Final = 5  # turns not measured: the server's start, imports, the cache's first read
TARGETS: Final = {ACTI_SQLITE: 1.0, ACTI_POSTGRES: 3.0}  # store ms per turn, median
#: Repository methods that hand back iterators: the cache's watcher holds one; no turn's call.
_ITERATORS: Final = frozenset({"watch", "awatch", "aiterate", "iter_agents", "iter_export"})
_DISPATCHES: Final = frozenset({"acall", "acall_in_thread"})


@dataclass
class Turn:
    """One turn: its wall time and every store call charged to it (name, ms, counted)."""

    entries: list[tuple[str, float, bool]] = field(default_factory=list)
    wall_ms: float = 0.0
    cache_missed: bool = False

    @property
    def store_ms(self) -> float:
        return sum(ms for _, ms, counted in self.entries if counted)

    @property
    def calls(self) -> list[str]:
        """The repository methods called (a hop or the cache's lookup is not one)."""
        return [
            name
            for name, _, counted in self.entries
            if counted and not name.endswith(" hop") and name != "ConfigCache.get"
        ]


_turn: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("turn", default=None)
_in_cache: contextvars.ContextVar[bool] = contextvars.ContextVar("in_cache", default=False)
#: Calls charged to no turn (the cache's follower threads): name -> [count, ms].
background: defaultdict[str, list[float]] = defaultdict(lambda: [0, 0.0])


def _charge(turn: Turn | None, name: str, ms: float) -> None:
    if turn is None:
        spent = background[name]
        spent[0] += 1
        spent[1] += ms
    elif _in_cache.get():  # inside cache.get, which is timed as a whole
        turn.entries.append((f"ConfigCache.get > {name}", ms, False))
        turn.cache_missed = True
    else:
        turn.entries.append((name, ms, True))


class TimedRepository:
    """``target`` with every method timed and charged to the current turn (``_turn``), or to the
    turn ``turn`` (the store the runner's ``acall`` work is handed)."""

    def __init__(self, target: AgentRepository, turn: Turn | None = None) -> None:
        self._target = target
        self._fixed = turn

    def _current(self) -> Turn | None:
        return self._fixed if self._fixed is not None else _turn.get()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value) or name in _ITERATORS:
            return value
        if name in _DISPATCHES:
            return self._dispatch(name, value)
        if inspect.iscoroutinefunction(value):

            @functools.wraps(value)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                turn, began = self._current(), time.perf_counter()
                try:
                    return await value(*args, **kwargs)
                finally:
                    _charge(turn, name, _ms(began))

            return timed_async

        @functools.wraps(value)
        def timed(*args: Any, **kwargs: Any) -> Any:
            turn, began = self._current(), time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                _charge(turn, name, _ms(began))

        return timed

    def _dispatch(self, name: str, dispatch: Callable[..., Any]) -> Callable[..., Any]:
        """``acall``/``acall_in_thread``: the hop (the call's wall time less its work's) is the
        store's; so is each store call of the work (timed by a proxy around the store it is
        handed); the rest of the work is the caller's computing, charged to nobody."""

        async def timed(work: Callable[[Any], Any]) -> Any:
            turn = self._current()
            inner = Turn()
            work_ms = 0.0

            def timed_work(store: AgentRepository) -> Any:
                nonlocal work_ms
                began = time.perf_counter()
                try:
                    return work(TimedRepository(store, inner if turn is not None else None))
                finally:
                    work_ms = _ms(began)

            began = time.perf_counter()
            try:
                return await dispatch(timed_work)
            finally:
                wall = _ms(began)
                if turn is None:
                    _charge(None, f"{name} (whole)", wall)
                else:
                    turn.entries.append((f"{name} hop", wall - work_ms, True))
                    turn.entries.extend((f"{name} > {n}", ms, c) for n, ms, c in inner.entries)
                    rest = work_ms - inner.store_ms
                    turn.entries.append((f"{name} work outside the store", rest, False))

        return timed


def instant_model(_model: str) -> ScriptedChatModel:
    """One tool call to the CRM server, then the answer: no time spent waiting for a model."""
    script = [calls(tool_call("crm_lookup_contact", company="Acme Corp")), AIMessage("John Smith")]
    return ScriptedChatModel(script=list(script))


async def one_turn(cache: ConfigCache, runner: AgentRunner) -> Turn:
    turn = Turn()
    token = _turn.set(turn)
    began = time.perf_counter()
    try:
        inside = _in_cache.set(True)
        try:
            version = cache.get(AGENT, label=LABEL)
        finally:
            _in_cache.reset(inside)
        turn.entries.append(("ConfigCache.get", _ms(began), True))
        report = await runner.run(version, TASK, timeout=TIMEOUT)
    finally:
        _turn.reset(token)
    turn.wall_ms = _ms(began)
    used = [c.tool_name for c in report.result.tool_calls] if report.result.success else []
    if report.record is None or used != ["crm_lookup_contact"] or report.result.degraded_mode:
        raise RuntimeError(f"a measured turn failed or was not recorded:\n{report.text}")
    return turn


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def summary(engine: str, concurrent: int, turns: list[Turn]) -> dict[str, Any]:
    walls = [t.wall_ms for t in turns]
    stores = [t.store_ms for t in turns]
    shares = [100 * s / w for s, w in zip(stores, walls, strict=True)]
    by_call: defaultdict[str, list[float]] = defaultdict(list)
    for turn in turns:
        for name, ms, _counted in turn.entries:
            by_call[name].append(ms)
    counted = {name for t in turns for name, _, c in t.entries if c}
    breakdown = {
        name: {
            "per_turn": len(values) / len(turns),
            "median_ms": statistics.median(values),
            "p90_ms": _pct(values, 0.9),
            "ms_per_turn": sum(values) / len(turns),
            "counted": name in counted,
        }
        for name, values in sorted(by_call.items(), key=lambda item: -sum(item[1]))
    }
    target = TARGETS.get(engine)
    store_median = statistics.median(stores)
    return {
        "engine": engine,
        "concurrent": concurrent,
        "turns": len(turns),
        "wall_ms": {q: _pct(walls, p) for q, p in (("p90", 0.9), ("p99", 0.99))}
        | {"median": statistics.median(walls)},
        "store_ms": {"median": store_median, "p90": _pct(stores, 0.9)},
        "store_percent": {"median": statistics.median(shares), "p90": _pct(shares, 0.9)},
        "store_calls_per_turn": statistics.median(len(t.calls) for t in turns),
        "calls_of_a_turn": sorted(set(turns[-1].calls)),
        "cache_misses": sum(t.cache_missed for t in turns),
        "breakdown": breakdown,
        "target_ms": target,
        "target_met": None if target is None else store_median < target,
    }


async def measure(
    engine: str, url: str, turns: int, concurrent: int, rounds: int, starts: Path
) -> list[dict[str, Any]]:
    repo = open_repository(url)
    try:
        tools = ["crm"]
        repo.create(
            AgentConfig(name=AGENT, description="Turn probe", system_prompt=PROMPT, tools=tools)
        )
        repo.update(AGENT, {"system_prompt": PROMPT + " Be brief."})  # version 2, the current
        repo.set_label(AGENT, LABEL, 1)  # production stays on version 1
        timed = cast(AgentRepository, TimedRepository(repo))
        rows = []
        with ConfigCache(timed) as cache:
            async with AgentRunner(
                timed, model=instant_model, catalog=catalog(starts), keep_servers=300.0
            ) as runner:
                for _ in range(WARMUP):
                    await one_turn(cache, runner)
                one = [await one_turn(cache, runner) for _ in range(turns)]
                rows.append(summary(engine, 1, one))
                many: list[Turn] = []
                for _ in range(rounds):
                    many += await asyncio.gather(
                        *(one_turn(cache, runner) for _ in range(concurrent))
                    )
                rows.append(summary(engine, concurrent, many))
        stats = repo.execution_stats(AGENT)
        expected = WARMUP + turns + rounds * concurrent
        if (
            stats.total_executions != expected
            or repo.version_stats(AGENT)[1].total_executions != expected
        ):
            raise RuntimeError(f"{stats.total_executions} runs recorded, {expected} expected")
        for row in rows:
            row["runs_recorded_in_all"] = stats.total_executions
            row["server_processes_started"] = len(starts.read_text().split())
    finally:
        await repo.aclose()
    return rows


def server_version(url: str) -> str:
    if url.startswith("sqlite"):
        return f"SQLite {sqlite3.sqlite_version}"
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.exec_driver_sql("SELECT version()").scalar())
    finally:
        engine.dispose()


def machine() -> dict[str, Any]:
    packages = ("acti-store", "sqlalchemy", "langgraph", "deepagents", "mcp", "psycopg", "pymysql")
    versions: dict[str, str | None] = {}
    for package in packages:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "packages": versions,
    }


def render(rows: list[dict[str, Any]], seconds: float) -> str:
    lines = [
        "per turn: wall ms (median/p90/p99), the store's ms (median/p90) and share of the turn "
        "(median), repository calls",
        f"{'engine':<24} {'conc':>4} {'turns':>5} {'wall median/p90/p99':>22} "
        f"{'store median/p90':>17} {'store %':>7} {'calls':>5} {'cache miss':>10}",
    ]
    for r in rows:
        w, s = r["wall_ms"], r["store_ms"]
        lines.append(
            f"{r['engine']:<24} {r['concurrent']:>4} {r['turns']:>5} "
            f"{w['median']:>8.1f}/{w['p90']:>6.1f}/{w['p99']:>6.1f} "
            f"{s['median']:>9.2f}/{s['p90']:>7.2f} {r['store_percent']['median']:>6.1f}% "
            f"{r['store_calls_per_turn']:>5} {r['cache_misses']:>10}"
        )
    lines += ["", "targets (the store's median ms per turn):"]
    for r in rows:
        if r["target_ms"] is not None:
            verdict = "PASS" if r["target_met"] else "MISS"
            lines.append(
                f"  {verdict} {r['engine']} at {r['concurrent']}: "
                f"{r['store_ms']['median']:.2f} ms < {r['target_ms']:.0f} ms"
            )
    lines += ["", "where the store's time goes (per call: median ms; * = not counted, see doc):"]
    for r in rows:
        lines.append(f"  {r['engine']} at {r['concurrent']}:")
        for name, b in r["breakdown"].items():
            mark = " " if b["counted"] else "*"
            lines.append(
                f"   {mark} {name:<58} {b['per_turn']:>5.2f}/turn {b['median_ms']:>8.3f} ms "
                f"(p90 {b['p90_ms']:>7.3f}) {b['ms_per_turn']:>8.3f} ms/turn"
            )
    idle = ", ".join(f"{n} x{int(c)} {ms:.0f} ms" for n, (c, ms) in sorted(background.items()))
    lines += ["", f"the cache's follower threads (no turn's): {idle or 'none'}"]
    lines.append(f"runtime {seconds:.0f} s, load average {os.getloadavg()[0]:.1f}")
    return "\n".join(lines)


def chart(rows: list[dict[str, Any]], path: Path) -> None:
    """Stacked bars per engine, a panel per concurrency: the store's median ms, the rest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = sorted({r["concurrent"] for r in rows})
    fig, axes = plt.subplots(1, len(levels), figsize=(5 * len(levels), 4.5), squeeze=False)
    for ax, level in zip(axes[0], levels, strict=True):
        cells = [r for r in rows if r["concurrent"] == level]
        names = [r["engine"].removeprefix("acti_store[").rstrip("]") for r in cells]
        store = [r["store_ms"]["median"] for r in cells]
        rest = [max(0.0, r["wall_ms"]["median"] - s) for r, s in zip(cells, store, strict=True)]
        ax.bar(names, store, label="store", color="tab:red")
        ax.bar(names, rest, bottom=store, label="rest of the turn", color="tab:gray")
        for i, r in enumerate(cells):
            note = f"store {store[i]:.2f} ms\n{r['store_percent']['median']:.1f}%"
            ax.annotate(note, (i, store[i] + rest[i]), ha="center", va="bottom", fontsize=8)
        ax.set_title(f"{level} turn{'s' if level > 1 else ''} at once")
        ax.set_ylabel("ms per turn (median)")
        ax.set_ylim(0, 1.2 * max(s + r for s, r in zip(store, rest, strict=True)))
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("One agent turn: the store's time vs the rest (medians)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="turns one after another (200)")
    parser.add_argument("--concurrent", type=int, default=16, help="turns per burst (16)")
    parser.add_argument("--rounds", type=int, help="bursts (default: turns / 10, at least 1)")
    parser.add_argument("--postgres-url", help="also on PostgreSQL (a database made for it)")
    parser.add_argument("--mysql-url", help="also on MariaDB (a database made for it)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/turn"))
    args = parser.parse_args(argv)
    rounds = args.rounds or max(1, args.turns // 10)
    for _, _, _, variable in CATEGORIES:
        os.environ.setdefault(variable, f"probe-{variable.lower()}")
    info = machine()
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        stores = Stores(Path(tmp), args.postgres_url, args.mysql_url)
        try:
            engines = [ACTI_SQLITE] + [ACTI_POSTGRES] * bool(args.postgres_url)
            engines += [ACTI_MYSQL] * bool(args.mysql_url)
            for i, engine in enumerate(engines):
                url = stores.spec(engine, "turn").location
                info.setdefault("servers", {})[engine] = server_version(url)
                starts = Path(tmp) / f"starts-{i}.txt"
                rows += asyncio.run(
                    measure(engine, url, args.turns, args.concurrent, rounds, starts)
                )
        finally:
            stores.close()
    seconds = time.perf_counter() - began
    text = render(rows, seconds)
    print(text)
    info["load_average_after"] = os.getloadavg()
    settings = {"turns": args.turns, "concurrent": args.concurrent, "rounds": rounds}
    document = {
        "machine": info,
        "settings": settings | {"warmup_turns": WARMUP, "seconds": seconds},
        "results": rows,
        "background": {n: {"calls": int(c), "ms": ms} for n, (c, ms) in background.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(document, indent=1, default=str) + "\n")
    args.out.with_suffix(".txt").write_text(text + "\n")
    chart(rows, args.out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
