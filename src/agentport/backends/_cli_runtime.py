"""`CliRuntime`: the `AgentRuntime` of every agent CLI described by a `BackendSpec`, built on
`CliAdapter` (one CLI process per `send`, a working folder for the runtime's life, later
turns resuming the session where the catalog says session_resume is NATIVE)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from returns.result import Failure, Result

from ..core import (
    AgentEvent,
    BackendCapability,
    CallPlan,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
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
    last_event,
    plan_call,
    planned,
)
from ..transport import private_tempdir
from ._cli import CliAdapter
from ._spec import BackendSpec
from ._turn_control import CURRENT_TURN, TurnControl

if TYPE_CHECKING:
    from ._settings import BackendSettings

__all__ = ["CliRuntime"]

_INTERRUPT_S = 5.0  # how long a CLI asked to end its turn has before its process is stopped


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
        self._fork_from: tuple[str | None, Path | None] | None = None  # (session, its cwd)
        self._handle = RuntimeHandle(backend=capability.name)
        #: the conversation so far, neutral (`agentport.handoff` continues it elsewhere)
        self.transcript = Transcript(backend=capability.name)
        self._running: anyio.CancelScope | None = None  # the turn `interrupt()` ends
        # a turn send() started that has not run yet: its scope, by its messages' identity
        # (interrupt() right after send() must end that turn, not return False)
        self._sent: dict[int, anyio.CancelScope] = {}
        self._steered: list[str] = []  # `steer()` texts for the next turn
        self._control: TurnControl | None = None  # the running turn, where the CLI steers

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
        self._running = self._sent[id(messages)] = anyio.CancelScope()
        return self._start(messages, config)

    def fork(self) -> CliRuntime:
        """A new runtime (enter it with `async with`) whose first turn continues a copy of
        this session under a new id (`CompletionConfig.fork_session`), in this runtime's
        working folder (the CLI finds its sessions by folder: keep this runtime open until
        the fork's first turn ended). `ValueError` before this session has an id; its first
        turn fails `unsupported` where the catalog says fork is IGNORED (also on a backend
        that keeps no session, such as pi)."""
        forks = self._adapter.capability.support(Param.fork) is not ParamSupport.IGNORED
        if not self._handle.session_id and forks:
            raise ValueError("fork() needs a session: run a turn first")
        spec, capability, settings, buffer = self._made
        forked = CliRuntime(spec, capability, settings, buffer)
        forked._fork_from = (self._handle.session_id, self._handle.cwd)
        forked.transcript = self.transcript
        return forked

    def steer(self, text: str) -> SteerResult:
        """Add *text* to the conversation: `applied_now` where the running turn's CLI takes
        input mid-turn (codex's app-server: `turn/steer`; a steer codex then refuses, the
        turn having just ended, leads the next turn instead); otherwise one CLI process runs
        each turn with its prompt closed, so the text leads the next `send`'s prompt
        (`queued_next_turn`), as a user message before it."""
        if not text.strip():
            raise ValueError("steer() needs a non-empty text")
        if self._tg is None:  # a steer no turn can take would be lost in silence
            raise RuntimeError("use `async with` before steer(): the runtime is not open")
        if self._steer_now(text):
            return SteerResult.applied_now
        self._steered.append(text)
        return SteerResult.queued_next_turn

    def interrupt(self) -> bool:
        """End the running turn now: where the CLI takes an interrupt (codex's app-server:
        `turn/interrupt`) it ends the turn itself (its process is stopped anyway after 5 s);
        otherwise its process group is killed (SIGTERM, then SIGKILL
        after `grace_s`). Either way its event stream ends with an `error` event of kind
        `interrupted`. The session stays resumable: the next `send` resumes
        `handle.session_id` where the catalog says session_resume is NATIVE. False when no
        turn was running."""
        running = self._running
        if running is None or running.cancel_called:
            return False
        if not self._interrupt_now(running):
            running.cancel()
        return True

    def _steer_now(self, text: str) -> bool:
        """Hand *text* to the running turn where its CLI takes input mid-turn (codex's
        app-server: `turn/steer`): True when it was sent to the running turn."""
        control = self._control
        if control is None or control.steer is None or control.interrupted:
            return False
        return control.send(control.steer(text))

    def _interrupt_now(self, running: anyio.CancelScope) -> bool:
        """Ask the running turn's CLI to end it (codex's app-server: `turn/interrupt`), with
        the process stopped anyway when the turn has not ended within `_INTERRUPT_S`; False
        where the CLI takes no interrupt (the caller stops the process)."""
        control = self._control
        if control is None or control.interrupt is None or self._tg is None:
            return False
        if not control.send(control.interrupt()):
            return False
        control.interrupted = True

        async def stop_later() -> None:
            await anyio.sleep(_INTERRUPT_S)
            if self._running is running:
                running.cancel()

        self._tg.start_soon(stop_later)
        return True

    async def _controlled(
        self,
        messages: list[Message],
        plan: CallPlan,
        sink: Callable[[AgentEvent], Awaitable[None]],
    ) -> Result[CompletionResponse, ProviderError] | None:
        """The adapter's run of the turn's *plan* (handed down: the adapter neither merges
        the config again nor recounts the deadline) with this turn's `TurnControl` current
        (native steer and interrupt); None when an interrupt ended it (reported as
        `interrupted`); steer texts the CLI refused lead the next turn."""
        control = TurnControl()
        token = CURRENT_TURN.set(control)
        self._control = control
        try:
            with planned(plan):
                result = await self._adapter.run(messages, plan.config, sink)
        finally:
            CURRENT_TURN.reset(token)
            self._control = None
            self._steered[:0] = control.refused
        if control.interrupted and isinstance(result, Failure):
            return None
        return result

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
            # the turn's one merge and deadline: one attempt, as a direct `run` would plan it
            plan = plan_call(messages, config, self._adapter.default_config, limit="attempt")
            config = plan.config
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
            with self._sent.pop(id(messages), None) or anyio.CancelScope() as scope:
                self._running = scope
                result = await self._controlled(messages, replace(plan, config=config), sink)
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
            final = last_event(result)
            prompt = "\n\n".join(m.content for m in messages if m.role is MessageRole.user)
            self.transcript = replace(
                self.transcript.with_turn(prompt, [*seen, final]), cwd=str(config.cwd)
            )
            await send.send(final)
