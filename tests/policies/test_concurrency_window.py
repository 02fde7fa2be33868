"""The adaptive concurrency window's pure core: it stays in [1, maximum] whatever happens; a
decrease is never undone by successes of calls that were in flight before it; an exhausted
quota never moves it; a pressure answer's Retry-After pauses the next entrance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentport.core import ErrorKind, ProviderError
from agentport.policies import Outcome, WindowState, outcome_of, settle
from agentport.policies._window import GROW_AFTER, MAX_COOLDOWN_S, admits

# one event: (outcome, how many epochs back the call entered, retry_after)
events = st.lists(
    st.tuples(
        st.sampled_from(list(Outcome)),
        st.integers(min_value=0, max_value=3),
        st.none() | st.floats(min_value=0, max_value=1e6, allow_nan=False),
    ),
    max_size=80,
)
starts = st.builds(WindowState.start, st.integers(min_value=-5, max_value=80), st.integers(-2, 64))


def _run(state: WindowState, seq: list[tuple[Outcome, int, float | None]]) -> WindowState:
    for i, (outcome, back, retry_after) in enumerate(seq):
        state = settle(state, outcome, state.epoch - back, retry_after, now=float(i))
    return state


@settings(max_examples=300)
@given(starts, events)
def test_the_window_stays_within_one_and_its_maximum(
    start: WindowState, seq: list[tuple[Outcome, int, float | None]]
) -> None:
    state = start
    for i, (outcome, back, retry_after) in enumerate(seq):
        state = settle(state, outcome, state.epoch - back, retry_after, now=float(i))
        assert 1 <= state.window <= state.maximum == start.maximum


@settings(max_examples=300)
@given(starts, events, st.integers(min_value=1, max_value=50))
def test_a_decrease_is_never_undone_by_calls_that_were_already_in_flight(
    start: WindowState, before: list[tuple[Outcome, int, float | None]], successes: int
) -> None:
    state = _run(start, before)
    entered = state.epoch  # these calls entered now ...
    decreased = settle(state, Outcome.pressure, entered, None, now=0.0)  # ... one was refused
    assert decreased.window == max(1, state.window // 2)
    assert decreased.epoch == state.epoch + 1
    after = decreased
    for _ in range(successes):  # the others answer afterwards
        after = settle(after, Outcome.success, entered, None, now=0.0)
    assert after == decreased
    # nor does a refusal of the same burst halve it again
    again = settle(decreased, Outcome.pressure, entered, None, now=0.0)
    assert again.window == decreased.window
    assert again.epoch == decreased.epoch


@settings(max_examples=300)
@given(starts, events, st.integers(0, 3), st.none() | st.floats(0, 1e6, allow_nan=False))
def test_an_exhausted_quota_never_changes_the_window(
    start: WindowState,
    before: list[tuple[Outcome, int, float | None]],
    back: int,
    retry_after: float | None,
) -> None:
    state = _run(start, before)
    assert settle(state, Outcome.quota, state.epoch - back, retry_after, now=5.0) == state


def test_three_successes_in_the_current_epoch_grow_the_window_by_one() -> None:
    state = WindowState.start(2, 3)
    for _ in range(GROW_AFTER - 1):
        state = settle(state, Outcome.success, state.epoch)
        assert state.window == 2
    state = settle(state, Outcome.success, state.epoch)
    assert (state.window, state.streak) == (3, 0)
    for _ in range(GROW_AFTER * 3):
        state = settle(state, Outcome.success, state.epoch)
    assert state.window == 3  # its maximum


def test_another_failure_breaks_a_run_of_successes() -> None:
    state = WindowState.start(2, 8)
    state = settle(state, Outcome.success, 0)
    state = settle(state, Outcome.success, 0)
    state = settle(state, Outcome.neutral, 0)
    state = settle(state, Outcome.success, 0)
    assert (state.window, state.streak) == (2, 1)


def test_retry_after_pauses_the_next_entrance_and_is_capped() -> None:
    state = WindowState.start(4, 8)
    paused = settle(state, Outcome.pressure, 0, retry_after=2.0, now=100.0)
    assert paused.until == 102.0
    assert not admits(paused, 0, 101.9)
    assert admits(paused, 1, 102.0)
    assert not admits(paused, 2, 102.0)
    # a refusal of a call that entered before the decrease neither halves nor pauses again
    assert settle(paused, Outcome.pressure, 0, retry_after=5.0, now=100.0) == paused
    huge = settle(state, Outcome.pressure, 0, retry_after=1e9, now=0.0)
    assert huge.until == MAX_COOLDOWN_S


def _error(kind: ErrorKind, **fields: object) -> ProviderError:
    return ProviderError(kind, "x", backend="b", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (None, Outcome.success),
        (_error(ErrorKind.rate_limited, retry_after=1.0), Outcome.pressure),
        (_error(ErrorKind.overloaded), Outcome.pressure),
        # a 429 whose text says the quota is spent is classified not retryable
        (_error(ErrorKind.rate_limited, retryable=False), Outcome.quota),
        (
            _error(
                ErrorKind.quota_exhausted,
                retry_at=datetime.now(UTC) + timedelta(hours=1),
                window="session",
            ),
            Outcome.quota,
        ),
        (_error(ErrorKind.timeout), Outcome.neutral),
        (_error(ErrorKind.server_error), Outcome.neutral),
        (_error(ErrorKind.invalid_request), Outcome.neutral),
    ],
)
def test_outcome_of_keeps_quota_apart_from_pressure(
    error: ProviderError | None, outcome: Outcome
) -> None:
    assert outcome_of(error) is outcome


def test_a_window_outside_its_bounds_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="concurrency window 0"):
        WindowState(0, 4)
    assert WindowState.start(0, 0) == WindowState(1, 1)
    assert WindowState.start(9, 4).window == 4
