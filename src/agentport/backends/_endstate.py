"""End-state rules every CLI backend shares: what the last event of a run means.

Each backend's decoder marks its events with a typed `EndSignal` (`AgentEvent.end`,
`BackendSpec.decode`); these pure helpers turn the marks into the outcome, the same way for
every CLI:

- a `terminal` event ends the run (the runner then gives the CLI `linger_s` to exit and
  stops its group; a CLI lingering after its final event is neither a timeout nor retried);
- the final stream state decides: an error that a later successful terminal event follows was
  recovered, and becomes a warning carrying its text (`recovered_warnings`);
- a `fatal` error line that nothing follows ends the run after `error_grace_s` with that
  text as the failure (the grace is re-armed by any further output; `RunWatch`);
- an empty answer is classified from stderr before it is called `bad_output`
  (`empty_answer_error`: a 429 / RESOURCE_EXHAUSTED there is `rate_limited`);
- `finish_reason` comes from the decoder (`EndSignal.finish_reason`; None when the CLI
  never reports one): "length" keeps the answer and adds a warning,
  "refusal" is a non-retryable `content_filter` failure carrying the refusal text
  (`refusal_error`), the same rule as the ACP backend;
- a run whose CLI always ends a complete stream with one event (`BackendSpec.
  terminal_event`) and that ended without it keeps its answer with a warning
  (`MISSING_TERMINAL`): a cut stream is never a clean success;
- tool calls still open when the turn ends are closed as abandoned: a `tool_result` with
  `is_error` and `metadata["abandoned"] = True` (`ToolLedger`).

No I/O here: the generic adapter (`_cli.py`) and the ACP backend call these.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..core import AgentEvent, ErrorKind, EventType, ProviderError, Usage
from ._classify import kind_from_status, kind_from_text
from ._spec import BackendSpec, RunOutcome, UsageMode

__all__ = [
    "ABANDONED_TEXT",
    "DEFAULT_ERROR_GRACE_S",
    "LENGTH_WARNING",
    "MISSING_TERMINAL",
    "EndState",
    "RunWatch",
    "ToolLedger",
    "empty_answer_error",
    "finish_reason",
    "pending_error",
    "recovered_warnings",
    "refusal_error",
    "settle",
    "stderr_failure",
    "unrecovered",
]

DEFAULT_ERROR_GRACE_S = 5.0
"""Seconds a CLI may stay silent after a fatal error line before the run is ended."""

ABANDONED_TEXT = "the tool call never finished before the turn ended (abandoned)"
LENGTH_WARNING = "the answer was cut at the output token limit (finish_reason length)"
MISSING_TERMINAL = "the stream ended without its final {event} event: the answer may be incomplete"

# Lines of stderr that report a failure (the rest is banners, warnings and progress noise).
_FAILURE_LINE = re.compile(
    r"error|fail|exception|status|exhausted|quota|rate.?limit|denied|unauthori[sz]ed|overloaded",
    re.I,
)
_STATUS = re.compile(
    r"(?:status(?:\s*code)?|\"code\"|\bcode|HTTP)[\"'\s:=]*\b([45]\d\d)\b|\b([45]\d\d) (?:Too Many|"
    r"Unauthorized|Forbidden|Internal|Bad Gateway|Service Unavailable|Gateway)",
    re.I,
)


class ToolLedger:
    """The tool calls of one turn that have not produced a result yet (matched by
    `metadata["id"]`; calls without an id are not tracked)."""

    def __init__(self) -> None:
        self._open: dict[str, AgentEvent] = {}

    def observe(self, event: AgentEvent) -> None:
        key = event.metadata.get("id")
        if key is None:
            return
        if event.type is EventType.tool_call:
            self._open[str(key)] = event
        elif event.type is EventType.tool_result:
            self._open.pop(str(key), None)

    def close(self) -> list[AgentEvent]:
        """A failed, `abandoned` tool_result for each call still open; the ledger empties."""
        out = [
            AgentEvent(
                type=EventType.tool_result,
                content=ABANDONED_TEXT,
                is_error=True,
                metadata={"id": key, "tool": call.metadata.get("tool"), "abandoned": True},
            )
            for key, call in self._open.items()
        ]
        self._open.clear()
        return out


class RunWatch:
    """Decides, event by event, what the runner does next: `feed` returns True (stop: a
    terminal event), a float (stop unless more output arrives within that many seconds: a
    fatal error is pending) or False (go on)."""

    def __init__(self, grace_s: float = DEFAULT_ERROR_GRACE_S) -> None:
        self.grace_s = grace_s
        self.pending: AgentEvent | None = None

    def feed(self, event: AgentEvent | None) -> bool | float:
        if event is not None:
            if event.end.terminal:
                self.pending = None
                return True
            if event.is_error and event.end.fatal:
                self.pending = event
            elif event.type is not EventType.tool_result:
                self.pending = None  # the CLI went on: a retry or a recovery
        return float(self.grace_s) if self.pending is not None else False


def unrecovered(events: Sequence[AgentEvent]) -> AgentEvent | None:
    """The last run-level error event (tool results are not run errors), unless a successful
    terminal event comes after it."""
    for event in reversed(events):
        if event.type is EventType.tool_result:
            continue
        if event.end.terminal and not event.is_error:
            return None
        if event.is_error:
            return event
    return None


def pending_error(event: AgentEvent, exit_code: int | None, stderr_tail: str = "") -> ProviderError:
    """The failure for a fatal error line the CLI never got past: its signal's `status`
    first, then its wording, else `process_failed`; the text is the line's own."""
    status = event.end.status
    kind = kind_from_status(status) or kind_from_text(event.content) or ErrorKind.process_failed
    return ProviderError(
        kind,
        event.content or "the CLI reported an error and went silent",
        status=status,
        exit_code=exit_code,
        stderr_tail=stderr_tail[-4000:],
    )


