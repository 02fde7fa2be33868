"""The two contracts: `LLMAdapter` (one question, one answer) and `AgentRuntime`
(streaming, multi-turn, tool-using runs), the normalised `AgentEvent`, and `EndSignal`, what
a decoder tells the end-state table about an event."""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator
from returns.result import Failure, Result

from ._config import CompletionConfig
from ._errors import ErrorKind, ProviderError
from ._messages import Message
from ._response import CompletionResponse

__all__ = [
    "NO_END",
    "RETIRED_METADATA_KEYS",
    "AgentEvent",
    "AgentRuntime",
    "ClosableAdapter",
    "EndSignal",
    "EventType",
    "LLMAdapter",
    "RuntimeHandle",
]


class EventType(enum.StrEnum):
    init = "init"
    text = "text"
    reasoning = "reasoning"
    tool_call = "tool_call"
    tool_result = "tool_result"
    usage = "usage"
    error = "error"
    final = "final"
    #: a tool call the caller's approval hook (or the call's `ToolPolicy`) refused; metadata
    #: `request` (a `PermissionRequest`) and `reason`; the tool did not run
    permission_denied = "permission_denied"


# What a backend's decoder tells the end-state table about one event: whether the line ends
# the run, carries the CLI's own final answer, reports a failure the CLI will not get past, or
# announces the CLI's own retry. These facts travel as a closed, immutable value in
# `AgentEvent.end`, never as keys of `AgentEvent.metadata` (a misspelled key there would
# silently change a result; a misspelled field here is a `TypeError`).


@dataclass(frozen=True, slots=True, kw_only=True)
class EndSignal:
    """The end-state facts of one event; every field's default means "nothing to say".

    Attributes:
        terminal: the run's last event (the CLI's `result`, `turn.completed`, ...): stop
            reading; the CLI gets its linger time to exit.
        fatal: on an `is_error` event, a failure the run ends with after the backend's error
            grace unless the CLI goes on (a retry, a recovery).
        final_text: the CLI's own final answer, when it prints one (else the backend's
            `final_text(events)` builds it).
        structured: a natively enforced JSON value (a schema-constrained answer), or None.
        warning: a non-fatal note the answer carries (`CompletionResponse.warnings`).
        finish_reason: `stop` / `length` / `refusal`, only where the CLI says so.
        retry_notice: the CLI announced its own retry: the run ends there with that failure
            (agentport owns retries).
        status: the HTTP status of a failure the CLI reported, when it did.
        retry_after: seconds the provider asked to wait, when the CLI reported it.
        kind: the failure's kind when the CLI says it outright (an error type, a transport
            failure), ahead of its wording.
    """

    terminal: bool = False
    fatal: bool = False
    final_text: str | None = None
    structured: Any = None
    warning: str | None = None
    finish_reason: str | None = None
    retry_notice: bool = False
    status: int | None = None
    retry_after: float | None = None
    kind: ErrorKind | None = None

    def __repr__(self) -> str:
        said = [
            f"{f.name}={value!r}"
            for f in fields(self)
            if (value := getattr(self, f.name)) != f.default
        ]
        return f"EndSignal({', '.join(said)})"


NO_END = EndSignal()
"""The signal of an event that says nothing about how the run ends."""

RETIRED_METADATA_KEYS = frozenset(
    {
        "terminal",
        "fatal",
        "final_text",
        "structured",
        "warning",
        "finish_reason",
        "retry_notice",
        "retry_after",
        "kind",
        "error_type",
        "step",
    }
)
"""Keys `AgentEvent.metadata` refuses: they were end-state marks, now `EndSignal` fields."""


