"""`RuntimeScope` and `TurnRuntime`: the lifecycle every `AgentRuntime` shares, written once.

`RuntimeScope` is the `async with` part: what a runtime opens (a working folder, a wrapped
runtime, a task group) goes on one `AsyncExitStack` in `_open`, and leaving the block closes
it in reverse order, each part seeing the exception that is on its way out.

`TurnRuntime` adds the turns: a task group (cancelled on the way out, so a running turn ends
with the block) and `send`, which starts one turn in it and hands its events to the caller
through a bounded memory stream (`EventStream`: a slow consumer applies back-pressure). The
turn ends quietly when the caller stops reading (`until_consumer_leaves`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Self, TypeAlias

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from ._config import CompletionConfig
from ._events import EventStream, until_consumer_leaves
from ._messages import Message, as_messages
from ._protocols import AgentEvent

__all__ = ["RuntimeScope", "TurnEvents", "TurnRuntime"]

#: where a turn sends its events (the caller reads them from the `EventStream`)
TurnEvents: TypeAlias = MemoryObjectSendStream[AgentEvent]


class RuntimeScope:
    """An async context manager whose parts are opened by `_open` on one exit stack."""

    _scope: AsyncExitStack | None = None

    async def _open(self, stack: AsyncExitStack) -> None:
        """Open this runtime's parts on *stack* (closed in reverse order on the way out)."""

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            await self._open(stack)
            self._scope = stack.pop_all()  # opened: the parts now live until __aexit__
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        scope, self._scope = self._scope, None
        assert scope is not None, "__aexit__ without __aenter__"
        return await scope.__aexit__(exc_type, exc, tb)


class TurnRuntime(RuntimeScope):
    """The task group and turns of an `AgentRuntime` (module docstring). A subclass opens its
    own parts in `_open` (calling `super()._open(stack)` last, so the task group closes
    first) and writes `_turn`, which sends the turn's events; the stream closes after it."""

    def __init__(self, buffer: int) -> None:
        self._buffer = buffer  # events a turn may run ahead of its reader
        self._tg: TaskGroup | None = None

    async def _open(self, stack: AsyncExitStack) -> None:
        self._tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(self._stop_turns)  # runs before the task group waits for its tasks

    def _stop_turns(self) -> None:
        tg, self._tg = self._tg, None
        if tg is not None:
            tg.cancel_scope.cancel()

    def send(
        self, prompt: str | Sequence[Message], config: CompletionConfig | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Start one turn; its events, the last one `final` or `error`. `RuntimeError`
        outside `async with`."""
        return self._start(as_messages(prompt), config)

    def _start(self, messages: list[Message], config: CompletionConfig | None) -> EventStream:
        if self._tg is None:
            raise RuntimeError("use `async with` before send()")
        send, receive = anyio.create_memory_object_stream[AgentEvent](self._buffer)
        self._tg.start_soon(self._produce, messages, config, send)
        return EventStream(receive)

    async def _produce(
        self, messages: list[Message], config: CompletionConfig | None, send: TurnEvents
    ) -> None:
        with until_consumer_leaves():  # the caller closed the stream: the turn just ends
            async with send:
                await self._turn(messages, config, send)

    async def _turn(
        self, messages: list[Message], config: CompletionConfig | None, send: TurnEvents
    ) -> None:
        raise NotImplementedError
