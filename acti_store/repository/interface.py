"""``AgentRepository``: the repository's port with its async API on top, what callers hold.

The port (``port.RepositoryPort``) is sync and knows no event loop. The async API is one layer on
top of it: each ``a``-method (``twins``) is ``acall`` of the sync method, and ``acall`` runs it
through the store's dispatcher (``asynchronous``) where it does not hold the caller's loop. The
tools, the MCP server and the runner reach the store from async code through this layer only.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Final, Self, TypeVar, cast

from .arguments import CONFLICT_POLICIES as CONFLICT_POLICIES
from .arguments import ConflictPolicy as ConflictPolicy
from .asynchronous import Dispatch, StoreThreads, ThreadDispatch, iterate
from .port import BulkPutResult as BulkPutResult
from .port import Clock as Clock
from .port import ImportItem as ImportItem
from .port import ImportOutcome as ImportOutcome
from .port import Mirror as Mirror
from .port import RepositoryPort
from .port import SearchPage as SearchPage
from .port import UpdateResult as UpdateResult
from .port import checked_config as checked_config
from .twins import AsyncTwins

T = TypeVar("T")
#: Guards the making of a store's dispatcher (``AgentRepository.acall``).
_DISPATCH_LOCK: Final = threading.Lock()


class AgentRepository(AsyncTwins, RepositoryPort):
    """Storage of agent configurations, their metadata and execution history: the sync methods
    of ``RepositoryPort`` (every rule and error it documents) and their coroutine twins.

    Each method that reads or writes the store has an ``a``-prefixed coroutine twin (``aget``,
    ``acreate``, ...; ``aiter_agents`` and ``aiter_export`` are async iterators) with the same
    arguments, result and errors: the same code, run by ``acall`` where it does not hold the
    event loop. ``aclose()`` releases what they use.
    """

    #: How the coroutines run (``acall``), made on first use by ``_make_dispatch``.
    _dispatch: Dispatch | None = None

    def _make_dispatch(self) -> Dispatch:
        """How this store's coroutines run: the sync methods on the store's own threads."""
        return ThreadDispatch(self, StoreThreads())

    def _async_dispatch(self) -> Dispatch:
        with _DISPATCH_LOCK:
            if self._dispatch is None:
                self._dispatch = self._make_dispatch()
            return self._dispatch

    async def acall(self, work: Callable[[AgentRepository], T]) -> T:
        """``work(repo)`` for an event loop, the loop free meanwhile: the one path of every
        ``a``-method. ``repo`` is this store, or on PostgreSQL its twin on psycopg's async
        connections (``asynchronous``): ``work`` must use the repository it is given.
        Cancelling the caller does not undo a write that has started (as with ``to_thread``)."""
        return await self._async_dispatch().run(_given_a_store(work))

    async def acall_in_thread(self, work: Callable[[AgentRepository], T]) -> T:
        """``acall`` for work that computes as well as it reads (a tool renders its text): run
        on the store's threads, not the loop; its store calls go as the ``a``-methods go."""
        return await self._async_dispatch().run_in_thread(_given_a_store(work))

    def aiterate(self, start: Callable[[AgentRepository], Iterator[T]]) -> AsyncIterator[T]:
        """The items of the iterator ``start(repo)``, read through ``acall`` in batches."""
        return iterate(self._async_dispatch(), _given_a_store(start))

    async def aclose(self) -> None:
        """Close the async engine's connections, then ``close`` (on the store's threads), and
        stop those threads. A later call makes them again."""
        dispatch = self._async_dispatch()
        await dispatch.aclose()
        await dispatch.threads.run(self.close)
        dispatch.threads.shutdown()

    async def __aenter__(self) -> Self:
        """``async with open_repository(...) as repo:`` closes the store (``aclose``) at the
        end."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _given_a_store(work: Callable[[AgentRepository], T]) -> Callable[[RepositoryPort], T]:
    """``work`` as a dispatcher takes it: a dispatcher hands it the store itself, the store's
    twin on the loop's engine or a bridge to the store's coroutines, each an ``AgentRepository``."""
    return cast("Callable[[RepositoryPort], T]", work)
