"""The one retry policy: what is retried, how long it waits, and what is never retried."""

from __future__ import annotations

import random

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from agentport import ErrorKind, Message, ProviderError
from agentport.policies import RetryingAdapter, RetryPolicy, with_retry
from agentport.testing import ScriptedAdapter


class _Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def _script(*results: Result[str, ProviderError]):  # type: ignore[no-untyped-def]
    queue = list(results)
    calls = []

    async def call() -> Result[str, ProviderError]:
        calls.append(1)
        return queue.pop(0)

    return call, calls


@pytest.mark.anyio
async def test_retries_retryable_failures_until_success() -> None:
    sleeps = _Sleeps()
    call, calls = _script(
        Failure(ProviderError(ErrorKind.server_error, "x")),
        Failure(ProviderError(ErrorKind.network, "x")),
        Success("ok"),
    )
    result = await with_retry(call, RetryPolicy(attempts=3), sleep=sleeps)
    assert result == Success("ok")
    assert len(calls) == 3
    assert len(sleeps.delays) == 2


@pytest.mark.anyio
async def test_non_retryable_failure_is_returned_at_once() -> None:
    sleeps = _Sleeps()
    error = ProviderError(ErrorKind.auth_required, "no key")
    call, calls = _script(Failure(error), Success("never"))
    result = await with_retry(call, RetryPolicy(attempts=5), sleep=sleeps)
    assert result.failure() is error
    assert len(calls) == 1
    assert sleeps.delays == []


@pytest.mark.anyio
async def test_gives_up_after_the_configured_attempts() -> None:
    sleeps = _Sleeps()
    failures = [Failure(ProviderError(ErrorKind.rate_limited, f"{i}")) for i in range(5)]
    call, calls = _script(*failures)
    result = await with_retry(call, RetryPolicy(attempts=3), sleep=sleeps)
    assert isinstance(result, Failure)
    assert result.failure().message == "2"
    assert len(calls) == 3


@pytest.mark.anyio
async def test_retry_after_is_honoured_and_capped() -> None:
    sleeps = _Sleeps()
    call, _ = _script(
        Failure(ProviderError(ErrorKind.rate_limited, "x", retry_after=7)),
        Failure(ProviderError(ErrorKind.rate_limited, "x", retry_after=999)),
        Success("ok"),
    )
    await with_retry(call, RetryPolicy(attempts=3, max_delay_s=30), sleep=sleeps)
    assert sleeps.delays == [7, 30]


@given(st.integers(min_value=0, max_value=20), st.integers(min_value=0, max_value=2**32))
def test_backoff_is_bounded_by_exponential_cap(attempt: int, seed: int) -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=10)
    delay = policy.delay(attempt, ProviderError(ErrorKind.network, "x"), random.Random(seed))
    assert 0 <= delay <= min(10, 0.5 * 2**attempt)


@pytest.mark.anyio
async def test_cancellation_is_never_retried() -> None:
    sleeps = _Sleeps()
    calls = []

    async def call() -> Result[str, ProviderError]:
        calls.append(1)
        await anyio.sleep(10)
        return Success("late")

    with anyio.move_on_after(0.05) as scope:
        await with_retry(call, RetryPolicy(attempts=5), sleep=sleeps)
    assert scope.cancelled_caught
    assert len(calls) == 1
    assert sleeps.delays == []


@pytest.mark.anyio
async def test_retrying_adapter_wraps_any_adapter() -> None:
    inner = ScriptedAdapter().add(
        ProviderError(ErrorKind.rate_limited, "busy", retry_after=0), "done"
    )
    adapter = RetryingAdapter(inner, RetryPolicy(attempts=2))
    result = await adapter.complete([Message.user("q")])
    assert result.unwrap().content == "done"
    assert len(inner.calls) == 2
    assert adapter.backend == "scripted"


def test_the_old_retry_module_is_gone() -> None:
    """`agentport.retry` was a shim over `agentport.policies`: removed, one home per name."""
    with pytest.raises(ModuleNotFoundError):
        __import__("agentport.retry")
