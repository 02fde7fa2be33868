"""`GatedRuntime`: an `AgentRuntime` whose every turn holds a slot of its backend's shared
concurrency window (`ConcurrencyGate`), the way `RetryingAdapter` holds one per attempt.

A turn waits for room, runs the wrapped runtime's turn, and settles the window from how the
turn ended: its `error` event's `ProviderError` (a 429 halves the window; an exhausted quota
leaves it alone) or its `final` event (a success). Like every runtime it owns a task group
and hands events out through a bounded stream (`EventStream`), so nothing straddles a task
group; the caller leaving the stream ends the wrapped turn and gives the slot back.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import anyio
from returns.result import Failure, Success

from ..core import (
    AgentRuntime,
    CompletionConfig,
    Message,
    ProviderError,
    RuntimeHandle,
    TurnEvents,
    TurnRuntime,
)
from ._concurrency import ConcurrencyGate

__all__ = ["GatedRuntime"]


class GatedRuntime(TurnRuntime):
    """*inner*'s turns, each inside a slot of *gate* (module docstring)."""

    def __init__(self, inner: AgentRuntime, gate: ConcurrencyGate, buffer: int = 64) -> None:
        super().__init__(buffer)
        self.inner = inner
        self.gate = gate

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

    async def _open(self, stack: AsyncExitStack) -> None:
        await stack.enter_async_context(self.inner)  # closed after this runtime's turns
        await super()._open(stack)

    async def _turn(
        self, messages: list[Message], config: CompletionConfig | None, send: TurnEvents
    ) -> None:
        async with self.gate.slot() as slot:
            events = self.inner.send(messages, config)
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
