"""Where the repository's ``a``-prefixed coroutines do their work: one dispatcher per store.

Every async twin (``aget``, ``arecord_execution``, ...) is one line,
``await self.acall(lambda r: r.get(name))``: the sync method's own code, run where it does not
hold the caller's event loop. No statement, rule or retry exists twice.

- ``ThreadDispatch`` (SQLite, and any ``AgentRepository``): the sync method on the store's own
  small thread pool (``StoreThreads``), never the loop's default executor, so a writer waiting
  on SQLite's lock does not starve the application's ``asyncio.to_thread`` work.
- ``GreenletDispatch`` (PostgreSQL): the sync method of a twin repository built on an
  ``AsyncEngine`` (psycopg's async connections), made lazily for each running loop, run through
  SQLAlchemy's greenlet bridge (``greenlet_spawn``): every driver call the method makes is an
  ``await`` on the loop. What would still block there goes through its ``Waits``
  (``loop_waits``): the retry back-off is an ``asyncio.sleep``, and the JSON mirror's file writes
  (and its folder lock) run on the store's threads.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib.util
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast

from ..errors import MissingDriverError
from .core import Waits

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from .port import Mirror, RepositoryPort

T = TypeVar("T")

#: Threads of a store's own pool. SQLite runs one writer at a time and every thread shares the
#: GIL with the loop: each thread more made 200 tasks at once wake the loop later (20 ms with one,
#: 25-48 ms with two, 31-68 ms with four, at a load of 12 on 2 cores). Two keep a read going
#: while a write waits for another process's lock.
STORE_THREADS: Final = 2
THREAD_NAME: Final = "acti-store-async"
#: Connections of a loop's async engine (PostgreSQL), and how many calls run on them at once.
ASYNC_CONNECTIONS: Final = 10
#: Seconds ``GreenletDispatch.close`` waits for another thread's loop to close its connections.
CLOSE_WAIT: Final = 10.0
#: How many items an async iteration takes from the sync iterator per hop off the loop.
ITERATION_BATCH: Final = 100


class StoreThreads:
    """A store's own thread pool, made on first use and shut down by ``shutdown``."""

    def __init__(self, workers: int = STORE_THREADS) -> None:
        self._workers = workers
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix=THREAD_NAME)
            return self._executor

    async def run(self, call: Callable[[], T]) -> T:
        """``call()`` on the pool, with the caller's context variables (as ``to_thread``)."""
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, context.run, call)

    def shutdown(self) -> None:
        """Stop the pool (its threads end once idle); the next ``run`` makes a new one."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)


class Dispatch(Protocol):
    """Runs ``work(repository)`` for a coroutine of the store: the one path of every twin."""

    threads: StoreThreads

    async def run(self, work: Callable[[RepositoryPort], T]) -> T: ...

    async def run_in_thread(self, work: Callable[[RepositoryPort], T]) -> T:
        """``work(repository)`` on the store's threads (work that computes as well), its store
        calls made as ``run`` makes them."""
        ...

    async def aclose(self) -> None:
        """Release what ``run`` made (connections of async engines)."""

    def close(self) -> None:
        """``aclose`` for sync code (the store's ``close``), waiting on no loop of its own."""


class ThreadDispatch:
    """``work(repository)`` on the store's own threads."""

    def __init__(self, repository: RepositoryPort, threads: StoreThreads) -> None:
        self._repository = repository
        self.threads = threads

    async def run(self, work: Callable[[RepositoryPort], T]) -> T:
        return await self.threads.run(partial(work, self._repository))

    run_in_thread = run

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        return None


def loop_waits(threads: StoreThreads, files_repository: RepositoryPort) -> Waits:
    """Waits of a twin inside ``greenlet_spawn``: the loop runs meanwhile. The mirror writes its
    files on ``threads``, reading the store through ``files_repository`` (the sync one: the
    twin's connections belong to the loop)."""
    from sqlalchemy.util import await_only

    def sleep(seconds: float) -> None:
        await_only(asyncio.sleep(seconds))

    def sync_mirror(mirror: Mirror, _twin: RepositoryPort, names: Iterable[str]) -> None:
        await_only(threads.run(partial(mirror.sync, files_repository, list(names))))

    return Waits(sleep=sleep, sync_mirror=sync_mirror)


@dataclass(frozen=True)
class _OnLoop:
    """What the coroutines of one loop use: its engine, the twin on it, and the gate."""

    engine: AsyncEngine
    twin: RepositoryPort
    #: At most ``ASYNC_CONNECTIONS`` calls at once, the others queued first come, first served
    #: (the pool's own queue is not fair: a waiter woken too late queues again at the end).
    gate: asyncio.Semaphore


class LoopBridge:
    """A store for sync code on the store's threads whose calls must go as the coroutines go:
    each method with a coroutine twin is that twin, run on ``loop`` and waited for; the rest
    (``now``, ``location_of``, ``mirror``, ...) is the store's own."""

    def __init__(self, store: RepositoryPort, loop: asyncio.AbstractEventLoop) -> None:
        self._store = store
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        twin = getattr(self._store, f"a{name}", None) if callable(value) else None
        if not inspect.iscoroutinefunction(twin):
            return value

        def through_loop(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(twin(*args, **kwargs), self._loop).result()

        return through_loop


class GreenletDispatch:
    """``work(twin)`` through SQLAlchemy's greenlet bridge, where ``twin`` is the repository on
    an ``AsyncEngine`` made for the running loop (an async engine's connections belong to the
    loop that opened them). ``make_engine(pool_size=..., max_overflow=...)`` makes it; ``store``
    is the sync store (the mirror reads it; ``run_in_thread`` calls its coroutines)."""

    def __init__(
        self,
        make_engine: Callable[..., AsyncEngine],
        make_twin: Callable[..., RepositoryPort],
        store: RepositoryPort,
        threads: StoreThreads,
    ) -> None:
        self._make_engine = make_engine
        self._make_twin = make_twin
        self._store = store
        self.threads = threads
        # Not ``threads``: those may all be waiting for a twin that waits for the mirror.
        self._mirror_threads = StoreThreads(1)
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _OnLoop] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def engine(self) -> AsyncEngine:
        """The async engine of the running loop (made on first use)."""
        return self._for_running_loop().engine

    def _for_running_loop(self) -> _OnLoop:
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._by_loop.get(loop)
            if found is None:
                _require_greenlet()
                # Room beyond the gate for async iterations, which keep theirs between calls.
                engine = self._make_engine(
                    pool_size=ASYNC_CONNECTIONS, max_overflow=ASYNC_CONNECTIONS
                )
                waits = loop_waits(self._mirror_threads, self._store)
                twin = self._make_twin(engine.sync_engine, waits=waits)
                found = self._by_loop[loop] = _OnLoop(
                    engine, twin, asyncio.Semaphore(ASYNC_CONNECTIONS)
                )
            return found

    async def run(self, work: Callable[[RepositoryPort], T]) -> T:
        from sqlalchemy.util import greenlet_spawn

        on_loop = self._for_running_loop()
        async with on_loop.gate:
            return await greenlet_spawn(work, on_loop.twin)

    async def run_in_thread(self, work: Callable[[RepositoryPort], T]) -> T:
        """``work`` on the store's threads (the tools render their texts there, not on the
        loop), each of its store calls the coroutine twin on this loop."""
        bridge = cast("RepositoryPort", LoopBridge(self._store, asyncio.get_running_loop()))
        return await self.threads.run(partial(work, bridge))

    async def aclose(self) -> None:
        """Close the connections of every loop's engine: this loop's awaited, a loop running in
        another thread's on that loop; a closed loop's are dropped (its connections are gone
        with it)."""
        running = asyncio.get_running_loop()
        with self._lock:
            engines = [(loop, on_loop.engine) for loop, on_loop in self._by_loop.items()]
            self._by_loop.clear()
        for loop, engine in engines:
            if loop is running:
                await engine.dispose()
            elif loop.is_running():
                future = asyncio.run_coroutine_threadsafe(engine.dispose(), loop)
                await asyncio.wrap_future(future)
            else:
                await engine.dispose(close=False)
        self._mirror_threads.shutdown()

    def close(self) -> None:
        """Close the connections of every loop's engine from sync code: a loop running in
        another thread (the runs' own loop, say) closes its engine's there, waited for; the
        engines of this thread's loop and of stopped loops are dropped (their connections close
        when collected)."""
        with self._lock:
            engines = [(loop, on_loop.engine) for loop, on_loop in self._by_loop.items()]
            self._by_loop.clear()
        for loop, engine in engines:
            if loop.is_running() and not _runs_here(loop):
                future = asyncio.run_coroutine_threadsafe(engine.dispose(), loop)
                with suppress(Exception):  # a loop that stops meanwhile: dropped with it
                    future.result(timeout=CLOSE_WAIT)
            else:
                engine.sync_engine.dispose(close=False)


def _runs_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _require_greenlet() -> None:
    if importlib.util.find_spec("greenlet") is None:
        raise MissingDriverError(
            "the async API on PostgreSQL needs the greenlet package. Install it with: "
            'pip install "acti-store[postgres]"'
        )


async def iterate(
    dispatch: Dispatch, start: Callable[[RepositoryPort], Iterator[T]]
) -> AsyncIterator[T]:
    """The items of the sync iterator ``start(repository)``, taken ``ITERATION_BATCH`` at a time
    through ``dispatch``; the iterator is closed through it too (an export's snapshot ends)."""
    iterator = await dispatch.run(start)
    try:
        while True:
            batch = await dispatch.run(lambda _: list(islice(iterator, ITERATION_BATCH)))
            for item in batch:
                yield item
            if len(batch) < ITERATION_BATCH:
                return
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            await dispatch.run(lambda _: close())
