"""Following the store's change feed for the sessions of a server: changes any process made.

One ``FeedFollower`` per ``Notifier`` (per server, or per tenant when a tenant's servers share
one): every session runs ``following(repo)`` while it is served (the server's lifespan), and one
of them at a time, the leader, follows ``repo.awatch()`` and hands each change to ``deliver``.
When the leader's session ends, the next session waiting takes over from the same position, so
no change is lost in the handover; when the last session ends, the position is forgotten (the
next session starts from the newest change then).

A session starts once the position is known (one ``alast_change``, when no session holds one),
so a change made after the client's first request reaches it. A store that cannot be read then
delays a session by ``START_WAIT`` at most; the leader tries again every ``RETRY`` seconds. When
changes the leader had not read were pruned (``ChangesExpiredError``), it starts again from the
newest one and calls ``lost``: what changed meanwhile is unknown. A store that keeps no change
feed (an ``AgentRepository`` of its own) is served without one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Final

import anyio

from ..errors import AgentStoreError, ChangesExpiredError

if TYPE_CHECKING:
    from ..changes import Change
    from ..repository import AgentRepository

logger = logging.getLogger(__name__)

#: How long a session's start waits for the store to say where the feed is, at most, seconds.
START_WAIT: Final = 5.0
#: How long the leader waits before following again after the store failed, seconds.
RETRY: Final = 1.0


class FeedFollower:
    """Follows a store's change feed while at least one session is served; ``deliver`` gets
    each change once, in order, ``lost`` is called when changes were missed."""

    def __init__(
        self,
        deliver: Callable[[Change], Awaitable[None]],
        lost: Callable[[], Awaitable[None]],
    ) -> None:
        self._deliver = deliver
        self._lost = lost
        self._position: int | None = None
        self._sessions = 0
        self._leader: anyio.Lock | None = None  # made on the event loop, when first needed

    @contextlib.asynccontextmanager
    async def following(self, repo: AgentRepository) -> AsyncIterator[None]:
        """While a session is served: the feed followed (by this session or another one)."""
        if self._leader is None:
            self._leader = anyio.Lock()
        self._sessions += 1
        try:
            if self._position is None and not await self._start(repo):
                yield  # a store without a change feed: nothing to follow
                return
            async with anyio.create_task_group() as group:
                group.start_soon(self._lead, repo, self._leader)
                try:
                    yield
                finally:
                    group.cancel_scope.cancel()
        finally:
            self._sessions -= 1
            if not self._sessions:
                self._position = None

    async def _start(self, repo: AgentRepository) -> bool:
        """Where the feed is now, before the session starts (``START_WAIT`` at most: else the
        leader finds it); False when the store keeps no change feed."""
        with anyio.move_on_after(START_WAIT), contextlib.suppress(AgentStoreError):
            try:
                position = await repo.alast_change()
            except NotImplementedError:
                return False
            if self._position is None:
                self._position = position
        return True

    async def _lead(self, repo: AgentRepository, leader: anyio.Lock) -> None:
        """Once this session leads: follow the feed until the session ends."""
        async with leader:
            missed = False
            while True:
                try:
                    if self._position is None:
                        self._position = await repo.alast_change()
                    if missed:
                        missed = False
                        await self._lost()
                    async for change in repo.awatch(after=self._position):
                        await self._deliver(change)
                        self._position = change.seq
                except ChangesExpiredError:  # start again from the newest change
                    self._position, missed = None, True
                except NotImplementedError:  # a store without a change feed
                    return
                except Exception:  # the store is down, or a bug: logged, then again
                    logger.warning("MCP server: the change feed failed", exc_info=True)
                    await anyio.sleep(RETRY)
