"""A bounded in-memory event store: SSE event ids, so a client whose HTTP stream dropped
during a long `refine` or `research_wait` reconnects with `Last-Event-ID` and receives
what it missed (MCP streamable HTTP, "Resumability and Redelivery").

The official SDK defines the `EventStore` interface and leaves the store to the server.
This one keeps the last `per_stream` events of at most `streams` streams in memory (the
oldest stream is forgotten first), so a server that runs for weeks cannot grow without
bound; an event older than that is not replayed (the client sees a gap, as after a
server restart).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

__all__ = ["BoundedEventStore"]


class BoundedEventStore(EventStore):
    """Event ids `<n>` (one counter per server); replay after an id sends the later events
    of that id's stream, in order, and names the stream (None for an unknown id)."""

    def __init__(self, *, per_stream: int = 512, streams: int = 256) -> None:
        self.per_stream = per_stream
        self.max_streams = streams
        self._next = itertools.count(1)
        self._streams: OrderedDict[StreamId, deque[tuple[int, JSONRPCMessage | None]]] = (
            OrderedDict()
        )
        self._stream_of: dict[int, StreamId] = {}

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        n = next(self._next)
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque()
            while len(self._streams) > self.max_streams:
                _, dropped = self._streams.popitem(last=False)
                for old, _ in dropped:
                    self._stream_of.pop(old, None)
        self._streams.move_to_end(stream_id)
        if len(events) >= self.per_stream:
            old, _ = events.popleft()
            self._stream_of.pop(old, None)
        events.append((n, message))
        self._stream_of[n] = stream_id
        return str(n)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        try:
            last = int(last_event_id)
        except ValueError:
            return None
        stream_id = self._stream_of.get(last)
        if stream_id is None:
            return None
        for n, message in list(self._streams.get(stream_id, ())):
            if n > last and message is not None:  # a priming event carries no message
                await send_callback(EventMessage(message, str(n)))
        return stream_id
