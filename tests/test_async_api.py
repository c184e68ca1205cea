"""The async API: ``aget``, ``arecord_execution``, ... on both engines, the loop kept free.

The rules of each method are tested once, in the conformance suite (``test_repository``), which
runs through the async twins too; here: that every method has a twin, many tasks at once, what
the coroutines run on (the store's own threads on SQLite, psycopg's async connections on
PostgreSQL), waits that must not hold the loop, ``aclose``, and the tools' coroutines.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import NO_TWIN, make_config
from sqlalchemy import create_engine, event, text

from acti_store import (
    AgentRepository,
    ExecutionRecord,
    SearchQuery,
    SqlAgentRepository,
    open_repository,
)
from acti_store.interchange import JsonMirror
from acti_store.repository.asynchronous import STORE_THREADS, THREAD_NAME
from acti_store.tools import make_builder_tools
from acti_store.tools.builder import BuilderTools
from acti_store.tools.specs import async_variants

#: Every store_url here is at head: the tests open it with options, not to migrate it.
pytestmark = pytest.mark.store_at_head

#: The heartbeat's period, and the longest it may wake late (the issue's target) beyond how late
#: it wakes on an idle loop just before (the machine's own noise: 15 ms at a load of 8 on 2 cores).
#: The storm is measured up to five times before the test fails: a loaded machine deschedules
#: the process now and then (the same storm on SQLite woke the loop 8 to 169 ms late at a load of
#: 12 on 2 cores), whereas a blocking step stalls every attempt (1.3-1.7 s when the twins ran on
#: the loop's thread).
TICK = 0.005
MAX_LAG = 0.050
ATTEMPTS = 5
AGENTS = 10
TASKS = 200
#: The methods that make the twins run (not twins of a sync method themselves).
DISPATCHERS = frozenset({"acall", "acall_in_thread", "aiterate"})


def record(repo: AgentRepository, task: str, success: bool = True) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=repo.now(),
        task=task,
        result_summary="done",
        success=success,
        duration_seconds=1.5,
        tool_calls_count=1,
        error_type=None if success else "ExecutionError",
    )


class Heartbeat:
    """Wakes every ``TICK`` seconds on the running loop and keeps how late it woke at worst."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while not self._done.is_set():
            await asyncio.sleep(TICK)
            now = loop.time()
            self.worst = max(self.worst, now - last - TICK)
            last = now

    async def during(self, work: Awaitable[object]) -> float:
        """Await ``work`` while beating; the worst lag, in seconds. A full garbage collection
        stops every thread of this large process: collected before, not during."""
        gc.collect()
        gc.disable()
        self._task = asyncio.create_task(self._beat())
        try:
            await work
        finally:
            self._done.set()
            await self._task
            gc.enable()
        return self.worst


# -- every method ----------------------------------------------------------------------------------


def test_every_store_method_has_an_async_twin_with_the_same_parameters() -> None:
    methods = dict(inspect.getmembers(AgentRepository, inspect.isfunction))
    sync = {
        name
        for name in methods
        if not name.startswith("_")
        and name not in NO_TWIN | DISPATCHERS
        and not (name.startswith("a") and name[1:] in methods)
    }
    assert {"get", "create", "record_execution", "search_page", "iter_export", "close"} <= sync
    for name in sorted(sync):
        twin = methods.get(f"a{name}")
        assert twin is not None, f"{name} has no async twin a{name}"
        mine, theirs = inspect.signature(methods[name]), inspect.signature(twin)
        assert list(mine.parameters.values()) == list(theirs.parameters.values()), name
        if name.startswith("iter_") or name == "watch":
            assert str(theirs.return_annotation).startswith("AsyncIterator"), name
        else:
            assert inspect.iscoroutinefunction(twin), name


# -- many tasks at once ----------------------------------------------------------------------------


