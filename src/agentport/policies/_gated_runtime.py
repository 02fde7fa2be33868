"""`GatedRuntime`: an `AgentRuntime` whose every turn holds a slot of its backend's shared
concurrency window (`ConcurrencyGate`), the way `RetryingAdapter` holds one per attempt.

A turn waits for room, runs the wrapped runtime's turn, and settles the window from how the
turn ended: its `error` event's `ProviderError` (a 429 halves the window; an exhausted quota
leaves it alone) or its `final` event (a success). Like every runtime it owns a task group
and hands events out through a bounded stream (`EventStream`), so nothing straddles a task
group; the caller leaving the stream ends the wrapped turn and gives the slot back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from returns.result import Failure, Success

from ..core import (
    AgentEvent,
    AgentRuntime,
    CompletionConfig,
    EventStream,
    Message,
    ProviderError,
    RuntimeHandle,
    until_consumer_leaves,
)
from ._concurrency import ConcurrencyGate

__all__ = ["GatedRuntime"]


class GatedRuntime:
    """*inner*'s turns, each inside a slot of *gate* (module docstring)."""

    def __init__(self, inner: AgentRuntime, gate: ConcurrencyGate, buffer: int = 64) -> None:
        self.inner = inner
        self.gate = gate
        self._buffer = buffer
        self._tg: TaskGroup | None = None

    @property
    def handle(self) -> RuntimeHandle:
        return self.inner.handle

    def fork(self) -> GatedRuntime:
        """The wrapped runtime's fork (where it has one), gated by the same window."""
        return GatedRuntime(self.inner.fork(), self.gate, self._buffer)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        # the session controls a runtime may offer (`steer`, `interrupt`, `transcript`):
        # the wrapped runtime's own, so gating a runtime never hides what it can do
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        tg, self._tg = self._tg, None
        try:
            await tg.__aexit__(exc_type, exc, tb)
        finally:
            result = await self.inner.__aexit__(exc_type, exc, tb)
        return result

    def send(
        self, prompt: str | Sequence[Message], config: CompletionConfig | None = None
    ) -> AsyncIterator[AgentEvent]:
        if self._tg is None:
            raise RuntimeError("use `async with` before send()")
        send, receive = anyio.create_memory_object_stream[AgentEvent](self._buffer)
        self._tg.start_soon(self._turn, prompt, config, send)
        return EventStream(receive)

    async def _turn(
        self,
        prompt: str | Sequence[Message],
        config: CompletionConfig | None,
        send: MemoryObjectSendStream[AgentEvent],
    ) -> None:
        with until_consumer_leaves():
            async with send, self.gate.slot() as slot:
                events = self.inner.send(prompt, config)
                try:
                    async for event in events:
                        error = event.metadata.get("error") if event.type == "error" else None
                        if isinstance(error, ProviderError):
                            slot.settle(Failure(error))
                        elif event.type == "final":
                            slot.settle(Success(None))
                        await send.send(event)
                finally:
                    close = getattr(events, "aclose", None)
                    if close is not None:
                        with anyio.CancelScope(shield=True):
                            await close()