def recovered_warnings(events: Iterable[AgentEvent]) -> tuple[str, ...]:
    """On a successful run: each run-level error the CLI recovered from, as a warning."""
    seen: list[str] = []
    for event in events:
        if event.is_error and event.type is not EventType.tool_result:
            note = f"recovered error: {event.content or event.type.value}"
            if note not in seen:
                seen.append(note)
    return tuple(seen)


def finish_reason(events: Sequence[AgentEvent]) -> str | None:
    """The last `finish_reason` a decoder reported, or None."""
    for event in reversed(events):
        reason = event.end.finish_reason
        if reason:
            return reason
    return None


# events that are part of the model's answer: seen before a failure, it came mid-stream
_ANSWER_EVENTS = frozenset(
    {EventType.text, EventType.reasoning, EventType.tool_call, EventType.tool_result}
)


def reported_usage(events: Sequence[AgentEvent], mode: UsageMode = "cumulative") -> Usage | None:
    """What a run spent, from its events' `metadata["usage"]`, or None when none reported
    any. *mode* is the backend's (`BackendSpec.usage_mode`): `per_request`, each report is
    one model request's and the run spent their sum (pi's `message_end`, opencode's
    `step_finish`: a tool step is a second request); `cumulative`, each report is the run's
    total so far and the last one is the run's (claude's, qwen's `result`, gemini's stats)."""
    found = [u for e in events if isinstance(u := e.metadata.get("usage"), Usage)]
    if not found:
        return None
    if mode == "per_request":
        return sum(found[1:], found[0])
    return found[-1]


def with_progress(
    error: ProviderError, events: Sequence[AgentEvent], mode: UsageMode = "cumulative"
) -> ProviderError:
    """*error* of a run that printed *events*, with how far the request got: part of the
    answer seen (text, reasoning, a tool event) is `mid_stream`; that or a usage report
    means the request reached the model (`request_sent` True), and the usage reported is
    what the failed run spent. Nothing of the model's leaves the error as its kind says (a
    CLI's own refusal to start is still not sent)."""
    answered = any(e.type in _ANSWER_EVENTS for e in events)
    usage = reported_usage(events, mode)
    if usage is not None and error.usage == Usage():
        error = error.replace(usage=usage)
    if answered or usage is not None or any(e.type is EventType.usage for e in events):
        return error.sent(True, mid_stream=answered)
    return error


def refusal_error(text: str, exit_code: int | None) -> ProviderError:
    """A refusal is a failure, not an answer: `content_filter`, not retryable, the text
    kept."""
    said = f": {text.strip()[:300]}" if text.strip() else ""
    return ProviderError(
        ErrorKind.content_filter,
        f"the model refused to answer (finish_reason refusal){said}",
        retryable=False,
        exit_code=exit_code,
        raw_text=text,
        details={"finish_reason": "refusal"},
    )


