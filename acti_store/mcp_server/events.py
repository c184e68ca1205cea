"""The HTTP transport's last events, kept so that a client whose SSE stream broke can resume it.

With an event store the SDK starts every SSE stream with a priming event (an id, no data, and the
``retry`` delay) and numbers the events after it; a client that lost the stream reconnects with
``Last-Event-ID`` and gets what it missed. The events are kept in memory, the most recent
``MAX_EVENTS`` of all sessions: resuming is for a connection that broke moments ago. Event ids
are random, so that no session can name (and replay) another one's events.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from typing import Final

from mcp.server.streamable_http import (
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamId,
)
from mcp.types import JSONRPCMessage

#: Events kept, all sessions together (the oldest goes first).
MAX_EVENTS: Final = 512
#: How long a client waits before reconnecting to a stream that closed (the SSE ``retry``), ms.
RETRY_MS: Final = 1000


class RecentEvents(EventStore):
    """The last ``max_events`` events of this server's streams, in memory."""

    def __init__(self, max_events: int = MAX_EVENTS) -> None:
        self._max_events = max_events
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = secrets.token_urlsafe(16)
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self._max_events:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Send the events of ``last_event_id``'s stream that came after it; None when that
        event is unknown (never given, or dropped since)."""
        stored = self._events.get(last_event_id)
        if stored is None:
            return None
        stream_id = stored[0]
        ids = list(self._events)
        for event_id in ids[ids.index(last_event_id) + 1 :]:
            stream, message = self._events.get(event_id, (None, None))
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id
