"""`EchoAdapter` and `EchoRuntime`: the smallest real implementations of both contracts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from returns.result import Failure, Result, Success

from ..catalog import get_capability
from ..core import (
    AgentEvent,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    EventType,
    Message,
    MessageRole,
    OpenedCall,
    ProviderError,
    RawInfo,
    RuntimeHandle,
    TurnEvents,
    TurnRuntime,
    Usage,
    complete_call,
    last_event,
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


class EchoRuntime(TurnRuntime):
    """An `AgentRuntime` that echoes each turn as init, text, usage and final events.

    It owns a task group; each `send` runs in it and hands events out through a bounded
    memory stream (`buffer` events), so a slow consumer applies back-pressure.
    """

    def __init__(self, default_config: CompletionConfig | None = None, buffer: int = 16) -> None:
        super().__init__(buffer)
        self._adapter = EchoAdapter(default_config)
        self._handle = RuntimeHandle(backend="echo")

    @property
    def handle(self) -> RuntimeHandle:
        return self._handle

    async def _turn(
        self, messages: list[Message], config: CompletionConfig | None, send: TurnEvents
    ) -> None:
        if self._handle.session_id is None:
            self._handle.session_id = uuid.uuid4().hex
        sid = self._handle.session_id
        await send.send(AgentEvent(type=EventType.init, metadata={"session_id": sid}))
        result = await self._adapter.complete(messages, config)
        if isinstance(result, Failure):
            await send.send(last_event(result))
            return
        response = result.unwrap().model_copy(update={"raw": RawInfo(session_id=sid)})
        await send.send(AgentEvent(type=EventType.text, content=response.content))
        await send.send(AgentEvent(type=EventType.usage, metadata={"usage": response.usage}))
        await send.send(last_event(Success(response)))
