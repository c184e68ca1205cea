"""The runs' own event loop, in a background thread: an async caller's loop only awaits a run.

A run is mostly LangGraph and deepagents working between model calls: every step of the graph
(middleware, token counting, message bookkeeping) is synchronous Python, tens of ms per run.
On the caller's loop, twenty runs at once stall that loop for hundreds of milliseconds whenever
their steps fall due together. ``in_background`` runs the coroutine on one loop of our own, in a
daemon thread ("acti-store-runs"), and the caller's loop just waits for the answer: what is left
for the caller is the GIL, which a busy thread hands over every ``sys.getswitchinterval()`` (5 ms).
Synchronous callers (``AgentRunner.run_sync``, a warm pool's ``close``) wait for that same loop
(``wait_in_background``): every run, whoever starts it, goes there, and its MCP sessions and the
store's connections for its record belong to that one loop.

Cancelling the caller cancels the run, and the caller waits until the run has stopped (its MCP
servers closed) before it sees ``CancelledError``. Context variables (tracing, callbacks) go
with the run. A forked child starts its own loop; at exit, runs still going are cancelled and
given a few seconds to stop their servers.

``compute`` is for the steps of a run that keep the CPU busy without waiting (building a graph,
setting up a model): they go to one worker thread, one after the other. Under the GIL, threads
computing at once finish no sooner, and each of them is one more thread the caller's loop has to
wait behind for its turn.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import functools
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")

#: How long the runs still going at exit may take to stop (their servers: see ``servers``).
EXIT_GRACE: Final = 10.0
#: How long the loop may then take to stop before the interpreter exits without closing it.
EXIT_STOP: Final = 5.0
THREAD_NAME: Final = "acti-store-runs"


class _RunsLoop:
    """One event loop in a daemon thread, started on first use (again in a forked child)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    @property
    def started(self) -> bool:
        return self._loop is not None and self._pid == os.getpid()

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=self._serve, args=(loop,), name=THREAD_NAME, daemon=True
                )
                thread.start()
                self._loop, self._thread, self._pid = loop, thread, os.getpid()
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.run_forever()

    def stop(self) -> None:
        """Cancel the runs still going and wait (a while) for them to stop; then stop the loop
        and close it, while the interpreter is whole: a loop left for the collector at exit
        closes itself then, and may find its own sockets gone ("Invalid file descriptor")."""
        with self._lock:
            ours = self._pid == os.getpid()
            loop, thread = (self._loop, self._thread) if ours else (None, None)
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=EXIT_GRACE)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(EXIT_GRACE + 1)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(EXIT_STOP)
        if not loop.is_running():
            loop.close()


_RUNS = _RunsLoop()
atexit.register(_RUNS.stop)

_compute_lock = threading.Lock()
_compute: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None


def _compute_executor() -> concurrent.futures.ThreadPoolExecutor:
    global _compute
    with _compute_lock:
        if _compute is None or _compute[0] != os.getpid():  # a forked child: its own thread
            executor = concurrent.futures.ThreadPoolExecutor(1, "acti-store-compute")
            _compute = (os.getpid(), executor)
        return _compute[1]


async def compute(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``func(*args, **kwargs)`` in the compute thread (see above), with this context."""
    call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_compute_executor(), call)


def wait_in_background(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """``coro`` run on the runs' loop, waited for by synchronous code (with this context).

    Interrupted (Ctrl-C) or out of ``timeout``, the run is cancelled. Raises ``RuntimeError``
    on the runs' loop itself, which would wait for itself.
    """
    loop = _RUNS.get()
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("cannot wait for the runs' loop on it: await the coroutine")
    future = asyncio.run_coroutine_threadsafe(coro, loop)  # runs in a copy of this context
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()
        raise


async def in_background(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` run on the runs' loop; the caller's loop stays free meanwhile."""
    caller = asyncio.get_running_loop()
    try:
        if _RUNS.started:
            loop = _RUNS.get()
        else:  # starting a thread waits for it to run: not on the caller's loop
            loop = await asyncio.to_thread(_RUNS.get)
    except BaseException:
        coro.close()
        raise
    outcome: asyncio.Future[T] = caller.create_future()
    started: list[asyncio.Task[T]] = []

    def copy(task: asyncio.Task[T]) -> None:  # on the caller's loop
        if outcome.done():
            return
        if task.cancelled():
            outcome.cancel()
        elif (error := task.exception()) is not None:
            outcome.set_exception(error)
        else:
            outcome.set_result(task.result())

    def settle(task: asyncio.Task[T]) -> None:  # on the runs' loop
        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
            caller.call_soon_threadsafe(copy, task)

    def start() -> None:  # on the runs' loop
        task = loop.create_task(coro)
        started.append(task)
        task.add_done_callback(settle)

    loop.call_soon_threadsafe(start, context=contextvars.copy_context())
    try:
        return await asyncio.shield(outcome)
    except asyncio.CancelledError:
        if outcome.cancelled():  # the run itself was cancelled there
            raise
        # Our caller was cancelled: cancel the run (``start`` ran first: the queue is in order)
        # and wait for it to stop, so that its servers are gone when the caller moves on.
        loop.call_soon_threadsafe(lambda: started[0].cancel())
        with contextlib.suppress(BaseException):
            await outcome
        raise
