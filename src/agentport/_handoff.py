"""`handoff`: continue an agent conversation on another backend.

```python
async with create_agent_runtime("claude") as rt:
    ...                                   # turns; rt.transcript records them
async with handoff(rt, to="codex") as moved:
    async for event in moved.send():      # the open question, asked on codex
        ...
```

The conversation travels as a neutral transcript (`agentport.core.Transcript`: messages,
tool calls and results in short form, the working folder, the open question), rendered by
`agentport.core.brief` within a token bound and redacted. The new backend's first turn
carries the briefing; what did not fit is named in that turn's `CompletionResponse.warnings`
(and in `Handoff.warnings`), never dropped in silence.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

from .core import (
    DEFAULT_BRIEFING_TOKENS,
    AgentEvent,
    AgentRuntime,
    Briefing,
    CompletionConfig,
    EventType,
    Message,
    MessageRole,
    RuntimeHandle,
    RuntimeScope,
    SteerResult,
    Transcript,
    as_messages,
    brief,
)

__all__ = ["Handoff", "handoff", "transcript_of"]


def transcript_of(source: AgentRuntime | Transcript) -> Transcript:
    """The neutral transcript of *source*: a `Transcript` as is, or the `transcript` a
    runtime keeps (every agent CLI runtime and `Handoff` do). `TypeError` for a runtime that
    keeps none: build its `Transcript` with `Transcript.with_turn` from the events you read."""
    if isinstance(source, Transcript):
        return source
    kept = getattr(source, "transcript", None)
    if not isinstance(kept, Transcript):
        name = type(source).__name__
        raise TypeError(
            f"{name} keeps no transcript; pass a Transcript (Transcript.with_turn builds one "
            "from a turn's events)"
        )
    return kept


def handoff(
    source: AgentRuntime | Transcript,
    to: str | Sequence[str] | None = None,
    *,
    question: str | None = None,
    max_tokens: int = DEFAULT_BRIEFING_TOKENS,
    cwd: Path | None = None,
    **overrides: Any,
) -> Handoff:
    """An agent runtime on backend *to* that continues *source*'s conversation.

    *source*: a runtime that keeps a transcript (`create_agent_runtime`'s CLI runtimes) or a
    `Transcript`. *to*, *cwd* and *overrides*: as for `create_agent_runtime` (a backend name,
    a chain, `[llm]` overrides such as `model=`). *question* replaces the transcript's open
    question. *max_tokens*: the briefing's bound in estimated tokens (`core.estimate_tokens`;
    default `DEFAULT_BRIEFING_TOKENS`, at least `MIN_BRIEFING_TOKENS`, else `ValueError`).
    Raises `ProviderError` like `create_agent_runtime` (an unknown or completion-only
    backend), before anything runs.
    """
    from .factory import create_agent_runtime  # the factory loads settings on first use

    transcript = transcript_of(source)
    if question is not None:
        transcript = replace(transcript, open_question=question)
    brief(transcript, max_tokens=max_tokens)  # a bad bound fails here, not at the first send
    runtime = create_agent_runtime(to, cwd=cwd, **overrides)
    return Handoff(runtime, transcript, max_tokens)


class Handoff(RuntimeScope):
    """The `AgentRuntime` `handoff` returns: the target backend's runtime, whose first
    `send` carries the briefing. Keeps its own `transcript` (the source's turns, then its
    own, with the prompts as the caller sent them), so it can be handed over again."""

    def __init__(self, runtime: AgentRuntime, transcript: Transcript, max_tokens: int) -> None:
        self.runtime = runtime
        self.transcript = transcript
        self.max_tokens = max_tokens
        self.briefing: Briefing | None = None

    @property
    def handle(self) -> RuntimeHandle:
        return self.runtime.handle

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the briefing left out or cut (empty before the first `send`)."""
        return () if self.briefing is None else self.briefing.warnings

    async def _open(self, stack: AsyncExitStack) -> None:
        await stack.enter_async_context(self.runtime)

    def send(
        self, prompt: str | Sequence[Message] | None = None, config: CompletionConfig | None = None
    ) -> AsyncIterator[AgentEvent]:
        """One turn on the target backend. The first turn asks the briefing: *prompt* (when
        given) as its open question, else the transcript's; later turns are plain turns."""
        text = None if prompt is None else _text(as_messages(prompt))
        if self.briefing is None:
            transcript = self.transcript
            if text is not None:
                transcript = replace(transcript, open_question=text)
            self.briefing = brief(transcript, max_tokens=self.max_tokens)
            text = transcript.question
            config = self._with_cwd(config)
            events = self.runtime.send(self.briefing.text, config)
            return _Recorded(self, text, events, self.briefing.warnings)
        if text is None:
            raise ValueError("send() needs a prompt after the first turn")
        return _Recorded(self, text, self.runtime.send(prompt or text, config), ())

    def steer(self, text: str) -> SteerResult:
        """The target runtime's `steer` (`not_steerable` when it has none)."""
        steer = getattr(self.runtime, "steer", None)
        return SteerResult.not_steerable if steer is None else SteerResult(steer(text))

    def interrupt(self) -> bool:
        """The target runtime's `interrupt` (False when it has none)."""
        interrupt = getattr(self.runtime, "interrupt", None)
        return False if interrupt is None else bool(interrupt())

    def _with_cwd(self, config: CompletionConfig | None) -> CompletionConfig | None:
        """The source's working folder for the first turn when it still exists and the
        caller named none (the new agent sees the files the conversation was about)."""
        folder = self.transcript.cwd
        if folder is None or not Path(folder).is_dir():
            return config
        if config is not None and "cwd" in config.model_fields_set:
            return config
        base = config or CompletionConfig()
        return base.model_copy(update={"cwd": Path(folder)})


def _text(messages: Sequence[Message]) -> str:
    return "\n\n".join(m.content for m in messages if m.role is MessageRole.user)


class _Recorded:
    """The events of one turn, passed through; at the turn's end the `Handoff`'s transcript
    gains the turn, and the first turn's final answer carries the briefing's warnings."""

    def __init__(
        self,
        owner: Handoff,
        prompt: str,
        events: AsyncIterator[AgentEvent],
        warnings: tuple[str, ...],
    ) -> None:
        self._owner, self._prompt, self._events, self._warnings = owner, prompt, events, warnings
        self._seen: list[AgentEvent] = []

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> AgentEvent:
        try:
            event = await self._events.__anext__()
        except StopAsyncIteration:
            owner = self._owner
            owner.transcript = owner.transcript.with_turn(self._prompt, self._seen)
            raise
        if event.type is EventType.final and self._warnings:
            response = event.metadata.get("response")
            if response is not None:
                noted = response.model_copy(
                    update={"warnings": (*self._warnings, *response.warnings)}
                )
                metadata = {**event.metadata, "response": noted}  # validated: a new event
                event = AgentEvent(**{**dict(event), "metadata": metadata})
        self._seen.append(event)
        return event
