"""`CliRuntime`: the `AgentRuntime` of every agent CLI described by a `BackendSpec`, built on
`CliAdapter` (one CLI process per `send`, a working folder for the runtime's life, later
turns resuming the session where the catalog says session_resume is NATIVE)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import ExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from returns.result import Failure

from ..core import (
    AgentEvent,
    BackendCapability,
    CompletionConfig,
    EventStream,
    EventType,
    Message,
    Param,
    ParamSupport,
    RuntimeHandle,
    as_messages,
    merge_config,
    until_consumer_leaves,
)
from ..transport import private_tempdir
from ._cli import CliAdapter
from ._spec import BackendSpec

if TYPE_CHECKING:
    from ._settings import BackendSettings

__all__ = ["CliRuntime"]


class CliRuntime:
    """`AgentRuntime` for any agent CLI described by a `BackendSpec`.

    An async context manager owning a task group; each `send` runs one CLI process in it and
    hands its events out through a bounded memory stream (`buffer` events: a slow consumer
    applies back-pressure). A fresh working directory lives as long as the runtime (unless the
    config sets `cwd`); later turns resume `handle.session_id` where the catalog says
    session_resume is NATIVE. Leaving the block cancels a running turn and kills its process.
    """

    def __init__(
        self,
        spec: BackendSpec,
        capability: BackendCapability,
        settings: BackendSettings,
        buffer: int = 64,
    ) -> None:
        self._adapter = CliAdapter(spec, capability, settings)
        self._handle = RuntimeHandle(backend=capability.name)
        self._buffer = buffer
        self._tg: TaskGroup | None = None
        self._workdir: ExitStack | None = None

    @property
    def handle(self) -> RuntimeHandle:
        return self._handle

    async def __aenter__(self) -> Self:
        self._workdir = ExitStack()
        prefix = f"agentport-{self._handle.backend}-rt-"
        self._handle.cwd = self._workdir.enter_context(private_tempdir(prefix))
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
            return await tg.__aexit__(exc_type, exc, tb)
        finally:
            if self._workdir is not None:
                self._workdir.close()
                self._workdir = None

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
            config = merge_config(config, self._adapter.default_config)
            update: dict[str, Any] = {}
            if config.cwd is None:
                update["cwd"] = self._handle.cwd
            resumable = self._adapter.capability.support(Param.session_resume)
            if (
                config.session_id is None
                and self._handle.session_id
                and resumable is ParamSupport.NATIVE
            ):
                update["session_id"] = self._handle.session_id
            config = config.model_copy(update=update)

            async def sink(event: AgentEvent) -> None:
                sid = event.metadata.get("session_id")
                if sid:
                    self._handle.session_id = str(sid)
                await send.send(event)

            result = await self._adapter.run(messages, config, sink)
            if isinstance(result, Failure):
                error = result.failure()
                final = AgentEvent(
                    type=EventType.error,
                    content=str(error),
                    is_error=True,
                    metadata={"error": error},
                )
            else:
                response = result.unwrap()
                final = AgentEvent(
                    type=EventType.final,
                    content=response.content,
                    metadata={"response": response, "usage": response.usage},
                )
            await send.send(final)
