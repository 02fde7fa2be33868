"""`EchoAdapter` and `EchoRuntime`: the smallest real implementations of both contracts."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from returns.result import Failure, Result, Success

from ..catalog import get_capability
from ..core import (
    AgentEvent,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    EventStream,
    EventType,
    Message,
    MessageRole,
    OpenedCall,
    ProviderError,
    RawInfo,
    RuntimeHandle,
    Usage,
    as_messages,
    complete_call,
    until_consumer_leaves,
)
from ..structured import parse_answer, parse_choice

__all__ = ["EchoAdapter", "EchoRuntime"]


def _echo(messages: Sequence[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role is MessageRole.user), "")


class EchoAdapter(ClosableAdapter):
    """Answers with the last user message (parsed when the call has an `output_schema`)."""

    def __init__(self, default_config: CompletionConfig | None = None) -> None:
        self._capability = get_capability("echo")
        self.default_config = default_config or CompletionConfig()

    @property
    def backend(self) -> str:
        return "echo"

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        # instant: nothing to bound by the deadline
        return await complete_call(
            self._capability, messages, config, self.default_config, _answer, bounded=False
        )


async def _answer(call: OpenedCall) -> Result[CompletionResponse, ProviderError]:
    text, config = _echo(call.messages), call.config
    parsed: Any = None
    if config.output_schema is not None:
        result = parse_answer(text, config.output_schema, "echo", strict=config.schema_strict)
        if isinstance(result, Failure):
            return result
        parsed = result.unwrap()
    elif config.choices is not None:
        choice = parse_choice(text, config.choices, "echo")
        if isinstance(choice, Failure):
            return choice
        text = parsed = choice.unwrap()
    return Success(
        CompletionResponse(
            content=text,
            parsed=parsed,
            model="echo",
            usage=Usage(input_tokens=len(text.split()), output_tokens=len(text.split())),
            finish_reason="stop",
            backend="echo",
        )
    )


class EchoRuntime:
    """An `AgentRuntime` that echoes each turn as init, text, usage and final events.

    It owns a task group; each `send` runs in it and hands events out through a bounded
    memory stream (`buffer` events), so a slow consumer applies back-pressure.
    """

    def __init__(self, default_config: CompletionConfig | None = None, buffer: int = 16) -> None:
        self._adapter = EchoAdapter(default_config)
        self._handle = RuntimeHandle(backend="echo")
        self._buffer = buffer
        self._tg: TaskGroup | None = None

    @property
    def handle(self) -> RuntimeHandle:
        return self._handle

    async def __aenter__(self) -> Self:
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
        return await tg.__aexit__(exc_type, exc, tb)

    def send(
        self, prompt: str | Sequence[Message], config: CompletionConfig | None = None
    ) -> AsyncIterator[AgentEvent]:
        if self._tg is None:
            raise RuntimeError("use `async with` before send()")
        send, receive = anyio.create_memory_object_stream[AgentEvent](self._buffer)
        self._tg.start_soon(self._turn, as_messages(prompt), config, send)
        return EventStream(receive)

    async def _turn(
        self,
        messages: list[Message],
        config: CompletionConfig | None,
        send: MemoryObjectSendStream[AgentEvent],
    ) -> None:
        with until_consumer_leaves():  # the caller closed the stream: the turn just ends
            await self._turn_events(messages, config, send)

    async def _turn_events(
        self,
        messages: list[Message],
        config: CompletionConfig | None,
        send: MemoryObjectSendStream[AgentEvent],
    ) -> None:
        async with send:
            if self._handle.session_id is None:
                self._handle.session_id = uuid.uuid4().hex
            sid = self._handle.session_id
            await send.send(AgentEvent(type=EventType.init, metadata={"session_id": sid}))
            result = await self._adapter.complete(messages, config)
            if isinstance(result, Failure):
                error = result.failure()
                await send.send(
                    AgentEvent(
                        type=EventType.error,
                        content=str(error),
                        is_error=True,
                        metadata={"error": error},
                    )
                )
                return
            response = result.unwrap().model_copy(update={"raw": RawInfo(session_id=sid)})
            await send.send(AgentEvent(type=EventType.text, content=response.content))
            await send.send(AgentEvent(type=EventType.usage, metadata={"usage": response.usage}))
            await send.send(
                AgentEvent(
                    type=EventType.final,
                    content=response.content,
                    metadata={"response": response, "usage": response.usage},
                )
            )
