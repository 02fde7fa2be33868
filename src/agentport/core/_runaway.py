"""Runaway stops: the same failure, repeated, ends the loop instead of spending on.

A loop that keeps sending the same input to the same backend and keeps getting the same
failure (a retry policy, a failover chain cycling back, a workflow re-asking a step) spends
until a budget or a usage window ends it. `RunawayGuard` counts, per (input, backend), the
run of identical failures (same `ErrorKind`) since the last different outcome: each failed
attempt counts (`ProviderError.attempts`, so the retries inside one call count too); a
different kind starts the run again at one; a success clears it. Once the run reaches the
bound, the next call for that input on that backend is refused before it is sent:
`ErrorKind.runaway`, not retryable, `details["loop"]` naming it (backend, kind, input digest,
call site label, how many times). Failures decided before anything was sent (config,
unsupported, a budget, a cooling window, ...) cost nothing and do not count. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._errors import _UNSENT_BY_KIND, ErrorKind, ProviderError
from ._messages import Message

__all__ = ["DEFAULT_RUNAWAY_BOUND", "RunawayGuard", "input_digest"]

DEFAULT_RUNAWAY_BOUND = 3
_MAX_TRACKED = 4096  # inputs remembered; the oldest is forgotten first


def input_digest(messages: Sequence[Message], model: str | None = None) -> str:
    """A sha256 hex digest of a call's input: its messages and the model asked for."""
    body = [m.model_dump(mode="json") for m in messages]
    text = json.dumps([model, body], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class RunawayGuard:
    """The runs of identical failures per (input digest, backend) (module docstring).

    Attributes:
        bound: how many identical failures in a row are allowed before the next call is
            refused (>= 1; `ValueError` otherwise).
    """

    bound: int = DEFAULT_RUNAWAY_BOUND
    _runs: dict[tuple[str, str], tuple[ErrorKind, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.bound, bool) or not isinstance(self.bound, int) or self.bound < 1:
            raise ValueError(f"runaway bound must be a whole number >= 1 (got {self.bound!r})")

    def run(self, digest: str, backend: str) -> tuple[ErrorKind, int] | None:
        """The current run for *digest* on *backend*: (kind, count), or None."""
        return self._runs.get((digest, backend))

    def failed(self, digest: str, backend: str, kind: ErrorKind) -> None:
        """One failed attempt: the run goes on with the same kind, else starts again."""
        if kind in _UNSENT_BY_KIND:
            return  # nothing was sent: nothing was spent
        key = (digest, backend)
        previous = self._runs.pop(key, None)  # re-inserted last: the newest
        count = previous[1] + 1 if previous is not None and previous[0] is kind else 1
        self._runs[key] = (kind, count)
        while len(self._runs) > _MAX_TRACKED:
            self._runs.pop(next(iter(self._runs)))

    def succeeded(self, digest: str, backend: str) -> None:
        """An answer: the run is over."""
        self._runs.pop((digest, backend), None)

    def observe(self, digest: str, backend: str, error: ProviderError | None) -> None:
        """A call's outcome: *error* None is a success; else each of its attempts (or the
        error itself when it has none) counts as one failure, on the backend it names."""
        if error is None:
            self.succeeded(digest, backend)
            return
        if error.kind is ErrorKind.runaway:
            return  # our own refusal
        for attempt in error.attempts or ():
            self.failed(digest, attempt.backend or backend, attempt.kind)
        if not error.attempts and error.request_sent is not False:
            self.failed(digest, error.backend or backend, error.kind)

    def refusal(self, digest: str, backend: str, label: str | None = None) -> ProviderError | None:
        """The `runaway` failure of a call that would repeat a run at its bound, or None."""
        run = self._runs.get((digest, backend))
        if run is None or run[1] < self.bound:
            return None
        kind, count = run
        where = f" at {label!r}" if label else ""
        return ProviderError(
            ErrorKind.runaway,
            f"the same failure ({kind.value}) came back {count} times in a row for this "
            f"input{where}; not calling {backend} with it again (bound {self.bound})",
            backend=backend,
            retryable=False,
            request_sent=False,
            details={
                "loop": {
                    "backend": backend,
                    "kind": kind.value,
                    "input_sha256": digest[:16],
                    "label": label,
                    "repeats": count,
                    "bound": self.bound,
                }
            },
        )
