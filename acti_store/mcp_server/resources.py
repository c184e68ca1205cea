"""The agents as MCP resources, and the notifications that tell clients they changed.

``acti://agents`` is ``list_created_agents``' artifact (bounded: the first names of each stratum
and exact counts); ``acti://agents/{name}`` is the agent's document and
``acti://agents/{name}/history`` its history document, both as export writes them (the same
``documents`` functions). ``resources/list`` names ``acti://agents`` and then every agent, by
name, a page at a time (the store's keyset cursor). Reading goes through the builder tools'
logic, so an unknown agent is refused with ``get_agent_config``'s text (the names that exist).
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio
from mcp import types
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.session import ServerSession
from mcp.shared.exceptions import McpError
from pydantic import AnyUrl

from ..documents import dumps
from ..errors import AgentStoreError, InvalidInputError
from ..models import HISTORY_MAX_RECORDS, SearchQuery
from ..tools import render
from ..tools.builder import BuilderTools
from ..tools.outcomes import Result
from ..tools.specs import SPECS_BY_NAME, tool_coroutine
from . import texts
from .feed import FeedFollower

if TYPE_CHECKING:
    from ..changes import Change
    from ..repository import AgentRepository

#: The MCP specification's error code for a resource that does not exist.
RESOURCE_NOT_FOUND: Final = -32002
#: Agents per page of ``resources/list``.
PAGE_SIZE: Final = 100
JSON: Final = "application/json"
#: How long one notification may take to reach one client before it is given up.
NOTIFY_TIMEOUT: Final = 5.0
#: Tools after whose call the list of resources changed (an agent came or went).
LISTING_TOOLS: Final = frozenset(
    {"create_agent_config", "clone_agent_config", "delete_agent_config"}
)
#: Tools whose write is a run's record, no change of the feed (a run may take minutes): the
#: changes of the feed do not wait for them (``Notifier.writing``).
RUN_TOOLS: Final = frozenset({"execute_created_agent"})
#: How long a change of the feed waits for this server's writes in progress, at most, seconds.
SETTLE_WAIT: Final = 10.0
#: The key of ``list_changed`` among the notifications already sent (``Notifier.changed``).
_LISTING: Final = ""

_AGENT: Final = re.compile(r"acti://agents/(?P<name>[^/]*)(?P<history>/history)?")


def agent_uri(name: str) -> str:
    return texts.AGENT_URI.format(name=name)


def history_uri(name: str) -> str:
    return texts.HISTORY_URI.format(name=name)


def templates() -> list[types.ResourceTemplate]:
    """The two resource templates: an agent and its history."""
    return [
        types.ResourceTemplate(
            uriTemplate=texts.AGENT_URI,
            name="agent",
            description=texts.AGENT_DESCRIPTION,
            mimeType=JSON,
        ),
        types.ResourceTemplate(
            uriTemplate=texts.HISTORY_URI,
            name="agent_history",
            description=texts.HISTORY_DESCRIPTION,
            mimeType=JSON,
        ),
    ]


def _agents_resource() -> types.Resource:
    return types.Resource(
        uri=AnyUrl(texts.AGENTS_URI),
        name="agents",
        description=texts.AGENTS_DESCRIPTION,
        mimeType=JSON,
    )


def _error(code: int, message: str) -> McpError:
    return McpError(types.ErrorData(code=code, message=message))


def _store_error(exc: AgentStoreError) -> McpError:
    return _error(types.INTERNAL_ERROR, render.store_error(exc))


class Resources:
    """The resources of one store, read through ``builder``'s tools and the store's async API
    (the tools' coroutines, ``acall``): the event loop is never held."""

    def __init__(self, builder: BuilderTools) -> None:
        self._builder = builder

    async def _tool(self, tool: str, /, **arguments: Any) -> Result:
        """What ``tool`` answers, run as its coroutine (``specs.tool_coroutine``)."""
        return await tool_coroutine(self._builder, SPECS_BY_NAME[tool])(**arguments)

    async def page(self, cursor: str | None) -> types.ListResourcesResult:
        """``acti://agents`` (on the first page), then every agent by name, a page at a time."""
        query = SearchQuery(sort_by="name", limit=PAGE_SIZE)
        try:
            repo = await self._builder.arepo()
            page = await repo.acall(lambda r: r.search_page(query, cursor))
        except InvalidInputError as exc:  # a cursor this server did not give
            raise _error(types.INVALID_PARAMS, str(exc)) from None
        except AgentStoreError as exc:
            raise _store_error(exc) from None
        agents = [
            types.Resource(
                uri=AnyUrl(agent_uri(agent.name)),
                name=agent.name,
                description=agent.description,
                mimeType=JSON,
            )
            for agent in page.agents
        ]
        first = [_agents_resource()] if cursor is None else []
        return types.ListResourcesResult(resources=first + agents, nextCursor=page.next_cursor)

    async def read(self, uri: str) -> list[ReadResourceContents]:
        """The resource at ``uri`` as JSON; an unknown one is an MCP error saying what exists."""
        if uri == texts.AGENTS_URI:
            _, listing = self._checked(await self._tool("list_created_agents"))
            document = {key: value for key, value in listing.items() if key != "status"}
            return [ReadResourceContents(dumps(document), JSON)]
        match = _AGENT.fullmatch(uri)
        if match is None:
            raise _error(RESOURCE_NOT_FOUND, texts.UNKNOWN_RESOURCE.format(uri=uri))
        name = match["name"]
        if match["history"]:
            history = await self._tool("get_agent_history", name=name, limit=HISTORY_MAX_RECORDS)
            _, found = self._checked(history)
            return [ReadResourceContents(dumps(found["history"]), JSON)]
        _, found = self._checked(await self._tool("get_agent_config", name=name))
        return [ReadResourceContents(dumps(found["agent"]), JSON)]

    @staticmethod
    def _checked(result: Result) -> Result:
        """``result`` if the tool succeeded; else its text as an MCP error."""
        text, artifact = result
        if artifact["status"] == "success":
            return result
        code = types.INTERNAL_ERROR if artifact["error"] == "store_error" else RESOURCE_NOT_FOUND
        raise _error(code, text)


def changed_by(tool: str, artifact: Mapping[str, Any]) -> tuple[list[str], bool]:
    """The resources a writing tool's call changed, and whether the list of them changed.

    An agent's document and history change when the tool returns it (``agent``) or when a run
    of it was reported (``agent_name``: a failed run is recorded too); a dry run changes nothing.
    """
    agent = artifact.get("agent")
    if isinstance(agent, Mapping) and artifact["status"] == "success":
        name = agent.get("name")
    else:
        name = artifact.get("agent_name")
    if not isinstance(name, str) or artifact.get("deleted") is False:
        return [], False
    return [texts.AGENTS_URI, agent_uri(name), history_uri(name)], tool in LISTING_TOOLS


def changed_in(change: Change) -> tuple[list[str], bool]:
    """The resources a change of the store's feed changed, and whether the list of them changed:
    the agent's document always; the listing (``acti://agents``) when an agent came, went or
    was updated (its description or stratum); its history when it came or went."""
    name = change.agent
    if change.kind in ("created", "deleted"):
        return [texts.AGENTS_URI, agent_uri(name), history_uri(name)], True
    if change.kind == "updated":
        return [texts.AGENTS_URI, agent_uri(name)], False
    return [agent_uri(name)], False


class Notifier:
    """The sessions this server serves, what each subscribed to, and the notifications.

    Every session is told that the list of resources changed (when an agent came or went), and
    each session that subscribed to a changed resource that it was updated: after a write
    through this server, at once (before the tool's answer), and after a change any process
    made, as the store's change feed brings it (``feed``, a ``FeedFollower`` run by the
    sessions). One change is notified once: a write through this server marks the resources it
    notified with the feed's newest position (``covers``), and a change of the feed up to that
    position is not notified again for them; the feed's changes wait while such a write is in
    progress (``writing``; ``SETTLE_WAIT`` at most). A session that is gone is forgotten; a
    slow one is given up after ``NOTIFY_TIMEOUT`` seconds.
    """

    def __init__(self) -> None:
        self._sessions: weakref.WeakKeyDictionary[ServerSession, set[str]] = (
            weakref.WeakKeyDictionary()
        )
        #: Resource (``_LISTING``: the list) -> the feed position its last notification covered.
        self._covered: dict[str, int] = {}
        self._writes = 0
        self._settled: anyio.Event | None = None  # set while no write is in progress
        self.feed = FeedFollower(self._feed_changed, self._everything_changed)

    def seen(self, session: ServerSession) -> None:
        self._sessions.setdefault(session, set())

    def subscribe(self, session: ServerSession, uri: str) -> None:
        self._sessions.setdefault(session, set()).add(uri)

    def unsubscribe(self, session: ServerSession, uri: str) -> None:
        self._sessions.setdefault(session, set()).discard(uri)

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """A write through this server, with its notifications: the feed's changes wait."""
        if self._writes == 0:
            self._settled = anyio.Event()
        self._writes += 1
        try:
            yield
        finally:
            self._writes -= 1
            if self._writes == 0 and self._settled is not None:
                self._settled.set()

    async def covers(self, repo: AgentRepository, uris: list[str], *, listing: bool) -> None:
        """Mark ``uris`` (and the list) as notified for every change of the feed so far: call
        it after the write, before its notifications are sent."""
        if not (uris or listing):
            return
        try:
            position = await repo.alast_change()
        except (AgentStoreError, NotImplementedError):  # not marked (or no feed): the feed's
            return  # change, if any, is notified again
        for key in [*uris, _LISTING] if listing else uris:
            self._covered[key] = max(position, self._covered.get(key, 0))

    def _fresh(self, keys: list[str], seq: int) -> list[str]:
        """The keys whose last notification came before change ``seq``."""
        fresh = []
        for key in keys:
            covered = self._covered.get(key)
            if covered is None or covered < seq:
                fresh.append(key)
                self._covered.pop(key, None)  # the feed is past it: the mark is done
        return fresh

    async def _feed_changed(self, change: Change) -> None:
        if self._writes and self._settled is not None:
            with anyio.move_on_after(SETTLE_WAIT):
                await self._settled.wait()
        uris, listing = changed_in(change)
        uris = self._fresh(uris, change.seq)
        listing = listing and bool(self._fresh([_LISTING], change.seq))
        await self.changed(uris, listing=listing)

    async def _everything_changed(self) -> None:
        """Changes were missed (pruned before the feed read them): every subscribed resource
        and the list may have changed."""
        for session, subscribed in list(self._sessions.items()):
            await self._send(session, sorted(subscribed), listing=True)

    async def changed(self, uris: list[str], *, listing: bool) -> None:
        for session, subscribed in list(self._sessions.items()):
            await self._send(session, [uri for uri in uris if uri in subscribed], listing=listing)

    async def _send(self, session: ServerSession, updated: list[str], *, listing: bool) -> None:
        if not (listing or updated):
            return
        with anyio.move_on_after(NOTIFY_TIMEOUT):
            try:
                if listing:
                    await session.send_resource_list_changed()
                for uri in updated:
                    await session.send_resource_updated(AnyUrl(uri))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._sessions.pop(session, None)