class AgentEvent(BaseModel):
    """One normalised event of an agent run: `type`, `content`, `raw`, `is_error`,
    `metadata`, and `end`, the decoder's typed signal to the end-state table.

    `raw` is the decoded source line (dict) or the raw text. `metadata` holds what callers
    read, and only that: `session_id` and `model` on init (and where a CLI reports them),
    `usage` (a `Usage`), `error` (a `ProviderError`) on a runtime's last `error` event,
    `response` (a `CompletionResponse`) on its last `final` event; on tool events `tool`,
    `id` (pairs a call with its result), `input`, `abandoned` (a call the turn never
    finished), and for web tools `web` (`search` / `fetch`), `query`, `url`, `urls`, `status`
    (the fetch's HTTP status); on permission_denied events `request` (a `PermissionRequest`)
    and `reason`. How the run ends (terminal, fatal, final text, structured
    value, warning, finish reason, retry notice, a failure's status / retry-after / kind) is
    `end` (`EndSignal`); `metadata` refuses those keys (`ValueError` naming the key).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    type: EventType
    content: str = ""
    raw: Any = None
    is_error: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    end: EndSignal = NO_END

    @field_validator("metadata")
    @classmethod
    def _no_end_state_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        retired = sorted(RETIRED_METADATA_KEYS & value.keys())
        if retired:
            raise ValueError(
                f"AgentEvent.metadata key {retired[0]!r} is an end-state mark: set "
                f"end=EndSignal({retired[0]}=...) instead"
            )
        return value


def last_event(result: Result[CompletionResponse, ProviderError]) -> AgentEvent:
    """A runtime turn's last event for its *result*: `error` carrying the `ProviderError`
    (`metadata["error"]`, its text as `content`) for a `Failure`, `final` carrying the
    `CompletionResponse` and its `usage` for a `Success`. Every runtime ends a turn
    through this one function, so callers read the same keys on every backend."""
    if isinstance(result, Failure):
        error = result.failure()
        return AgentEvent(
            type=EventType.error, content=str(error), is_error=True, metadata={"error": error}
        )
    response = result.unwrap()
    return AgentEvent(
        type=EventType.final,
        content=response.content,
        metadata={"response": response, "usage": response.usage},
    )


class RuntimeHandle(BaseModel):
    """Where a runtime lives: backend, session id (for resume, None until known), cwd."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    backend: str
    session_id: str | None = None
    cwd: Path | None = None


@runtime_checkable
class LLMAdapter(Protocol):
    """One question, one answer.

    `complete` returns `Success(CompletionResponse)` or `Failure(ProviderError)`; programming
    errors raise; cancellation propagates. `config=None` uses the adapter's defaults.

    An adapter is an async context manager: `async with create_adapter(...) as llm:` closes
    what it keeps between calls (warm agent processes: docs/warm.md) on the way out;
    `aclose()` does the same, and a second call does nothing. `ClosableAdapter` gives an
    adapter that keeps nothing the three methods.
    """

    @property
    def backend(self) -> str: ...

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]: ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class ClosableAdapter:
    """The closing half of `LLMAdapter` for a class to inherit: `async with` calls
    `aclose()` on the way out (an exception inside still propagates). `aclose` here keeps
    nothing to close; an adapter that keeps processes or connections overrides it (and
    makes a second call a no-op)."""

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def aclose_adapter(adapter: object) -> None:
    """Close what *adapter* keeps between calls (warm agent processes: docs/warm.md). Used by
    the adapters that wrap another: a caller's own adapter written before `LLMAdapter`
    declared `aclose` may lack it, and is then left as it is."""
    close = getattr(adapter, "aclose", None)
    if close is not None:
        await close()


class SteerResult(enum.StrEnum):
    """What a runtime's `steer(text)` did with the text: `applied_now` (the running turn
    reads it), `queued_next_turn` (it leads the next `send`'s prompt), `not_steerable` (this
    runtime takes no steering: nothing was kept)."""

    applied_now = "applied_now"
    queued_next_turn = "queued_next_turn"
    not_steerable = "not_steerable"


@runtime_checkable
class AgentRuntime(Protocol):
    """A streaming, multi-turn agent session; an async context manager owning its task group.

    ```python
    async with create_agent_runtime("codex") as rt:
        async for event in rt.send("Fix the failing test"):
            ...
        async for event in rt.send("Now explain it"):   # resumes rt.handle.session_id
            ...
    ```

    `send` starts one turn and returns its events through a bounded stream; the last event is
    `final` (metadata["response"]) or `error` (metadata["error"]).
    """

    @property
    def handle(self) -> RuntimeHandle: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...

    def send(
        self, prompt: str | Sequence[Message], config: CompletionConfig | None = None
    ) -> AsyncIterator[AgentEvent]: ...