async def test_200_tasks_lose_no_count_and_keep_the_loop_free(store_url: str) -> None:
    """200 tasks at once, each recording a run on one of 10 agents, reading an agent and
    searching: every run is counted, and the loop never wakes more than 50 ms later than idle."""
    repo = open_repository(store_url)
    names = [f"agent_{i:02d}" for i in range(AGENTS)]
    try:
        for name in names:
            await repo.acreate(make_config(name, description=f"Storm agent {name}"))

        async def task(i: int) -> None:
            name = names[i % AGENTS]
            await repo.arecord_execution(name, record(repo, f"run {i}", success=i % 4 != 0))
            assert (await repo.aget(name)).name == name
            found = await repo.asearch(SearchQuery(query="storm", sort_by="execution_count"))
            assert len(found) == AGENTS

        async def storm() -> None:
            await asyncio.gather(*(task(i) for i in range(TASKS)))

        lags = []
        for attempt in range(1, ATTEMPTS + 1):
            # The loop's lag over the storm, less its lag idle over as long a time right after:
            # what a loaded machine's neighbours cost both, the storm's own cost left.
            started = time.monotonic()
            lag = await Heartbeat().during(storm())
            idle = await Heartbeat().during(asyncio.sleep(time.monotonic() - started))
            lags.append(lag - idle)
            per_agent = attempt * TASKS // AGENTS
            for name in names:
                stats = await repo.aexecution_stats(name)
                assert stats.total_executions == per_agent, name
                assert stats.success_count + stats.error_count == per_agent
                assert (await repo.aget(name)).metadata.execution_count == per_agent
            if lags[-1] < MAX_LAG:
                break
        assert min(lags) < MAX_LAG, f"the loop woke {[round(x * 1000) for x in lags]} ms late"
    finally:
        await repo.aclose()


# -- what the coroutines run on --------------------------------------------------------------------


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


async def test_sqlite_coroutines_run_on_the_stores_own_threads(sqlite_url: str) -> None:
    repo = open_repository(sqlite_url)
    loop = asyncio.get_running_loop()
    gate = threading.Event()
    loop.set_default_executor(ThreadPoolExecutor(1))
    blocked = loop.run_in_executor(None, gate.wait)  # the loop's default executor is busy
    try:
        await asyncio.wait_for(repo.acreate(make_config()), 10)
        thread = await repo.acall(lambda _: threading.current_thread().name)
        assert thread.startswith(THREAD_NAME)
        assert (await asyncio.wait_for(repo.aget("lead_qualifier"), 10)).metadata.version == 1
    finally:
        gate.set()
        await blocked
        await repo.aclose()


async def test_a_writer_blocked_by_sqlite_does_not_starve_to_thread(sqlite_url: str) -> None:
    repo = open_repository(sqlite_url)
    await repo.acreate(make_config())
    holder = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    writers = [
        asyncio.create_task(repo.arecord_execution("lead_qualifier", record(repo, f"w{i}")))
        for i in range(STORE_THREADS * 2)
    ]
    try:
        await asyncio.sleep(0.3)
        assert not any(w.done() for w in writers)  # every store thread waits for the lock
        assert await asyncio.wait_for(asyncio.to_thread(lambda: 42), 5) == 42
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await asyncio.gather(*writers)
    assert (await repo.aexecution_stats("lead_qualifier")).total_executions == STORE_THREADS * 2
    await repo.aclose()


@pytest.mark.postgresql
async def test_postgresql_coroutines_use_psycopg_async_connections(postgres_schema: str) -> None:
    repo = open_repository(postgres_schema)
    try:
        await repo.acreate(make_config())
        engine = await repo.acall(lambda r: r.engine)  # type: ignore[attr-defined]
        assert engine.url.drivername == "postgresql+psycopg_async" and engine.dialect.is_async
        thread = await repo.acall(lambda _: threading.current_thread())
        assert thread is threading.current_thread()  # the loop's own thread: no worker
    finally:
        await repo.aclose()


