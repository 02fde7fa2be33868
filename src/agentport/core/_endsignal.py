"""`EndSignal`: what a backend's decoder tells the end-state table about one event.

A decoder reads one line of a CLI's output; whether that line ends the run, carries the
CLI's own final answer, reports a failure the CLI will not get past, or announces the CLI's
own retry decides how the run ends. Those facts travel as this closed, immutable value in
`AgentEvent.end`, never as keys of `AgentEvent.metadata` (a misspelled key there would
silently change a result; a misspelled field here is a `TypeError`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ._errors import ErrorKind

__all__ = ["NO_END", "RETIRED_METADATA_KEYS", "EndSignal"]


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
