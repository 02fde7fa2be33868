"""One CLI process as `CliAdapter` follows it, frame by frame: `CliTurn`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..core import AgentEvent
from ..transport import Frame
from ._endstate import RunWatch, ToolLedger
from ._spec import BackendSpec, Invocation
from ._turn_control import bind_stdin

__all__ = ["CliTurn", "Sink"]

Sink = Callable[[AgentEvent], Awaitable[None]]


class CliTurn:
    """One CLI process as the adapter follows it: the decoded events in order, the end-state
    watch, the tool ledger (abandoned tool results go to the sink, not into `events`), and
    the stdin dialogue of a CLI answered frame by frame (`Invocation.replies`)."""

    def __init__(
        self,
        spec: BackendSpec,
        sink: Sink | None,
        error_grace_s: float,
        decode: Callable[[Any], AgentEvent | None] | None = None,
    ) -> None:
        self.spec = spec
        self.decode = decode or spec.decode  # a warm process's lines may be read otherwise
        self.sink = sink
        self.events: list[AgentEvent] = []
        self.watch = RunWatch(error_grace_s)
        self.ledger = ToolLedger()
        self._replies: Callable[[dict[str, Any]], bytes | Awaitable[bytes] | None] | None = None
        self._more: MemoryObjectSendStream[bytes] | None = None

    def dialogue(
        self, invocation: Invocation, stack: ExitStack
    ) -> MemoryObjectReceiveStream[bytes] | None:
        """More stdin for a CLI that is answered frame by frame (closed with *stack*), else
        None: stdin then closes after the invocation's bytes."""
        if invocation.replies is None:
            return None
        self._replies = invocation.replies
        more, answer = anyio.create_memory_object_stream[bytes](16)
        self._more = stack.enter_context(more)
        bind_stdin(self._more)  # a runtime steers or interrupts the turn through it
        return stack.enter_context(answer)

    async def emit(self, *out: AgentEvent) -> None:
        if self.sink is not None:
            for event in out:
                await self.sink(event)

    async def on_frame(self, frame: Frame) -> bool | float:
        event = None
        if frame.is_json and isinstance(frame.value, dict):
            reply = None if self._replies is None else self._replies(frame.value)
            if isinstance(reply, Awaitable):  # e.g. an approval the caller's hook decides
                reply = await reply
            if reply is not None and self._more is not None:
                self._more.send_nowait(reply)  # the CLI's protocol: what stdin says next
            event = self.decode(frame.value)
        if event is not None:
            if event.end.terminal:
                await self.emit(*self.ledger.close())  # the turn ends: close what never did
            self.ledger.observe(event)
            self.events.append(event)
            await self.emit(event)
        return self.watch.feed(event)
