"""The async API with many tasks against the sync API from a few threads, on one store.

Both do the same work on ``--agents`` agents: ``--rounds`` rounds per worker of (record a run,
get the agent, search), every call timed. The async side runs ``--tasks`` tasks on one event loop
(``arecord_execution``, ``aget``, ``asearch``: on PostgreSQL psycopg's async connections, on SQLite
the store's own threads); the sync side ``--threads`` threads calling ``record_execution``,
``get``, ``search``. Prints ops/s and p50/p99 latency for both, and their ratio; checks that no
run was lost (exit 1 if one was).

    python -m benchmarks.async_api --url postgresql+psycopg://postgres@127.0.0.1:5432/test

A PostgreSQL URL gets a schema of its own for the run (dropped at the end).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from acti_store import AgentConfig, AgentRepository, ExecutionRecord, SearchQuery, open_repository

QUERY = SearchQuery(query="bench", sort_by="execution_count", limit=10)


@dataclass
class Result:
    label: str
    ops: int
    seconds: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.ops / self.seconds

    def percentile(self, p: float) -> float:
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[round(p) - 1]


def _config(i: int) -> AgentConfig:
    return AgentConfig(
        name=f"bench_{i:03d}",
        description=f"Bench agent number {i}",
        system_prompt="You answer benchmark questions quickly and politely.",
        tools=["crm"],
        stratum="RAI",
        tags=["bench"],
    )


def _record(repo: AgentRepository, i: int) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=repo.now(),
        task=f"task {i}",
        result_summary="ok",
        success=i % 5 != 0,
        duration_seconds=1.0,
        tool_calls_count=1,
    )


async def run_async(repo: AgentRepository, names: Sequence[str], tasks: int, rounds: int) -> Result:
    latencies: list[float] = []

    async def timed(call: Awaitable[object]) -> None:
        start = time.perf_counter()
        await call
        latencies.append(time.perf_counter() - start)

    async def worker(w: int) -> None:
        for r in range(rounds):
            name = names[(w + r) % len(names)]
            await timed(repo.arecord_execution(name, _record(repo, r)))
            await timed(repo.aget(name))
            await timed(repo.asearch(QUERY))

    await repo.aget(names[0])  # the async engine and its first connection: not measured
    start = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(tasks)))
    seconds = time.perf_counter() - start
    return Result(f"async API, {tasks} tasks", len(latencies), seconds, latencies)


def run_threads(repo: AgentRepository, names: Sequence[str], threads: int, rounds: int) -> Result:
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        mine: list[float] = []
        for r in range(rounds):
            name = names[(w + r) % len(names)]
            calls: tuple[Callable[[], object], ...] = (
                partial(repo.record_execution, name, _record(repo, r)),
                partial(repo.get, name),
                partial(repo.search, QUERY),
            )
            for call in calls:
                begin = time.perf_counter()
                call()
                mine.append(time.perf_counter() - begin)
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    start = time.perf_counter()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    seconds = time.perf_counter() - start
    return Result(f"sync API, {threads} threads", len(latencies), seconds, latencies)


def table(async_: Result, sync: Result) -> str:
    rows = [
        "| API | calls | ops/s | p50 ms | p99 ms |",
        "|---|---|---|---|---|",
    ]
    for result in (async_, sync):
        rows.append(
            f"| {result.label} | {result.ops:,} | {result.rate:,.0f} | "
            f"{result.percentile(50) * 1000:.1f} | {result.percentile(99) * 1000:.1f} |"
        )
    rows.append(
        f"| async / sync | | {async_.rate / sync.rate:.2f}x | "
        f"{async_.percentile(50) / sync.percentile(50):.2f}x | "
        f"{async_.percentile(99) / sync.percentile(99):.2f}x |"
    )
    return "\n".join(rows)


@contextlib.contextmanager
def store_url(url: str) -> Iterator[str]:
    """``url`` as it is (SQLite), or a fresh schema in that PostgreSQL database."""
    if not url.startswith("postgresql"):
        yield url
        return
    schema = f"acti_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        options = {"options": f"-csearch_path={schema}"}
        yield make_url(url).update_query_dict(options).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--url",
        default=os.environ.get("ACTI_STORE_TEST_POSTGRES_URL"),
        help="the database (default: $ACTI_STORE_TEST_POSTGRES_URL); a PostgreSQL one gets a "
        "schema of its own for the run",
    )
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=200, help="async tasks (default 200)")
    parser.add_argument("--threads", type=int, default=8, help="sync threads (default 8)")
    parser.add_argument(
        "--calls", type=int, default=6000, help="calls per API, about (default 6000)"
    )
    args = parser.parse_args(argv)
    if not args.url:
        parser.error("give --url (a PostgreSQL URL) or set ACTI_STORE_TEST_POSTGRES_URL")
    with store_url(args.url) as url:
        repo = open_repository(url)
        names = [repo.create(_config(i)).name for i in range(args.agents)]
        try:
            sync = run_threads(repo, names, args.threads, max(1, args.calls // 3 // args.threads))
            async_ = asyncio.run(
                _measured_then_closed(repo, names, args.tasks, args.calls // 3 // args.tasks)
            )
            runs = sum(repo.get(name).metadata.execution_count for name in names)
        finally:
            repo.close()
    expected = sum(r.ops for r in (sync, async_)) // 3
    print(
        f"store: {make_url(url).get_backend_name()}, {args.agents} agents; load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} (2-core machines are noisy)"
    )
    print(table(async_, sync))
    if runs != expected:
        print(f"LOST RUNS: {runs} counted, {expected} recorded")
        return 1
    return 0


async def _measured_then_closed(
    repo: AgentRepository, names: Sequence[str], tasks: int, rounds: int
) -> Result:
    try:
        return await run_async(repo, names, tasks, max(1, rounds))
    finally:
        await repo.aclose()


if __name__ == "__main__":
    raise SystemExit(main())
