"""`CliRuntime`: the `AgentRuntime` of every agent CLI described by a `BackendSpec`, built on
`CliAdapter` (one CLI process per `send`, a working folder for the runtime's life, later
turns resuming the session where the catalog says session_resume is NATIVE)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from returns.result import Failure

from ..core import (
    AgentEvent,
    BackendCapability,
    CompletionConfig,
    ErrorKind,
    EventType,
    Message,
    MessageRole,
    Param,
    ParamSupport,
    ProviderError,
    RuntimeHandle,
    SteerResult,
    Transcript,
    TurnEvents,
    TurnRuntime,
    as_messages,
    merge_config,
)
from ..transport import private_tempdir
from ._cli import CliAdapter
from ._spec import BackendSpec

if TYPE_CHECKING:
    from ._settings import BackendSettings

__all__ = ["CliRuntime"]


class CliRuntime(TurnRuntime):
    """`AgentRuntime` for any agent CLI described by a `BackendSpec`.

    An async context manager owning a task group; each `send` runs one CLI process in it and
    hands its events out through a bounded memory stream (`buffer` events: a slow consumer
    applies back-pressure). A fresh working directory lives as long as the runtime (unless the
    config sets `cwd`); later turns resume `handle.session_id` where the catalog says
    session_resume is NATIVE. Leaving the block cancels a running turn and kills its process.
    Session controls (docs/sessions.md): `interrupt()` ends the running turn, `steer(text)`
    queues text for the next turn, `fork()` copies the session where the CLI can, and
    `transcript` records the conversation for `agentport.handoff`.
    """

    def __init__(
        self,
        spec: BackendSpec,
        capability: BackendCapability,
        settings: BackendSettings,
        buffer: int = 64,
    ) -> None:
        super().__init__(buffer)
        self._adapter = CliAdapter(spec, capability, settings)
        self._made = (spec, capability, settings, buffer)
        self._fork_from: tuple[str, Path | None] | None = None  # (session, its cwd)
        self._handle = RuntimeHandle(backend=capability.name)
        #: the conversation so far, neutral (`agentport.handoff` continues it elsewhere)
        self.transcript = Transcript(backend=capability.name)
        self._running: anyio.CancelScope | None = None  # the turn `interrupt()` ends
        self._steered: list[str] = []  # `steer()` texts for the next turn

    @property
    def handle(self) -> RuntimeHandle:
        return self._handle

    async def _open(self, stack: AsyncExitStack) -> None:
        prefix = f"agentport-{self._handle.backend}-rt-"
        self._handle.cwd = stack.enter_context(private_tempdir(prefix))
        self.transcript = replace(self.transcript, cwd=str(self._handle.cwd))
        await super()._open(stack)

    def send(
        self, prompt: str | Sequence[Message], config: CompletionConfig | None = None
    ) -> AsyncIterator[AgentEvent]:
        if self._tg is None:
            raise RuntimeError("use `async with` before send()")
        messages = as_messages(prompt)
        if self._steered:  # what steer() queued leads this turn, in the order it came
            steered, self._steered = self._steered, []
            messages = [*(Message.user(text) for text in steered), *messages]
        return self._start(messages, config)

    def fork(self) -> CliRuntime:
        """A new runtime (enter it with `async with`) whose first turn continues a copy of
        this session under a new id (`CompletionConfig.fork_session`), in this runtime's
        working folder (the CLI finds its sessions by folder: keep this runtime open until
        the fork's first turn ended). `ValueError` before this session has an id; its first
        turn fails `unsupported` where the catalog says fork is IGNORED."""
        if not self._handle.session_id:
            raise ValueError("fork() needs a session: run a turn first")
        spec, capability, settings, buffer = self._made
        forked = CliRuntime(spec, capability, settings, buffer)
        forked._fork_from = (self._handle.session_id, self._handle.cwd)
        forked.transcript = self.transcript
        return forked

    def steer(self, text: str) -> SteerResult:
        """Add *text* to the conversation: one CLI process runs each turn with its prompt
        closed, so a running turn cannot read more; the text leads the next `send`'s prompt
        (`queued_next_turn`), as a user message before it."""
        if not text.strip():
            raise ValueError("steer() needs a non-empty text")
        self._steered.append(text)
        return SteerResult.queued_next_turn

    def interrupt(self) -> bool:
        """End the running turn now: its process group is killed (SIGTERM, then SIGKILL
        after `grace_s`) and its event stream ends with an `error` event of kind
        `interrupted`. The session stays resumable: the next `send` resumes
        `handle.session_id` where the catalog says session_resume is NATIVE. False when no
        turn was running."""
        running = self._running
        if running is None or running.cancel_called:
            return False
        running.cancel()
        return True

    async def _turn(
        self, messages: list[Message], config: CompletionConfig | None, send: TurnEvents
    ) -> None:
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
            if self._fork_from is not None:  # this runtime's first turn forks its source
                (source, folder), self._fork_from = self._fork_from, None
                update |= {"session_id": source, "fork_session": True}
                if folder is not None and "cwd" not in config.model_fields_set:
                    update["cwd"] = folder
            config = config.model_copy(update=update)

            asked = config.session_id
            seen: list[AgentEvent] = []

            async def sink(event: AgentEvent) -> None:
                seen.append(event)
                sid = event.metadata.get("session_id")
                # a resume that landed in another session fails (session_not_found): the
                # handle keeps naming the session asked for
                if sid and (asked is None or str(sid) == asked or config.fork_session):
                    self._handle.session_id = str(sid)
                await send.send(event)

            result = None
            with anyio.CancelScope() as scope:
                self._running = scope
                result = await self._adapter.run(messages, config, sink)
            if self._running is scope:
                self._running = None
            if result is None:  # interrupt(): the runner killed the process on its way out
                result = Failure(
                    ProviderError(
                        ErrorKind.interrupted,
                        "the turn was interrupted (interrupt()); the session stays resumable",
                        backend=self._handle.backend,
                        retryable=False,
                        details={"session_id": self._handle.session_id},
                    )
                )
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
            prompt = "\n\n".join(m.content for m in messages if m.role is MessageRole.user)
            self.transcript = replace(
                self.transcript.with_turn(prompt, [*seen, final]), cwd=str(config.cwd)
            )
            await send.send(final)
