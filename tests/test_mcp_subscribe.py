"""Resource subscriptions of ``acti-store serve-mcp`` follow the store's change feed: a change
any process makes to a subscribed agent is notified, once; other agents' changes and
unsubscribed agents send nothing. The official MCP client over stdio; the changes are made by
another process (``test_config_cache.in_another_process``). On every engine (``store_url``).
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import make_config
from mcp import types
from mcp_harness import acti_store, free_port, http_process, http_session, served
from test_config_cache import committed_at, in_another_process

from acti_store import open_repository

# serve-mcp and the writers run in processes of their own,
# each on a store at head (the migrations are tested on their own)
pytestmark = [pytest.mark.slow, pytest.mark.store_at_head]

#: How long a notification may take to arrive, at most (the goal is well under a second).
ARRIVES_WITHIN = 10.0


class Notes:
    """The ``resources/updated`` and ``list_changed`` notifications a client received."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            root = message.root
            uri = (
                str(root.params.uri)
                if isinstance(root, types.ResourceUpdatedNotification)
                else None
            )
            self.seen.append((root.method, uri))
            self._arrived.set()

    async def wait_for(self, uri: str) -> list[tuple[str, str | None]]:
        """Every notification until the ``updated`` one of ``uri`` (``ARRIVES_WITHIN``); then
        none is kept."""
        with anyio.fail_after(ARRIVES_WITHIN):
            while ("notifications/resources/updated", uri) not in self.seen:
                self._arrived = anyio.Event()
                await self._arrived.wait()
        seen, self.seen = self.seen, []
        return seen


def updated(uri: str) -> tuple[str, str]:
    return ("notifications/resources/updated", uri)


async def test_changes_by_another_process_reach_the_subscribers(
    store_url: str, tmp_path: Path
) -> None:
    with closing(open_repository(store_url)) as repo:
        for name in ("a", "b", "c"):
            repo.create(make_config(name))
    notes = Notes()
    argv = acti_store("serve-mcp", "--url", store_url)
    async with served("stdio", argv, tmp_path / "log", message_handler=notes) as server:
        session = server.session
        await session.subscribe_resource("acti://agents/a")

        # b's change first, then a's: the feed is in order, so b's would have come before.
        writer = in_another_process(
            store_url,
            ("update", ["b", {"tags": ["b-changed"]}]),
            ("update", ["a", {"tags": ["a-changed"]}]),
        )
        first = await notes.wait_for("acti://agents/a")
        committed_at(writer)

        writer = in_another_process(store_url, ("set_label", ["a", "production", 1]))
        label = await notes.wait_for("acti://agents/a")
        committed_at(writer)

        await session.unsubscribe_resource("acti://agents/a")
        await session.subscribe_resource("acti://agents/c")
        writer = in_another_process(
            store_url,
            ("update", ["a", {"tags": ["a-again"]}]),
            ("update", ["c", {"tags": ["c-changed"]}]),
        )
        after = await notes.wait_for("acti://agents/c")
        committed_at(writer)

    assert first == [updated("acti://agents/a")]
    assert label == [updated("acti://agents/a")]
    assert after == [updated("acti://agents/c")]


async def test_a_write_through_the_server_is_notified_once(store_url: str, tmp_path: Path) -> None:
    """The server notifies its own write at once (before its answer) and the feed's change of
    it is not notified again; another process's change after it is."""
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config("a"))
    notes = Notes()
    argv = acti_store("serve-mcp", "--url", store_url)
    async with served("stdio", argv, tmp_path / "log", message_handler=notes) as server:
        session = server.session
        await session.subscribe_resource("acti://agents/a")
        await session.call_tool("update_agent_config", {"name": "a", "tags": ["own-write"]})
        own = await notes.wait_for("acti://agents/a")
        writer = in_another_process(store_url, ("update", ["a", {"tags": ["theirs"]}]))
        theirs = await notes.wait_for("acti://agents/a")
        committed_at(writer)

    assert own == [updated("acti://agents/a")]
    assert theirs == [updated("acti://agents/a")]  # the feed's own-write change was not sent


async def test_over_http_the_feed_goes_on_when_the_session_following_it_leaves(
    store_url: str, tmp_path: Path
) -> None:
    """One session of a server follows the feed for all of them (the first one): when it
    ends, the next one takes over from the same position."""
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config("a"))
    first_notes, second_notes = Notes(), Notes()
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = acti_store("serve-mcp", "--url", store_url)
    subscribed, leave, left = anyio.Event(), anyio.Event(), anyio.Event()

    async def first_session() -> None:  # the first session: it follows the feed
        async with http_session(url, message_handler=first_notes) as first:
            await first.subscribe_resource("acti://agents/a")
            subscribed.set()
            await leave.wait()
        left.set()

    with http_process(argv, port, tmp_path / "log"):
        async with anyio.create_task_group() as group:
            group.start_soon(first_session)
            await subscribed.wait()
            async with http_session(url, message_handler=second_notes) as second:
                await second.subscribe_resource("acti://agents/a")
                writer = in_another_process(store_url, ("update", ["a", {"tags": ["both"]}]))
                both = (
                    await first_notes.wait_for("acti://agents/a"),
                    await second_notes.wait_for("acti://agents/a"),
                )
                committed_at(writer)
                leave.set()
                await left.wait()
                writer = in_another_process(store_url, ("update", ["a", {"tags": ["second"]}]))
                after = await second_notes.wait_for("acti://agents/a")
                committed_at(writer)

    assert both == ([updated("acti://agents/a")], [updated("acti://agents/a")])
    assert after == [updated("acti://agents/a")]
