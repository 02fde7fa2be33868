"""`EventStream`: how every `AgentRuntime.send` hands one turn's events to the caller, and
`until_consumer_leaves`: how the producing turn ends when the caller stops listening."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from ._protocols import AgentEvent

__all__ = ["EventStream", "until_consumer_leaves"]


@contextmanager
def until_consumer_leaves() -> Iterator[None]:
    """Wrap a runtime turn: the caller closing its `EventStream` (from any task, on asyncio
    or trio) makes the turn's next send raise `BrokenResourceError`, bare or inside the
    `ExceptionGroup` of a task group the send ran in (the runner's); either ends the turn
    quietly. Any other exception in the group propagates."""
    try:
        yield
    except* anyio.BrokenResourceError:
        pass


class EventStream:
    """Async iterator over one turn's events, read from a bounded in-memory stream that the
    runtime's task fills. Not an async generator, so nothing straddles the runtime's task
    group (anyio forbids yielding from an async generator inside a task group or cancel
    scope). `aclose()` drops the stream; the producing turn then stops."""

    def __init__(self, receive: MemoryObjectReceiveStream[AgentEvent]) -> None:
        self._receive = receive

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._receive.close()
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._receive.close()
