"""Starting child processes and collecting what they return, within a hard deadline.

Children are started from a ``forkserver`` that has already imported acti_store and the child
entry points, so a child starts in milliseconds instead of paying the imports a ``spawn`` child
pays (that matters for the kill cycles: dozens of children per test). Every child is killed and
reaped before these functions return, whatever happens.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from typing import Any


class ChildError(AssertionError):
    """A child raised, died, or did not finish in time."""


#: What the fork server imports once for all children: the library and both database drivers.
#: (Python 3.11's fork server ignores the parent's ``sys.path`` when preloading, so this package
#: itself cannot be preloaded; children import it, which is cheap once acti_store is loaded.)
PRELOAD = (
    "acti_store",
    "sqlalchemy.dialects.sqlite.pysqlite",
    "sqlalchemy.dialects.postgresql.psycopg",
    "psycopg",
)


def context() -> ForkServerContext:
    """The ``forkserver`` context, preloading :data:`PRELOAD` (missing modules are skipped)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def _trampoline(
    results: Any, index: int, target: Callable[..., Any], args: tuple[Any, ...]
) -> None:
    try:
        value = target(*args)
    except BaseException:
        results.put((index, False, traceback.format_exc()))
    else:
        results.put((index, True, value))


def run_children(
    ctx: ForkServerContext,
    target: Callable[..., Any],
    arg_lists: Sequence[tuple[Any, ...]],
    *,
    timeout: float,
) -> list[Any]:
    """Run ``target(*args)`` in one child per entry of ``arg_lists``; return their results in order.

    Raises :class:`ChildError` as soon as a child raises (with its traceback) or dies, and when
    they have not all finished after ``timeout`` seconds; the other children are killed then.
    """
    results = ctx.Queue()
    processes = [
        ctx.Process(target=_trampoline, args=(results, i, target, args), daemon=True)
        for i, args in enumerate(arg_lists)
    ]
    outcomes: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    try:
        for process in processes:
            process.start()
        while len(outcomes) < len(processes):
            if _receive(results, outcomes, wait=0.2):
                continue
            dead = [i for i, p in enumerate(processes) if p.exitcode is not None]
            # A child flushes its result before it exits: read what arrived meanwhile, then judge.
            while _receive(results, outcomes, wait=0.5):
                pass
            if missing := [i for i in dead if i not in outcomes]:
                codes = ", ".join(f"child {i} exit code {processes[i].exitcode}" for i in missing)
                raise ChildError(f"children died without a result: {codes}")
            if time.monotonic() > deadline:
                raise ChildError(f"children did not finish within {timeout:.0f}s")
        for process in processes:
            process.join(max(deadline - time.monotonic(), 1.0))
    finally:
        _reap(processes)
        results.close()
        results.join_thread()
    return [outcomes[i] for i in range(len(processes))]


def _receive(results: Any, outcomes: dict[int, Any], *, wait: float) -> bool:
    """Store one result in ``outcomes``; False if none came within ``wait`` seconds."""
    try:
        index, ok, value = results.get(timeout=wait)
    except queue.Empty:
        return False
    if not ok:  # fail fast: the other children may be waiting for this one on a barrier
        raise ChildError(f"child {index}:\n{value}")
    outcomes[index] = value
    return True


def _reap(processes: Sequence[BaseProcess]) -> None:
    for process in processes:
        if process.pid is not None and process.is_alive():
            process.kill()
    for process in processes:
        if process.pid is not None:
            process.join(10)


class KilledChild:
    """A child that loops until the parent kills it with SIGKILL (see :meth:`kill_after`)."""

    def __init__(self, ctx: ForkServerContext, target: Callable[..., Any], *args: Any) -> None:
        self._ready = ctx.Event()
        self._process = ctx.Process(target=target, args=(*args, self._ready), daemon=True)

    def kill_after(self, delay: float, *, startup_timeout: float = 30.0) -> None:
        """Start the child, wait until it sets ``ready`` (after its first write, or just before it
        when that is the long operation under test), let it go on for ``delay`` seconds, then
        SIGKILL it.

        Raises :class:`ChildError` if it died on its own (it must only ever be killed).
        """
        self._process.start()
        try:
            if not self._ready.wait(startup_timeout):
                raise ChildError(f"child not ready within {startup_timeout:.0f}s")
            time.sleep(delay)
            if not self._process.is_alive():
                raise ChildError(f"child exited by itself (exit code {self._process.exitcode})")
            assert self._process.pid is not None
            os.kill(self._process.pid, signal.SIGKILL)
            self._process.join(10)
            if self._process.exitcode != -signal.SIGKILL:
                raise ChildError(f"child ended with {self._process.exitcode}, not SIGKILL")
        finally:
            _reap([self._process])
