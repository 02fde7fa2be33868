"""A CLI's own retry notice ends the run: agentport owns retries.

Each agent CLI retries a failed model request by itself, some for minutes; under agentport's
retry policy those loops multiply (gemini's 10+5 attempts x 3). Where a CLI cannot be told to
stop retrying through a per-run setting, its FIRST retry notice is classified as the failure:

- on stderr, through `BackendSpec.retry_notice` (`stderr_notice` builds one from a pattern);
- on stdout, through an event whose `EndSignal` says `retry_notice` (`notice_event` builds it;
  `notice_error` turns it into the failure once the run has stopped).

A retry notice is never a success. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..core import AgentEvent, EndSignal, ErrorKind, EventType, ProviderError
from ._classify import kind_from_status, kind_from_text

__all__ = ["LineWatch", "notice_error", "notice_event", "status_in", "stderr_notice"]

_STATUS = re.compile(r"(?<![\d.])([45]\d\d)(?![\d.])")


def status_in(text: str) -> int | None:
    """The first HTTP error status (4xx/5xx) written as a separate number in *text*."""
    found = _STATUS.search(text)
    return int(found.group(1)) if found else None


def _kind(status: int | None, text: str) -> ErrorKind:
    # no status and no known wording: the request never got an answer (connection dropped)
    return kind_from_status(status) or kind_from_text(text) or ErrorKind.network


def notice_event(
    raw: Any,
    message: str,
    *,
    status: int | None = None,
    retry_after: float | None = None,
    kind: ErrorKind | None = None,
) -> AgentEvent:
    """The event a decoder returns for a retry notice on stdout: an error, terminal, marked
    `retry_notice`, with the status / Retry-After the CLI reported (when it did) and the kind
    when the CLI says it outright (a transport failure is `network`)."""
    end = EndSignal(
        terminal=True, retry_notice=True, fatal=True,
        kind=kind, status=status, retry_after=retry_after,
    )  # fmt: skip
    return AgentEvent(type=EventType.error, content=message, raw=raw, is_error=True, end=end)


def notice_error(event: AgentEvent, exit_code: int | None, stderr_tail: str) -> ProviderError:
    """The failure a `notice_event` announces: the status first, the wording second, else a
    network failure; `retry_after` as reported."""
    status, after, said = event.end.status, event.end.retry_after, event.end.kind
    return ProviderError(
        said if said is not None else _kind(status, event.content),
        f"the CLI's own retry was stopped at its first notice: {event.content}"[:2000],
        status=status,
        retry_after=float(after) if after is not None and after >= 0 else None,
        exit_code=exit_code,
        stderr_tail=stderr_tail[-4000:],
    )


LineWatch = Callable[[str], ProviderError | None]


def stderr_notice(pattern: re.Pattern[str], *, block: bool = False) -> Callable[[], LineWatch]:
    """A `BackendSpec.retry_notice` for stderr lines matching *pattern*: a named group
    `status`, when matched, is the HTTP status; a group `text` the part of the line that
    names the error (else the whole line, which is also searched for a status).

    *block*: a notice line ending in `{` opens a multi-line detail block (qwen 0.24's debug
    log prints the provider's message there); the failure is returned at the line that
    closes it (`}` first, at most `_BLOCK_LINES` later), its text joined to the notice, so
    the wording (a usage limit, say) can be classified. One watcher per run."""

    def watcher() -> LineWatch:
        held: list[str] = []

        def failure(text: str) -> ProviderError:
            found = pattern.search(text)
            groups = found.groupdict() if found else {}
            said = (groups.get("text") or text).strip()
            status_text = groups.get("status")
            status = int(status_text) if status_text and status_text.isdigit() else status_in(said)
            return ProviderError(
                _kind(status, said),
                f"the CLI's own retry was stopped at its first notice: {said}"[:2000],
                status=status,
            )

        def notice(line: str) -> ProviderError | None:
            if held:
                held.append(line.strip())
                if line.startswith("}") or len(held) > _BLOCK_LINES:
                    return failure(" ".join(held))
                return None
            if pattern.search(line) is None:
                return None
            if block and line.rstrip().endswith("{"):
                held.append(line.strip())
                return None
            return failure(line)

        return notice

    return watcher


_BLOCK_LINES = 30