@pytest.mark.postgresql
async def test_a_postgresql_lock_wait_keeps_the_loop_free(postgres_schema: str) -> None:
    repo = open_repository(postgres_schema)
    await repo.acreate(make_config())
    locker = create_engine(postgres_schema)
    try:
        with locker.connect() as conn:
            conn.execute(text("SELECT 1 FROM agents WHERE name = 'lead_qualifier' FOR UPDATE"))

            async def update_held_for_a_while() -> None:
                update = asyncio.create_task(repo.aupdate("lead_qualifier", {"model": "x:y"}))
                await asyncio.sleep(0.5)
                assert not update.done()  # it waits for the row lock...
                await asyncio.to_thread(conn.rollback)  # ...until the other writer lets go
                assert (await update).metadata.version == 2

            assert await Heartbeat().during(update_held_for_a_while()) < MAX_LAG * 2
    finally:
        locker.dispose()
        await repo.aclose()


class RecordingMirror(JsonMirror):
    """The JSON mirror, noting the thread each sync ran on."""

    threads: list[str]

    def sync(self, repo: AgentRepository, names: Iterable[str]) -> None:
        self.threads.append(threading.current_thread().name)
        super().sync(repo, names)


async def test_the_mirror_writes_its_files_on_the_stores_threads(
    store_url: str, tmp_path: Path
) -> None:
    mirror = RecordingMirror(tmp_path / "agents")
    mirror.threads = []
    repo = open_repository(store_url, mirror=mirror)
    try:
        await repo.acreate(make_config())
        await repo.arecord_execution("lead_qualifier", record(repo, "first"))
        assert (tmp_path / "agents" / "lead_qualifier.json").is_file()
        assert (tmp_path / "agents" / "lead_qualifier_history.json").is_file()
        assert len(mirror.threads) == 2
        assert all(name.startswith(THREAD_NAME) for name in mirror.threads), mirror.threads
    finally:
        await repo.aclose()


async def test_cancelled_calls_leave_the_store_whole_and_usable(store_url: str) -> None:
    """Callers cancelled mid-write: each run is all there or not at all (a write already begun
    may still commit, as with ``to_thread``), and the connections are fit for the next calls."""
    repo = open_repository(store_url)
    try:
        await repo.acreate(make_config())
        writes = [
            asyncio.create_task(repo.arecord_execution("lead_qualifier", record(repo, f"r{i}")))
            for i in range(40)
        ]
        await asyncio.sleep(0.02)
        for write in writes[::2]:
            write.cancel()
        await asyncio.gather(*writes, return_exceptions=True)
        for _ in range(2):
            agent, history = await repo.aget_with_history("lead_qualifier")  # one snapshot
            assert agent.metadata.execution_count == len(history.executions) >= 20
            await asyncio.gather(
                *(repo.arecord_execution("lead_qualifier", record(repo, "after")) for _ in range(5))
            )
        assert (await repo.aget("lead_qualifier")).metadata.execution_count >= 30
    finally:
        await repo.aclose()


async def test_concurrent_tool_writes_with_a_mirror_all_finish(
    store_url: str, tmp_path: Path
) -> None:
    """More tool calls than the store has threads, each writing, with the mirror on: the tools'
    threads wait for the twins, and the twins' mirror writes never wait for those threads."""
    repo = open_repository(store_url, export_dir=tmp_path / "agents")
    variants = async_variants(BuilderTools(lambda: repo))
    try:
        calls = [
            variants["create_agent_config"](
                **make_config(f"agent_{i}").model_dump(exclude={"name"}), name=f"agent_{i}"
            )
            for i in range(STORE_THREADS * 3)
        ]
        texts = await asyncio.wait_for(asyncio.gather(*calls), 60)
        assert all("agent_" in t and not t.startswith("ERROR") for t in texts), texts
        files = sorted(p.name for p in (tmp_path / "agents").glob("agent_*.json"))
        assert files == sorted(f"agent_{i}.json" for i in range(STORE_THREADS * 3))
    finally:
        await repo.aclose()


