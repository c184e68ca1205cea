"""The speed targets of the change feed and the config cache (issue 29), per engine:

* watch latency: a writer in another process updates one agent N times (``--spacing`` apart)
  and notes, per version, the time its ``update`` returned (committed); this process follows
  ``repo.awatch()`` and notes when each change arrives. Printed: p50 / p99 / max of arrival
  minus commit, in ms; target p99 <= 100 ms;
* ``ConfigCache`` hit: ``get(name)`` and ``get(name, label)`` of a cached pointer, the median
  per call of ``--repeat`` timings of ``--gets`` calls each, in µs; target <= 5 µs.

``python -m benchmarks.changes [--url URL] [--postgres-url URL] [--mysql-url URL] [--no-sqlite]
[--changes 200] [--spacing 0.02] [--gets 1000000] [--out benchmarks/results/changes.txt]``:
SQLite (a file of the run's) unless ``--no-sqlite``, a fresh schema (PostgreSQL) or database
(MariaDB) of the run with those options, ``--url`` as given (an agent of the run's own name).
Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from acti_store import AgentConfig, ConfigCache, SqlAgentRepository, open_repository

from .code_state import code_fingerprint
from .measure import git_state
from .report import ACTI_MYSQL, ACTI_POSTGRES
from .stores import Stores

ROOT: Final = Path(__file__).resolve().parent.parent
#: Targets: watch latency p99 and a cache hit.
LATENCY_P99_MS: Final = 100.0
HIT_US: Final = 5.0
#: How long the watcher waits for the writer's changes, at most, seconds.
WAIT: Final = 120.0

#: The writer: ``argv`` URL, agent, N, spacing; a line ``version time`` per committed update.
WRITER: Final = """
import sys, time
from acti_store import open_repository
url, name, count, spacing = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
repo = open_repository(url, migrate=False)
for i in range(count):
    agent = repo.update(name, {"tags": ["bench", f"change-{i}"]})
    print(agent.metadata.version, time.time(), flush=True)
    time.sleep(spacing)
repo.close()
"""


def _config(name: str) -> AgentConfig:
    return AgentConfig(
        name=name,
        description=f"Benchmark agent {name} for change feed timings",
        system_prompt=f"You are benchmark agent {name}. " * 4,
        tools=["crm"],
        tags=["bench"],
    )


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def _watch_latency(
    repo: SqlAgentRepository, url: str, name: str, count: int, spacing: float
) -> list[float]:
    """Arrival minus commit, in ms, of each of the writer's ``count`` changes of ``name``."""
    after = await repo.alast_change()
    arrived: dict[int, float] = {}
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WRITER,
        url,
        name,
        str(count),
        str(spacing),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    async def watch() -> None:
        async for change in repo.awatch(after=after):
            if change.agent == name and change.version is not None:
                arrived[change.version] = time.time()
                if len(arrived) == count:
                    return

    watcher = asyncio.ensure_future(watch())
    out, err = await asyncio.wait_for(writer.communicate(), WAIT)
    if writer.returncode != 0:
        watcher.cancel()
        raise RuntimeError(f"the writer failed: {err.decode()[-2000:]}")
    await asyncio.wait_for(watcher, WAIT)
    committed = {int(v): float(t) for v, t in (line.split() for line in out.decode().splitlines())}
    return [(arrived[version] - at) * 1000 for version, at in committed.items()]


def _hit_cost(cache: ConfigCache, name: str, gets: int, repeat: int) -> tuple[float, float]:
    """The median cost of one hit, µs: ``get(name)`` and ``get(name, "production")``."""
    cache.get(name)
    cache.get(name, "production")
    get = cache.get
    current = timeit.repeat(lambda: get(name), number=gets, repeat=repeat)
    labelled = timeit.repeat(lambda: get(name, "production"), number=gets, repeat=repeat)
    return (
        statistics.median(current) / gets * 1e6,
        statistics.median(labelled) / gets * 1e6,
    )


def run_engine(
    label: str, url: str, count: int, spacing: float, gets: int, repeat: int
) -> tuple[list[str], bool]:
    """The lines of one engine, and whether every target was met."""
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with open_repository(url) as repo:
        repo.create(_config(name))
        repo.set_label(name, "production", 1)
        latencies = asyncio.run(_watch_latency(repo, url, name, count, spacing))
        with ConfigCache(repo, max_staleness=60) as cache:
            current, labelled = _hit_cost(cache, name, gets, repeat)
    p50, p99 = _percentile(latencies, 0.5), _percentile(latencies, 0.99)
    met = p99 <= LATENCY_P99_MS and max(current, labelled) <= HIT_US
    lines = [
        f"== {label} ==",
        f"watch latency (awatch here, writer in another process, {count} updates "
        f"{spacing * 1000:.0f} ms apart): p50 {p50:.1f} ms, p99 {p99:.1f} ms, max "
        f"{max(latencies):.1f} ms (target p99 <= {LATENCY_P99_MS:.0f} ms)",
        f"ConfigCache hit, median of {repeat} x {gets:,} calls: get(name) {current:.2f} µs, "
        f"get(name, label) {labelled:.2f} µs (target <= {HIT_US:.0f} µs)",
    ]
    return lines, met


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", action="append", default=[], help="also on this store, as is")
    parser.add_argument("--postgres-url", help="also on PostgreSQL (a database for the run)")
    parser.add_argument("--mysql-url", help="also on MariaDB (a database for the run)")
    parser.add_argument("--no-sqlite", action="store_true", help="skip SQLite")
    parser.add_argument("--changes", type=int, default=200, help="writer's updates (200)")
    parser.add_argument("--spacing", type=float, default=0.02, help="between them, s (0.02)")
    parser.add_argument("--gets", type=int, default=1_000_000, help="hits per timing (1e6)")
    parser.add_argument("--repeat", type=int, default=5, help="timings of the hits (5)")
    parser.add_argument("--out", type=Path, help="also append the lines to this file")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="acti-changes-"))
    stores = Stores(workdir, args.postgres_url, args.mysql_url)
    engines = [] if args.no_sqlite else [("SQLite", f"sqlite:///{workdir / 'changes.db'}")]
    if args.postgres_url:
        engines.append(("PostgreSQL", stores.spec(ACTI_POSTGRES, "changes").location))
    if args.mysql_url:
        engines.append(("MariaDB", stores.spec(ACTI_MYSQL, "changes").location))
    engines += [(url.split(":", 1)[0], url) for url in args.url]
    state = git_state()
    lines = [
        f"benchmarks.changes, commit {state['commit']}"
        f"{' (acti_store modified)' if state['acti_store_dirty'] else ''}, code "
        f"{code_fingerprint()}, {os.cpu_count()} CPUs, load average at start "
        f"{os.getloadavg()[0]:.1f}"
    ]
    print(lines[0], flush=True)
    met = True
    try:
        for label, url in engines:
            block, ok = run_engine(label, url, args.changes, args.spacing, args.gets, args.repeat)
            met = met and ok
            print("\n".join(block), flush=True)
            lines += block
    finally:
        stores.close()
        shutil.rmtree(workdir, ignore_errors=True)
    lines.append("every target met" if met else "TARGET MISSED")
    print(lines[-1])
    if args.out:
        with args.out.open("a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n\n")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
