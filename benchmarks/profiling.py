"""Where acti_store's time goes, per operation: cProfile, grouped into layers, plus the SQL sent.

    python -m benchmarks.profiling [--agents 5000] [--out benchmarks/results/profile.txt]

Runs the benchmark's workload (same generator, same seed) on a fresh acti_store SQLite store and
profiles each operation separately. For each: the time per call split by layer (the driver's C
calls, SQLAlchemy's statement compilation, execution, result processing, events and pool, pydantic,
acti_store's own code, ...), the top functions by own time, and the exact statements one call sends
to SQLite (a trace callback on the DBAPI connection: BEGIN/COMMIT round trips included).

Times are wall-clock (cProfile's default timer) and inflated by the profiler's own overhead on
Python calls; compare layers within one run, not with the benchmark's numbers.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from sqlalchemy import event

from acti_store import open_repository
from acti_store.repository import SqlAgentRepository

from .workload import BenchClock, WorkloadSize, make_workload

#: (layer, substrings of "file:function" that put a function in it); the first match wins.
LAYERS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("sqlite3 driver (C: SQL execution, fetch)", ("sqlite3.Cursor", "sqlite3.Connection")),
    ("SQLAlchemy: statement compilation", ("sqlalchemy/sql/compiler.py",)),
    (
        "SQLAlchemy: cache keys / traversal",
        ("sqlalchemy/sql/cache_key.py", "sqlalchemy/sql/traversals.py", "sqlalchemy/sql/visitors"),
    ),
    ("SQLAlchemy: expression building", ("sqlalchemy/sql/",)),
    ("SQLAlchemy: events", ("sqlalchemy/event/",)),
    ("SQLAlchemy: pool", ("sqlalchemy/pool/",)),
    (
        "SQLAlchemy: result rows",
        ("sqlalchemy/engine/result.py", "sqlalchemy/engine/cursor.py", "sqlalchemy/engine/row"),
    ),
    ("SQLAlchemy: dialect type processing", ("sqlalchemy/dialects/",)),
    ("SQLAlchemy: engine / connection", ("sqlalchemy/",)),
    ("pydantic (validation, construct, copy)", ("pydantic",)),
    ("acti_store: store policy (events, BEGIN)", ("acti_store/engine.py",)),
    ("acti_store: fast SQL path (sqlexec)", ("acti_store/sqlexec.py", "acti_store/prepared.py")),
    ("acti_store: repository code", ("acti_store/",)),
    ("datetime / json / re", ("datetime", "/json/", "/re/", "_strptime", "fromisoformat")),
    ("benchmark loop", ("benchmarks/",)),
)


def layer_of(key: tuple[str, int, str]) -> str:
    file, _, function = key
    text = f"{file}:{function}"
    for layer, markers in LAYERS:
        if any(marker in text for marker in markers):
            return layer
    return "other Python / interpreter"


@contextmanager
def traced(repo: SqlAgentRepository) -> Iterator[list[str]]:
    """Collect every SQL statement the store sends while inside the block."""
    statements: list[str] = []

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.set_trace_callback(statements.append)

    event.listen(repo.engine, "connect", on_connect)
    repo.close()  # its connections are closed: new ones get the callback
    try:
        yield statements
    finally:
        event.remove(repo.engine, "connect", on_connect)
        repo.close()


def profile(name: str, calls: int, body: Callable[[], None]) -> tuple[str, pstats.Stats]:
    profiler = cProfile.Profile()
    profiler.enable()
    body()
    profiler.disable()
    stats = pstats.Stats(profiler)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values())
    layers: dict[str, float] = {}
    for key, (_cc, _nc, tottime, _ct, _callers) in raw.items():
        layers[layer_of(key)] = layers.get(layer_of(key), 0.0) + tottime
    lines = [
        f"== {name}: {calls} calls, {total / calls * 1e6:.0f} us per call under the profiler",
        f"   {'layer':<44} {'us/call':>8} {'share':>6}",
    ]
    for layer, seconds in sorted(layers.items(), key=lambda kv: -kv[1]):
        lines.append(f"   {layer:<44} {seconds / calls * 1e6:>8.1f} {seconds / total:>6.0%}")
    lines.append("   top functions by own time (us/call, calls/call):")
    top = sorted(raw.items(), key=lambda kv: -kv[1][2])[:14]
    for (file, line, function), (_cc, nc, tottime, _ct, _callers) in top:
        where = f"{_short(file)}:{line}({function})" if line else function
        lines.append(f"     {tottime / calls * 1e6:>7.1f}  {nc / calls:>6.1f}x  {where}")
    return "\n".join(lines), stats


def _short(file: str) -> str:
    for marker in ("site-packages/", "acti_store/", "benchmarks/", "lib/python3"):
        if marker in file:
            return file[file.index(marker) :]
    return file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profiling")
    parser.add_argument("--agents", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=20250109)
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args(argv)

    size = WorkloadSize(
        agents=args.agents,
        gets=2_000,
        updates=500,
        searches=200,
        executions=2 * args.agents,
        history_reads=2_000,
    )
    workload = make_workload(size, args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="acti-profile-"))
    clock = BenchClock()
    repo = open_repository(f"sqlite:///{workdir / 'store.db'}", clock=clock)
    report: list[str] = [f"acti_store profile at {args.agents:,} agents (cProfile; SQLite)"]

    def create() -> None:
        for item in workload.creates:
            clock.set(item.at)
            repo.create(item.config)

    def get() -> None:
        for name in workload.gets:
            repo.get(name)

    def update() -> None:
        for item in workload.updates:
            clock.set(item.at)
            repo.update(item.name, item.changes)

    def record() -> None:
        for execution in workload.executions:
            repo.record_execution(execution.name, execution.record)

    def history() -> None:
        for name in workload.history_reads:
            repo.get_history(name, limit=workload.history_limit)

    def search() -> None:
        for query in workload.searches:
            repo.search(query)

    steps: list[tuple[str, int, Callable[[], None], Callable[[], object]]] = [
        ("create", len(workload.creates), create, lambda: repo.create(_spare(workload))),
        ("get", len(workload.gets), get, lambda: repo.get(workload.gets[0])),
        (
            "update",
            len(workload.updates),
            update,
            lambda: repo.update(workload.updates[0].name, workload.updates[0].changes),
        ),
        (
            "record_execution",
            len(workload.executions),
            record,
            lambda: repo.record_execution(
                workload.executions[-1].name, workload.executions[-1].record
            ),
        ),
        (
            "history_read",
            len(workload.history_reads),
            history,
            lambda: repo.get_history(workload.history_reads[0], limit=10),
        ),
        ("search", len(workload.searches), search, lambda: repo.search(workload.searches[0])),
    ]
    try:
        for name, calls, body, once in steps:
            text, _ = profile(name, calls, body)
            with traced(repo) as statements:
                once()
            report.append(text)
            report.append(
                f"   SQLite trace of one {name} call ({len(statements)} statements started; "
                "'--' lines run inside triggers or FTS5):"
            )
            report.extend(f"     {line}" for line in _collapse(statements))
            report.append("")
    finally:
        repo.close()
        shutil.rmtree(workdir, ignore_errors=True)
    text = "\n".join(report)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    return 0


def _collapse(statements: list[str]) -> Iterator[str]:
    """One line per statement, runs of the same statement shown once with a count."""
    previous, count = None, 0
    for statement in [*statements, None]:
        if statement == previous:
            count += 1
            continue
        if previous is not None:
            text = " ".join(previous.split())[:150]
            yield f"{text}  (x{count})" if count > 1 else text
        previous, count = statement, 1


def _spare(workload: Any) -> Any:
    """A config not yet in the store: the first one, renamed."""
    config = workload.creates[0].config
    return config.model_copy(update={"name": config.name + "_spare"})


if __name__ == "__main__":
    sys.exit(main())