@pytest.mark.postgresql
async def test_postgresql_tools_reach_the_store_only_through_the_async_engine(
    postgres_schema: str,
) -> None:
    repo = open_repository(postgres_schema)
    assert isinstance(repo, SqlAgentRepository)
    checkouts: list[object] = []
    event.listen(repo.engine, "checkout", lambda *_: checkouts.append(1))
    tools = {t.name: t for t in make_builder_tools(repo)}
    try:
        await tools["create_agent_config"].ainvoke(make_config().model_dump())
        for name in ("get_agent_config", "get_agent_history"):
            assert "lead_qualifier" in await tools[name].ainvoke({"name": "lead_qualifier"})
        assert "lead_qualifier" in await tools["search_agents"].ainvoke({"query": "lead"})
        assert "lead_qualifier" in await tools["list_created_agents"].ainvoke({})
        assert checkouts == []  # the sync engine's pool was never used
    finally:
        await repo.aclose()


# -- aclose ----------------------------------------------------------------------------------------


async def test_aclose_closes_the_engine_the_connections_and_the_threads(store_url: str) -> None:
    repo = open_repository(store_url)
    assert isinstance(repo, SqlAgentRepository)
    await repo.acreate(make_config())
    dispatch = repo._async_dispatch()
    executor = dispatch.threads.executor
    async_pool = None
    if repo.engine.dialect.name == "postgresql":
        async_pool = dispatch.engine().sync_engine.pool  # type: ignore[attr-defined]
        assert async_pool.checkedin() >= 1
    await repo.aclose()
    with pytest.raises(RuntimeError):
        executor.submit(print)  # shut down
    assert repo.engine.pool.checkedin() == 0
    if async_pool is not None:
        assert async_pool.checkedin() == 0
    # Closed is not dead: a later call makes its engine and threads again, like a sync store.
    assert (await repo.aget("lead_qualifier")).name == "lead_qualifier"
    await repo.aclose()


async def test_async_iteration_reads_every_agent_and_ends_the_export_snapshot(
    store_url: str,
) -> None:
    repo = open_repository(store_url)
    try:
        for i in range(7):
            await repo.acreate(make_config(f"agent_{i}"))
        await repo.arecord_execution("agent_3", record(repo, "once"))
        assert [a.name async for a in repo.aiter_agents(page_size=2)] == [
            f"agent_{i}" for i in range(7)
        ]
        exported: AsyncIterator[object] = repo.aiter_export(page_size=3)
        pairs = [pair async for pair in exported]  # type: ignore[misc]
        assert [h is not None for _, h in pairs] == [i == 3 for i in range(7)]
        first = await anext(aiter(repo.aiter_export()))  # stopped early...
        assert first[0].name == "agent_0"
        await repo.acreate(make_config("after"))  # ...its snapshot holds no lock
    finally:
        await repo.aclose()


# -- the tools -------------------------------------------------------------------------------------


async def test_the_tools_coroutines_go_through_the_store_not_the_default_executor(
    store_url: str,
) -> None:
    repo = open_repository(store_url)
    loop = asyncio.get_running_loop()
    gate = threading.Event()
    loop.set_default_executor(ThreadPoolExecutor(1))
    blocked = loop.run_in_executor(None, gate.wait)
    tools = {t.name: t for t in make_builder_tools(repo)}
    variants = async_variants(BuilderTools(lambda: repo))
    try:
        args = make_config().model_dump()
        created = await asyncio.wait_for(tools["create_agent_config"].ainvoke(args), 10)
        assert "lead_qualifier" in created
        text_ = await asyncio.wait_for(variants["search_agents"](query="lead"), 10)
        assert "lead_qualifier" in text_
        missing = await asyncio.wait_for(variants["get_agent_config"](name="ghost"), 10)
        assert missing.startswith("ERROR:") and "lead_qualifier" in missing
    finally:
        gate.set()
        await blocked
        await repo.aclose()


# -- the benchmark ---------------------------------------------------------------------------------


def test_the_async_benchmark_runs_and_loses_no_run(tmp_path: Path) -> None:
    """``benchmarks.async_api`` end to end at a tiny size (its figures are not checked)."""
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "benchmarks.async_api", "--url"]
    command += [f"sqlite:///{tmp_path / 'bench.db'}", "--tasks", "6", "--threads", "2"]
    command += ["--calls", "36"]
    env = os.environ | {"PYTHONPATH": str(root)}
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| async API, 6 tasks | 36 |" in done.stdout
    assert "| sync API, 2 threads | 36 |" in done.stdout
