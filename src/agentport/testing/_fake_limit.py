"""`ConcurrencyLimit`: a `FakeModelServer` reply that behaves like a provider with a hidden
concurrency limit: it answers while at most `limit` model requests are being served, and
answers a 429 "too many concurrent requests" (with Retry-After) above it.

The limit may flap: `limit` can be a function of the seconds since the first request. Every
request the limit admits is counted as in service for `service_s` seconds (its answer is
delayed that long), so the count is exact without hooks in the HTTP handler. Thread-safe (the
server answers each connection in its own thread).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ._fake_replies import HttpFault, RecordedRequest, ServerReply, TextReply

__all__ = ["ConcurrencyLimit"]

BUSY_MESSAGE = "too many concurrent requests"


class ConcurrencyLimit:
    """A callable reply: `server.default = ConcurrencyLimit(4)`.

    Args:
        limit: requests served at once (>= 1), or a function of the seconds since the first
            request returning it (a flapping limit).
        service_s: how long each admitted request is served (its answer's delay), seconds.
        retry_after: the Retry-After (seconds) of a 429, or None for none.
        text: the answer of an admitted request.

    Counters (read them after the run): `served`, `rejected` (429s sent), `peak` (most
    requests in service at once) and `over` (admissions above the limit: always 0).
    """

    def __init__(
        self,
        limit: int | Callable[[float], int],
        *,
        service_s: float = 0.05,
        retry_after: float | None = 0.1,
        text: str = "ok",
    ) -> None:
        if isinstance(limit, int) and limit < 1:
            raise ValueError(f"limit must be >= 1, not {limit}")
        if service_s < 0:
            raise ValueError(f"service_s must be >= 0, not {service_s}")
        self._limit = limit
        self.service_s = service_s
        self.retry_after = retry_after
        self.text = text
        self._lock = threading.Lock()
        self._ends: list[float] = []
        self._start: float | None = None
        self.served = 0
        self.rejected = 0
        self.peak = 0
        self.over = 0

    def limit_at(self, elapsed: float) -> int:
        """The limit *elapsed* seconds after the first request (at least 1)."""
        return max(1, self._limit(elapsed) if callable(self._limit) else self._limit)

    def __call__(self, request: RecordedRequest) -> ServerReply:
        with self._lock:
            now = time.monotonic()
            if self._start is None:
                self._start = now
            self._ends = [end for end in self._ends if end > now]
            limit = self.limit_at(now - self._start)
            if len(self._ends) >= limit:
                self.rejected += 1
                return HttpFault(429, BUSY_MESSAGE, retry_after=self.retry_after)
            self._ends.append(now + self.service_s)
            self.served += 1
            self.peak = max(self.peak, len(self._ends))
            self.over += len(self._ends) > limit
            return TextReply(self.text, delay=self.service_s)