def stderr_failure(stderr_tail: str) -> tuple[ErrorKind, int | None, str] | None:
    """The last stderr line that reports a classifiable failure: (kind, HTTP status, line)."""
    for line in reversed(stderr_tail.splitlines()):
        line = line.strip()
        if not line or not _FAILURE_LINE.search(line):
            continue
        found = _STATUS.search(line)
        status = int(found.group(1) or found.group(2)) if found else None
        kind = kind_from_status(status) or kind_from_text(line)
        if kind is not None:
            return kind, status, line[:500]
    return None


def empty_answer_error(
    stderr_tail: str, exit_code: int | None, reason: str | None = None
) -> ProviderError:
    """A run that ended "successfully" with no answer: stderr first (a rate limit or server
    error the CLI only logged there), `bad_output` otherwise."""
    tail = stderr_tail[-4000:]
    found = stderr_failure(stderr_tail)
    if found is not None:
        kind, status, line = found
        return ProviderError(
            kind,
            f"the CLI ended without an answer; stderr: {line}",
            status=status,
            exit_code=exit_code,
            stderr_tail=tail,
        )
    why = f" (finish_reason {reason})" if reason and reason != "stop" else ""
    return ProviderError(
        ErrorKind.bad_output,
        f"the CLI exited without an answer{why}",
        exit_code=exit_code,
        stderr_tail=tail,
    )


@dataclass(frozen=True, slots=True)
class EndState:
    """How a finished run ended: `error`, or the answer `text` with its `finish_reason` and
    `warnings` (the decoders' `warning` notes, recovered errors, a length cut)."""

    error: ProviderError | None
    text: str = ""
    finish_reason: str | None = None
    warnings: tuple[str, ...] = ()


def cut_prompt_error(why: str, exit_code: int | None, stderr_tail: str = "") -> ProviderError:
    """A run whose CLI did not read its whole prompt: whatever it answered, it answered a cut
    prompt, so never a success. `invalid_request` (not retried: the same prompt is cut the
    same way), like a prompt refused up front for being over the CLI's stdin limit; but a
    failure the CLI reported on stderr (it stopped reading because it failed) is that
    failure, as for an empty answer."""
    if stderr_failure(stderr_tail) is not None:
        return empty_answer_error(stderr_tail, exit_code)
    return ProviderError(
        ErrorKind.invalid_request, f"{why}; an answer to a cut prompt is not returned",
        retryable=False, exit_code=exit_code, stderr_tail=stderr_tail[-4000:],
    )  # fmt: skip


def settle(
    spec: BackendSpec,
    outcome: RunOutcome,
    pending: AgentEvent | None = None,
    shape: Callable[[str], str] | None = None,
) -> EndState:
    """The end-state table of one run, in order: the backend's `classify`; a fatal error
    line nothing answered (*pending*, from `RunWatch`); a prompt the CLI did not read whole
    (`cut_prompt_error`); the answer (the last `EndSignal.final_text`, else
    `spec.final_text`, then *shape*: the natively enforced value); a refusal; an empty
    answer (stderr first); else success with finish_reason and warnings."""
    events = outcome.events
    error = spec.classify(outcome)
    if error is None and pending is not None:
        error = pending_error(pending, outcome.exit_code, outcome.stderr_tail)
    if error is None and outcome.stdin_short is not None:
        error = cut_prompt_error(outcome.stdin_short, outcome.exit_code, outcome.stderr_tail)
    if error is not None:
        return EndState(error)
    answer = next(
        (e.end.final_text for e in reversed(events) if e.end.final_text is not None), None
    )
    text = answer if answer is not None else spec.final_text(events)
    if shape is not None:
        text = shape(text)
    reason = finish_reason(events)
    if reason == "refusal":
        return EndState(refusal_error(text, outcome.exit_code))
    if not text.strip():
        return EndState(empty_answer_error(outcome.stderr_tail, outcome.exit_code, reason))
    notes = tuple(e.end.warning for e in events if e.end.warning is not None)
    notes += recovered_warnings(events) + ((LENGTH_WARNING,) if reason == "length" else ())
    ended = any(e.end.terminal and not e.is_error for e in events)
    if spec.terminal_event and not ended:
        notes += (MISSING_TERMINAL.format(event=spec.terminal_event),)
    return EndState(None, text, reason, notes)
