"""The adaptive concurrency window of one backend (pure: no I/O, no clock of its own).

AIMD, the way TCP congestion control and the providers' own SDK guides treat a 429: a
*pressure* answer (`rate_limited` that may be retried: "too many requests", "too many
concurrent requests"; `overloaded`) halves the window, never below 1; its Retry-After sets
a cooldown before the next call may enter; `GROW_AFTER` consecutive successes grow it by
one, up to its maximum. Every decrease starts a new *epoch*: a call carries the epoch it
entered in, and a call that entered before the last decrease can neither grow the window
back (its success says nothing about the smaller window) nor halve it again or extend
the pause (the decrease already answered the burst it belonged to: one burst of 429s is
one halving and one pause, not one per refused call). An exhausted usage window
(`quota_exhausted`, a rate limit whose text says the quota or balance is spent: not
retryable) is not pressure: the quota policy (the shared cooldown) handles it and the
window stays as it is.

`WindowState` is immutable; `settle(state, outcome, entered_epoch, retry_after, now)` is the
one transition, `admits(state, in_flight, now)` the one admission rule. `now` and `until`
are wall-clock seconds (`time.time()`): the state is shared by processes of one machine.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from ..core import ErrorKind, ProviderError

__all__ = [
    "GROW_AFTER",
    "MAX_COOLDOWN_S",
    "Outcome",
    "WindowState",
    "admits",
    "outcome_of",
    "settle",
]

GROW_AFTER = 3
"""Consecutive successes (of calls that entered in the current epoch) that grow the window."""

MAX_COOLDOWN_S = 300.0
"""The longest Retry-After believed as a pause of every caller; a longer wait is a quota's
business (the shared cooldown), not a burst's."""


class Outcome(enum.Enum):
    """What a finished call says about load: `success`; `pressure` (too many calls at once);
    `quota` (an exhausted usage window: the quota policy's); `neutral` (any other failure:
    says nothing about load, but ends a run of successes)."""

    success = "success"
    pressure = "pressure"
    quota = "quota"
    neutral = "neutral"


_PRESSURE = frozenset({ErrorKind.rate_limited, ErrorKind.overloaded})


def outcome_of(error: ProviderError | None) -> Outcome:
    """A call's `Outcome`: None (a success) is `success`; `quota_exhausted`, or a
    `rate_limited` one classified as not retryable (its text says the quota or balance is
    spent, `core._quota.as_quota`), is `quota`; a retryable `rate_limited` or an `overloaded`
    is `pressure`; anything else `neutral`."""
    if error is None:
        return Outcome.success
    if error.kind is ErrorKind.quota_exhausted:
        return Outcome.quota
    if error.kind is ErrorKind.rate_limited and not error.retryable:
        return Outcome.quota
    if error.kind in _PRESSURE:
        return Outcome.pressure
    return Outcome.neutral


@dataclass(frozen=True, slots=True)
class WindowState:
    """One backend's window.

    Attributes:
        window: calls allowed in flight at once, in [1, maximum].
        maximum: the ceiling it may grow to (the catalog's `Concurrency.maximum`).
        epoch: how many decreases there have been; a call remembers the epoch it entered in.
        streak: consecutive successes in this epoch since the last change.
        until: wall-clock seconds before which no call enters (a Retry-After), 0 = none.
        decreases: how many times it was halved (shown by `agentport quota`).
    """

    window: int
    maximum: int
    epoch: int = 0
    streak: int = 0
    until: float = 0.0
    decreases: int = 0

    def __post_init__(self) -> None:
        if self.maximum < 1 or not 1 <= self.window <= self.maximum:
            raise ValueError(
                f"concurrency window {self.window} must be within [1, maximum={self.maximum}]"
            )

    @classmethod
    def start(cls, initial: int, maximum: int) -> WindowState:
        """A fresh window at *initial* (clamped into [1, maximum])."""
        top = max(1, maximum)
        return cls(min(max(1, initial), top), top)


def admits(state: WindowState, in_flight: int, now: float) -> bool:
    """Whether one more call may enter: fewer than `window` in flight and no cooldown."""
    return in_flight < state.window and now >= state.until


def settle(
    state: WindowState,
    outcome: Outcome,
    entered_epoch: int,
    retry_after: float | None = None,
    now: float = 0.0,
) -> WindowState:
    """The window after a call that entered in *entered_epoch* ended with *outcome*
    (module docstring). *retry_after* (seconds, a pressure answer's) extends the cooldown
    to `now + min(retry_after, MAX_COOLDOWN_S)`."""
    if outcome is Outcome.quota:
        return state
    current = entered_epoch == state.epoch
    if outcome is Outcome.success:
        if not current:
            return state
        streak = state.streak + 1
        if streak < GROW_AFTER:
            return replace(state, streak=streak)
        return replace(state, window=min(state.maximum, state.window + 1), streak=0)
    if outcome is Outcome.neutral:
        return replace(state, streak=0) if current else state
    if not current:  # the decrease already answered its burst, Retry-After included
        return state
    until = state.until
    if retry_after is not None and retry_after > 0:
        until = max(until, now + min(retry_after, MAX_COOLDOWN_S))
    return WindowState(
        window=max(1, state.window // 2),
        maximum=state.maximum,
        epoch=state.epoch + 1,
        streak=0,
        until=until,
        decreases=state.decreases + 1,
    )
