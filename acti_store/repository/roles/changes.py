"""The change feed role: read it (``changes``), prune it, keep consumers' positions, and watch
it as changes commit (``watch``, ``awatch``). What a write appends, and how numbers follow
commit order: ``repository.feed``; how a watcher is woken: ``repository.signals``."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import suppress
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from ...changes import CHANGES_LIMIT_DEFAULT, CHANGES_LIMIT_MAX, Change
from ...dberrors import translated
from ...errors import (
    AgentStoreError,
    ChangesExpiredError,
    InvalidInputError,
    StoreUnavailableError,
)
from ...models import is_valid_name
from ...sqlexec import Cursor
from ...validation import instance, integer, quoted, seconds
from ..core import Role
from ..feed import (
    CHECKPOINT,
    change_from_row,
    feed_rows,
    prune,
)
from ..signals import ChangeSignal
from ..tenant_admin import admit

if TYPE_CHECKING:
    from ..interface import AgentRepository

T = TypeVar("T")

#: The longest a watcher waits on its signal before it reads the feed anyway.
WAIT_SLICE: Final = 1.0
#: A watcher's pauses after a failure, doubling up to the last.
RETRY_FIRST, RETRY_MAX = 0.1, 5.0
#: The longest ``timeout`` of a watch, seconds (a year: None waits for good).
TIMEOUT_MAX: Final = 365 * 86_400.0
#: The largest change number (a counter column's range).
SEQ_MAX: Final = 2**63 - 1


def _position(value: object, field: str = "after") -> int:
    return integer(value, field, 0, SEQ_MAX)


def _timeout(value: object) -> float | None:
    return None if value is None else seconds(value, "timeout", TIMEOUT_MAX)


def _consumer(name: object) -> str:
    instance(name, str, "name")
    if not is_valid_name(name):
        raise InvalidInputError(
            "argument", [("name", f"{quoted(name)} is not a consumer name (the agent-name rule)")]
        )
    assert isinstance(name, str)
    return name


class Changes(Role):
    """``changes``, ``last_change``, ``prune_changes``, ``checkpoint``, ``save_checkpoint``,
    ``watch`` and ``awatch`` of the repository."""

    def changes(self, after: int | None = None, limit: int = CHANGES_LIMIT_DEFAULT) -> list[Change]:
        start = None if after is None else _position(after)
        limit = integer(limit, "limit", 1, CHANGES_LIMIT_MAX)
        tenant = self._core.tenant
        feed = self._core.kind.feed_statements()

        def work(cursor: Cursor) -> list[Change]:
            rows = cursor.all(feed.read, {"after": start or 0, "limit": limit})
            last, pruned, found = feed_rows(rows)
            if start is not None and (start < pruned or start > last):
                raise ChangesExpiredError(start, pruned + 1, last)
            return [change_from_row(r, tenant) for r in found]

        return self._read(work)

    def last_change(self) -> int:
        last = self._core.kind.feed_statements().last

        def work(cursor: Cursor) -> int:
            row = cursor.first(last)
            return 0 if row is None else int(row[0])

        return self._read(work)

    def prune_changes(self, before: datetime) -> int:
        instance(before, datetime, "before")
        if before.tzinfo is None:
            raise InvalidInputError("argument", [("before", "must carry its time zone")])

        feed = self._core.kind.feed_statements()
        return self._write(lambda cursor: prune(cursor, before, feed))

    def checkpoint(self, name: str) -> int | None:
        name = _consumer(name)

        def work(cursor: Cursor) -> int | None:
            row = cursor.first(CHECKPOINT, {"name": name})
            return None if row is None else int(row[0])

        return self._read(work)

    def save_checkpoint(self, name: str, seq: int) -> None:
        name = _consumer(name)
        seq = _position(seq, "seq")
        statement = self._core.kind.save_checkpoint
        if statement is None:
            raise NotImplementedError(f"{self._core.kind.name}: no statement saves a checkpoint")
        values = {"name": name, "seq": seq, "saved_at": self.now()}

        def work(cursor: Cursor) -> None:
            admit(cursor, self._core, 0)  # a strict store keeps no checkpoint of an unknown tenant
            cursor.send(statement, values)

        self._write(work)

    # -- watching ----------------------------------------------------------------------------------

    def _signal(self) -> ChangeSignal:
        core = self._core
        return core.kind.change_signal(core.engine, core.tenant, self.last_change)

    def _start(self, after: int | None) -> int:
        return self.last_change() if after is None else _position(after)

    def watch(self, after: int | None = None, *, timeout: float | None = None) -> Iterator[Change]:
        timeout = _timeout(timeout)
        position = self._start(after)
        return _Watch(self, position, timeout).run()

    async def awatch(
        self, after: int | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[Change]:
        # The feed is read through the store's async API (on PostgreSQL, its async engine: no
        # statement on a thread); the signal on a thread of its own: its connection is used by
        # one thread at a time, and a wait on it never holds up the loop (nor does ending the
        # watch, nor the process's exit: the thread closes the signal once its wait is over).
        store = cast("AgentRepository", self._core.store)
        thread = _SignalThread()
        watch: _Watch | None = None
        try:
            timeout = _timeout(timeout)
            start = await store.alast_change() if after is None else _position(after)
            watch = _Watch(self, start, timeout)
            while True:
                batch: list[Change] = []
                try:
                    await thread.run(watch.arm)
                    batch = await store.achanges(watch.position, CHANGES_LIMIT_MAX)
                    if batch:
                        watch.advance(batch)
                    else:
                        await thread.run(watch.wait)
                except Exception as exc:
                    await asyncio.sleep(await thread.run(partial(watch.recover, exc)))
                for change in batch:
                    yield change
                if not batch and watch.timed_out():
                    return
        finally:
            thread.end(watch.close if watch is not None else None)


#: A call for a ``_SignalThread``, and the future its outcome goes to (None: dropped).
_Call = tuple[Callable[[], Any], "asyncio.Future[Any] | None"]


class _SignalThread:
    """The thread an ``awatch`` waits on its signal from, running its calls in turn. A daemon
    thread, not an executor's (which the interpreter joins at exit): a watch ended while its
    signal still waits (up to ``WAIT_SLICE``) holds up neither the loop nor the exit of the
    process (an MCP server over stdio ends as its client closes stdin)."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="acti-store-watch", daemon=True).start()

    def run(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """``call()`` on the thread, after those before it; its outcome, awaitable."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._calls.put((call, future))
        return future

    def end(self, last: Callable[[], object] | None) -> None:
        """After the calls sent: ``last()`` (its outcome dropped), then the thread ends."""
        if last is not None:
            self._calls.put((last, None))
        self._calls.put(None)

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            call, future = item
            try:
                result, error = call(), None
            except BaseException as exc:  # handed to the awaiting task, whatever it is
                result, error = None, exc
            if future is not None:
                with suppress(RuntimeError):  # the loop closed meanwhile: nobody awaits it
                    future.get_loop().call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    """On the loop: ``future``'s outcome, unless it was cancelled (its task went away)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class _Watch:
    """One watcher's loop: arm the signal, read what is new, wait on the signal; a lost
    connection (the signal's or the reads') is made again after a pause, and the watcher goes
    on from its position."""

    def __init__(self, role: Changes, position: int, timeout: float | None) -> None:
        self._role = role
        self._dbapi = role._core.dbapi
        self.position = position
        self._timeout = timeout
        self._signal: ChangeSignal | None = None
        self._retry = RETRY_FIRST
        self._quiet_since = time.monotonic()

    def run(self) -> Iterator[Change]:
        try:
            while True:
                batch = self.step()
                yield from batch
                if not batch and self.timed_out():
                    return
        finally:
            self.close()

    def timed_out(self) -> bool:
        timeout = self._timeout
        return timeout is not None and time.monotonic() - self._quiet_since >= timeout

    def step(self) -> list[Change]:
        """The next changes, once there are any (or none, after a wait on the signal)."""
        try:
            self.arm()
            batch = self._role.changes(self.position, CHANGES_LIMIT_MAX)
        except Exception as exc:
            time.sleep(self.recover(exc))
            return []
        if batch:
            self.advance(batch)
        else:
            try:
                self.wait()
            except Exception as exc:
                time.sleep(self.recover(exc))
        return batch

    def arm(self) -> None:
        """Before a read: the signal (made again if it was lost), armed."""
        if self._signal is None:
            self._signal = self._role._signal()
        self._signal.arm()

    def advance(self, batch: list[Change]) -> None:
        self._retry = RETRY_FIRST
        self.position = batch[-1].seq
        self._quiet_since = time.monotonic()

    def wait(self) -> None:
        """After a read that found nothing: wait on the signal (up to the timeout's end)."""
        wait = WAIT_SLICE
        if self._timeout is not None:
            wait = min(wait, self._timeout - (time.monotonic() - self._quiet_since))
        if wait > 0 and self._signal is not None:
            self._signal.wait(wait)
        self._retry = RETRY_FIRST

    def recover(self, exc: Exception) -> float:
        """After ``exc``: the pause before the next try, the signal closed (made again then);
        raised again (translated) unless it is a store that can come back."""
        error = exc if isinstance(exc, AgentStoreError) else translated(exc, self._dbapi)
        if not isinstance(error, StoreUnavailableError) or not error.transient:
            if error is None or error is exc:
                raise exc
            raise error from exc
        self.close()
        pause, self._retry = self._retry, min(self._retry * 2, RETRY_MAX)
        return pause

    def close(self) -> None:
        signal, self._signal = self._signal, None
        if signal is not None:
            with suppress(Exception):  # a connection already lost: nothing to release
                signal.close()
