"""How long an export holds its snapshot, and what that does to writers and (SQLite) the WAL.

Builds a store of N agents with the bulk path (``benchmarks.workload.bulk_agents``: about 45%
have run, with up to 50 records each), then, with one writer process recording runs
continuously:

1. ``export_json`` of the whole store meanwhile: the time it holds its one snapshot (the whole
   export), the writer's runs/s, and the WAL's largest size (a reader's snapshot stops SQLite
   from resetting the WAL past it, so the WAL grows with every write made during the export);
2. the writer alone for as long as the export took: runs/s and the WAL's largest size.

    python -m benchmarks.export_snapshot [--agents 100000] [--url URL] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import tempfile
import threading
import time
from datetime import UTC, datetime
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from acti_store import ExecutionRecord, export_json, open_repository
from acti_store.repository import ImportItem

from .workload import bulk_agents


def _build(url: str, agents: int) -> float:
    repo = open_repository(url)
    start = time.perf_counter()
    try:
        for chunk in bulk_agents(agents, seed=7):
            items = [ImportItem(a.name, a, h) for a, h in chunk]
            repo.bulk_put(items)
    finally:
        repo.close()
    return time.perf_counter() - start


def _writer(url: str, names: list[str], ready: Event, stop: Event, counts: Any) -> None:
    repo = open_repository(url, migrate=False)
    rng = random.Random(1)
    done = 0
    ready.set()
    while not stop.is_set():
        repo.record_execution(
            rng.choice(names),
            ExecutionRecord(
                timestamp=datetime.now(UTC),
                task="benchmark run",
                result_summary="ok",
                success=True,
                duration_seconds=0.1,
            ),
        )
        done += 1
        counts.value = done
    repo.close()


class _WalWatch(threading.Thread):
    """The largest size of the SQLite WAL file, sampled every 50 ms."""

    def __init__(self, wal: Path | None) -> None:
        super().__init__(daemon=True)
        self.wal = wal
        self.largest = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.05):
            if self.wal is not None and self.wal.exists():
                self.largest = max(self.largest, self.wal.stat().st_size)


def _phase(
    url: str, names: list[str], wal: Path | None, work: Any
) -> tuple[float, float, tuple[int, int, int], Any]:
    """Run ``work()`` while a writer records runs: seconds, writer runs/s, the WAL's size when
    ``work`` began, its largest size until it ended and its size then, and what ``work``
    returned."""
    ctx = multiprocessing.get_context("fork")
    ready, stop, counts = ctx.Event(), ctx.Event(), ctx.Value("q", 0)
    writer = ctx.Process(target=_writer, args=(url, names, ready, stop, counts))
    writer.start()
    ready.wait(60)
    time.sleep(1.0)  # the writer at full speed, the WAL at its steady size
    watch = _WalWatch(wal)
    steady = watch.largest = wal.stat().st_size if wal is not None and wal.exists() else 0
    watch.start()
    before = counts.value
    start = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - start
    runs = counts.value - before
    watch.stopped.set()
    watch.join()
    final = wal.stat().st_size if wal is not None and wal.exists() else 0
    stop.set()
    writer.join(60)
    return seconds, runs / seconds, (steady, watch.largest, final), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100_000)
    parser.add_argument("--url", help="an empty store (default: a SQLite file in --workdir)")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="acti-export-snapshot-"))
    workdir.mkdir(parents=True, exist_ok=True)
    url = args.url or f"sqlite:///{workdir / 'store.db'}"
    wal = None if args.url else workdir / "store.db-wal"

    built = _build(url, args.agents)
    repo = open_repository(url, migrate=False)
    names = repo.list_names()
    print(f"store: {len(names):,} agents on {url.split(':')[0]}, built in {built:.1f}s")
    export_dir = workdir / "export"
    export_json(repo, export_dir)  # the folder's first fill: later exports rewrite what changed
    held, rate, (steady, largest, _), report = _phase(
        url, names, wal, lambda: export_json(repo, export_dir)
    )
    repo.close()
    _, alone_rate, (_, _, after), _ = _phase(url, names, wal, lambda: time.sleep(held))
    mib = 2**20
    print(
        f"export of {report.agents:,} agents ({report.histories:,} histories): snapshot held "
        f"{held:.1f}s ({report.agents / held:,.0f} agents/s); writer meanwhile {rate:,.0f} runs/s"
    )
    print(f"writer alone for as long: {alone_rate:,.0f} runs/s")
    if wal is not None:
        print(
            f"WAL file: {steady / mib:.1f} MiB when the export began, at most "
            f"{largest / mib:.1f} MiB during it, {after / mib:.1f} MiB after the writer alone"
        )


if __name__ == "__main__":
    main()
