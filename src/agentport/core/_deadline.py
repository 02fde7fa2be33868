"""One call's deadline as a value: when it ends and which limit ends it.

Every layer of a call (the retry policy, a failover chain, the budget, the CLI adapter, the
process runner) reads the same `Deadline` instead of adding seconds to `time.monotonic()` on
its own: the time left is `remaining()`, the limit to name in a timeout is `limit`, and a
tighter bound is a new value (`narrow`), never an edit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

__all__ = ["Deadline", "DeadlineLimit"]

#: Which limit a deadline is: the call's `total_timeout_s`, one attempt's `attempt_timeout_s`,
#: or the caller's own anyio cancel scope around the call.
DeadlineLimit = Literal["total", "attempt", "scope"]

_FIELD = {"total": "total_timeout_s", "attempt": "attempt_timeout_s", "scope": "cancel scope"}


@dataclass(frozen=True, slots=True)
class Deadline:
    """An instant on the monotonic clock (`time.monotonic()`, seconds) by which something must
    end, the limit that set it, and that limit's configured length in seconds (for wording).

    Raises nothing; a deadline already past has `remaining() == 0`.
    """

    end: float
    limit: DeadlineLimit = "total"
    seconds: float = 0.0

    @classmethod
    def after(
        cls, seconds: float, limit: DeadlineLimit = "total", now: float | None = None
    ) -> Deadline:
        """The deadline *seconds* from *now* (default: the monotonic clock now)."""
        start = time.monotonic() if now is None else now
        return cls(start + max(seconds, 0.0), limit, seconds)

    @classmethod
    def of_call(
        cls, total_s: float, attempt_s: float | None = None, now: float | None = None
    ) -> Deadline:
        """A call's deadline: `total_timeout_s` from now, or its `attempt_timeout_s` when that
        is shorter (a call run as one attempt, without the retry policy)."""
        start = time.monotonic() if now is None else now
        whole = cls.after(total_s, "total", start)
        return whole.narrow(attempt_s, "attempt", start)

    @classmethod
    def of_scope(cls, scope_end: float, now: float | None = None) -> Deadline:
        """The caller's cancel scope as a deadline: *scope_end* is on anyio's clock
        (`anyio.current_effective_deadline()`), converted to the monotonic clock."""
        import anyio

        start = time.monotonic() if now is None else now
        left = scope_end - anyio.current_time()
        return cls(start + max(left, 0.0), "scope", left)

    @property
    def start(self) -> float:
        """When the limit began: `end - seconds`."""
        return self.end - max(self.seconds, 0.0)

    @property
    def field(self) -> str:
        """The name of the setting behind the limit (`total_timeout_s`, ...)."""
        return _FIELD[self.limit]

    def remaining(self, now: float | None = None) -> float:
        """Seconds left, never negative."""
        return max(self.end - (time.monotonic() if now is None else now), 0.0)

    def reached(self, now: float | None = None, slop: float = 0.0) -> bool:
        """Whether the deadline has passed (*slop* seconds early counts: timers fire at
        their bound, give or take a little)."""
        return (time.monotonic() if now is None else now) >= self.end - slop

    def earliest(self, other: Deadline) -> Deadline:
        """The deadline that ends first; on a tie this one (the outer limit keeps its
        name)."""
        return other if other.end < self.end else self

    def narrow(
        self, seconds: float | None, limit: DeadlineLimit, now: float | None = None
    ) -> Deadline:
        """This deadline, or *seconds* from *now* under *limit* when that ends first; None
        seconds = no further limit."""
        if seconds is None:
            return self
        return self.earliest(Deadline.after(seconds, limit, now))

    def words(self) -> str:
        """How a timeout names this limit: `total_timeout_s=30`."""
        return f"{self.field}={self.seconds:g}"
