"""Where a SQLite create's and update's time goes: pages per commit and time per statement.

``python -m benchmarks.write_cost [--base dbb6849] [--agents 3000] [--calls 2000]`` runs this
working tree's ``acti_store`` (and, with ``--base``, that revision's, from ``git archive`` as
``benchmarks.ab`` takes it) in a worker process of its own, on a fresh SQLite store of
``--agents`` agents (``benchmarks.ab``'s configurations), then:

- **pages**: for 40 creates and 40 updates (the description, as ``benchmarks.ab`` updates), the
  WAL frames each commit appended, each frame's page mapped to its table or index by
  ``dbstat``: the median pages per call, their spread, and the b-trees of one create with tags;
- **statements**: ``--calls`` creates and updates with every statement timed at the driver (a
  ``sqlite3.Connection`` subclass whose cursors time ``execute`` and ``executemany``, and its
  ``commit``): the median per statement, by its SQL's first 60 characters.

The worker imports nothing but the standard library, ``benchmarks.ab``'s agents (that module,
standard library only, is copied beside the worker) and the ``acti_store`` its ``PYTHONPATH``
names, so any revision's tree runs it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

try:  # the worker: a copy of this script, with ab.py copied beside it
    from ab import _config
except ImportError:  # python -m benchmarks.write_cost
    from .ab import _config

#: A WAL frame: a 24-byte header (its first 4 bytes the page number), then the page.
_WAL_HEADER: Final = 32
_FRAME_HEADER: Final = 24
#: Creates and updates whose pages are counted.
_COUNTED: Final = 40

# -- worker ----------------------------------------------------------------------------------

_TIMES: dict[str, list[float]] = collections.defaultdict(list)
_TIMING = [False]


def _timed(key: str, began: float) -> None:
    if _TIMING[0]:
        _TIMES[key].append(time.perf_counter() - began)


def _key(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()[:60]


class _Cursor(sqlite3.Cursor):
    def execute(self, sql: str, *args: Any) -> Any:  # type: ignore[override]
        began = time.perf_counter()
        result = super().execute(sql, *args)
        _timed(_key(sql), began)
        return result

    def executemany(self, sql: str, *args: Any) -> Any:  # type: ignore[override]
        began = time.perf_counter()
        result = super().executemany(sql, *args)
        _timed("(many) " + _key(sql), began)
        return result


class _Connection(sqlite3.Connection):
    def cursor(self, factory: Any = _Cursor) -> Any:  # type: ignore[override]
        return super().cursor(factory)

    def commit(self) -> None:
        began = time.perf_counter()
        super().commit()
        _timed("COMMIT", began)


def _timing_connections() -> None:
    """Every SQLite connection opened from now on times its statements (SQLAlchemy's pysqlite
    dialect connects through ``sqlite3.dbapi2``)."""
    import sqlite3.dbapi2 as dbapi2

    connect = sqlite3.connect

    def timing_connect(*args: Any, **kwargs: Any) -> Any:
        return connect(*args, factory=_Connection, **kwargs)

    sqlite3.connect = dbapi2.connect = timing_connect  # type: ignore[assignment]


def _frames(path: str) -> int:
    wal = path + "-wal"
    return os.path.getsize(wal) // (4096 + _FRAME_HEADER) if os.path.exists(wal) else 0


def _pages(path: str, first: int, stop: int) -> list[int]:
    with open(path + "-wal", "rb") as wal:
        found = []
        for frame in range(first, stop):
            wal.seek(_WAL_HEADER + frame * (4096 + _FRAME_HEADER))
            found.append(struct.unpack(">I", wal.read(4))[0])
        return found


def _checkpoint(path: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _pages_per_call(agents: int) -> dict[str, Any]:
    from acti_store import AgentConfig, open_repository

    folder = tempfile.mkdtemp()
    path = f"{folder}/store.db"
    repo = open_repository(f"sqlite:///{path}")
    try:
        for i in range(agents):
            repo.create(AgentConfig(**_config(i)))
        counts: dict[str, list[int]] = {"create": [], "update": []}
        tagged: list[int] = []
        _checkpoint(path)
        for i in range(agents, agents + _COUNTED):
            before = _frames(path)
            repo.create(AgentConfig(**_config(i)))
            counts["create"].append(_frames(path) - before)
            if not tagged and _config(i)["tags"]:
                tagged = _pages(path, before, _frames(path))
        _checkpoint(path)
        for i in range(_COUNTED):
            name = _config(i * 7 % agents)["name"]
            before = _frames(path)
            repo.update(name, {"description": f"Updated {i} " + name})
            counts["update"].append(_frames(path) - before)
    finally:
        repo.close()
    with sqlite3.connect(path) as conn:
        owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
    shutil.rmtree(folder)
    trees = collections.Counter(owner.get(page, "?") for page in tagged)
    return {
        call: {"median": statistics.median(n), "min": min(n), "max": max(n)}
        for call, n in counts.items()
    } | {"tagged_create": dict(sorted(trees.items()))}


def _statement_times(agents: int, calls: int) -> dict[str, Any]:
    from acti_store import AgentConfig, open_repository

    with tempfile.TemporaryDirectory() as folder:
        repo = open_repository(f"sqlite:///{folder}/store.db")
        try:
            for i in range(agents):
                repo.create(AgentConfig(**_config(i)))
            configs = [AgentConfig(**_config(i)) for i in range(agents, agents + calls)]
            names = [_config(i % agents)["name"] for i in range(calls)]
            work: dict[str, list[Callable[[], object]]] = {
                "create": [lambda c=c: repo.create(c) for c in configs],  # type: ignore[misc]
                "update": [
                    lambda i=i, n=n: repo.update(n, {"description": f"Updated {i} " + n})  # type: ignore[misc]
                    for i, n in enumerate(names)
                ],
            }
            report: dict[str, Any] = {}
            for call, each in work.items():
                _TIMES.clear()
                spent = []
                _TIMING[0] = True
                for one in each:
                    began = time.perf_counter()
                    one()
                    spent.append(time.perf_counter() - began)
                _TIMING[0] = False
                report[call] = {"call": statistics.median(spent) * 1e6} | {
                    sql: statistics.median(t) * 1e6 for sql, t in _TIMES.items()
                }
        finally:
            repo.close()
    return report


def worker(agents: int, calls: int) -> None:
    _timing_connections()
    import acti_store

    pages = _pages_per_call(agents)
    times = _statement_times(agents, calls)
    print(json.dumps({"package": acti_store.__file__, "pages": pages, "times": times}))


# -- driver ----------------------------------------------------------------------------------


def _measure(tree: Path, script: Path, agents: int, calls: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, str(script), "--worker", "--agents", str(agents)]
    out = subprocess.run(
        [*command, "--calls", str(calls)], cwd=tree, env=env, check=True, capture_output=True
    )
    found: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    if not str(found["package"]).startswith(str(tree)):
        raise SystemExit(f"the worker for {tree} imported {found['package']}")
    return found


def _print(label: str, found: dict[str, Any]) -> None:
    print(f"== {label} ({found['package']})")
    for call in ("create", "update"):
        pages = found["pages"][call]
        print(
            f"{call}: {pages['median']:g} pages per commit "
            f"(median; {pages['min']}-{pages['max']}), "
            f"{found['times'][call]['call']:.0f} µs per call (median)"
        )
        for sql, spent in found["times"][call].items():
            if sql != "call":
                print(f"    {spent:7.1f} µs  {sql}")
    print("b-trees of a create with tags:", found["pages"]["tagged_create"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.write_cost", description=__doc__)
    parser.add_argument("--base", default=None, help="a revision measured too (e.g. dbb6849)")
    parser.add_argument("--agents", type=int, default=3_000, help="agents in the store (3,000)")
    parser.add_argument("--calls", type=int, default=2_000, help="timed creates and updates")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.agents, args.calls)
        return 0
    from .ab import ROOT, base_tree  # the driver's alone

    with ExitStack() as stack:
        script = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "write_cost_worker.py"
        shutil.copyfile(__file__, script)
        # the A/B's agents, from its module copied beside the worker (standard library only)
        shutil.copyfile(Path(__file__).with_name("ab.py"), script.with_name("ab.py"))
        sides = {"now": ROOT}
        if args.base is not None:
            tree, commit = stack.enter_context(base_tree(args.base))
            sides = {f"base ({commit[:7]})": tree, **sides}
        for label, tree in sides.items():
            _print(label, _measure(tree, script, args.agents, args.calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
