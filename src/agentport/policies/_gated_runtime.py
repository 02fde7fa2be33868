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
from contextlib import AsyncExitStack
from typing import Any

import anyio
from returns.result import Failure, Success

from ..core import (
    AgentEvent,
    AgentRuntime,
    CompletionConfig,
    ErrorKind,
    Message,
    ProviderError,
    RuntimeHandle,
    TurnEvents,
    TurnRuntime,
    as_messages,
    last_event,
)
from ._concurrency import ConcurrencyGate, Slot

__all__ = ["GatedRuntime"]


class GatedRuntime(TurnRuntime):
    """*inner*'s turns, each inside a slot of *gate* (module docstring)."""

    def __init__(self, inner: AgentRuntime, gate: ConcurrencyGate, buffer: int = 64) -> None:
        super().__init__(buffer)
        self.inner = inner
        self.gate = gate
        # turns send() started that the wrapped runtime has not been given yet (waiting to
        # be scheduled or for a slot), by their messages' identity: interrupt() ends them
        self._waiting: dict[int, anyio.CancelScope] = {}

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

    def send(
        self, prompt: str | Sequence[Message], config: CompletionConfig | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Start one turn (it waits for a slot of the window first); its events, the last
        one `final` or `error`. `RuntimeError` outside `async with`."""
        messages = as_messages(prompt)
        stream = self._start(messages, config)
        self._waiting[id(messages)] = anyio.CancelScope()
        return stream

    def interrupt(self) -> bool:
        """The wrapped runtime's `interrupt()`; a turn that has not reached it yet (sent a
        moment ago, or waiting for a slot) ends too, with an `error` event of kind
        `interrupted`, without running. False when no turn was running or waiting."""
        ended = bool(getattr(self.inner, "interrupt", lambda: False)())
        for scope in self._waiting.values():
            if not scope.cancel_called:
                scope.cancel()
                ended = True
        return ended

    async def _open(self, stack: AsyncExitStack) -> None:
        await stack.enter_async_context(self.inner)  # closed after this runtime's turns
        await super()._open(stack)

    async def _turn(
        self, messages: list[Message], config: CompletionConfig | None, send: TurnEvents
    ) -> None:
        waiting = self._waiting.get(id(messages)) or anyio.CancelScope()
        with waiting:
            async with self.gate.slot() as slot:
                self._waiting.pop(id(messages), None)
                await self._run_inner(slot, messages, config, send)
        self._waiting.pop(id(messages), None)
        if waiting.cancelled_caught:
            error = ProviderError(
                ErrorKind.interrupted,
                "the turn was interrupted (interrupt()) before it started",
                backend=self.handle.backend,
                retryable=False,
                details={"session_id": self.handle.session_id},
            )
            await send.send(last_event(Failure(error)))

    async def _run_inner(
        self, slot: Slot, messages: list[Message], config: CompletionConfig | None, send: TurnEvents
    ) -> None:
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
