"""The one retry policy, applied outside adapters (`RetryingAdapter` wraps any `LLMAdapter`).

Retries only failures whose `ProviderError.retryable` is true, waits
`min(max_delay, base * 2**n)` with full jitter, or `retry_after` when the backend gave one
(capped by `max_delay_s`). Cancellation is never caught, so never retried.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import anyio
from returns.result import Failure, Result

from .core import CompletionConfig, CompletionResponse, LLMAdapter, Message, ProviderError

__all__ = ["RetryPolicy", "RetryingAdapter", "with_retry"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """attempts: total tries (1 = no retry); delays in seconds."""

    attempts: int = 3
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    jitter: bool = True

    def delay(self, attempt: int, error: ProviderError, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed *attempt* (0-based)."""
        if error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_delay_s)
        cap = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        return (rng or random).uniform(0, cap) if self.jitter else cap


async def with_retry(
    call: Callable[[], Awaitable[Result[T, ProviderError]]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
) -> Result[T, ProviderError]:
    """Run *call* until it succeeds, fails non-retryably, or attempts run out."""
    result = await call()
    for attempt in range(policy.attempts - 1):
        if not isinstance(result, Failure):
            return result
        error = result.failure()
        if not error.retryable:
            return result
        await sleep(policy.delay(attempt, error))
        result = await call()
    return result


class RetryingAdapter:
    """An `LLMAdapter` that applies a `RetryPolicy` around another adapter."""

    def __init__(self, inner: LLMAdapter, policy: RetryPolicy) -> None:
        self.inner = inner
        self.policy = policy

    @property
    def backend(self) -> str:
        return self.inner.backend

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        return await with_retry(lambda: self.inner.complete(messages, config), self.policy)
