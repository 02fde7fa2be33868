"""The one retry policy, inside one whole-call deadline (`RetryingAdapter` wraps any adapter).

Retries only failures whose `ProviderError.retryable` is true, waits
`min(max_delay, base * 2**n)` with full jitter, or `retry_after` when the backend gave one
(capped by `max_delay_s`). Cancellation is never caught, so never retried.

An exhausted usage window (`quota_exhausted`) is retried only when its `retry_at` comes before
the deadline, and then not before `retry_at`.

The deadline: `CompletionConfig.total_timeout_s` bounds the whole call; it is the call plan's
`Deadline` (`agentport.core.plan_call`, made once at the top of the stack). Each attempt is handed a
plan of its own (`CallPlan.for_attempt`): the earlier of that deadline and `attempt_timeout_s`, its
config's `total_timeout_s` the seconds left, so a backend's own limit (the process runner's, the
HTTP read loop's) fires first and classifies the failure; a backend that does not stop in time is
cancelled `DEADLINE_SLACK_S` later. A back-off that would end past the deadline is not slept: the
call ends at once in `Failure(timeout, timeout="total")`. Retrying lives here, above the backends,
never inside one: a backend only says what its output means (its error kind), this layer decides
what to do about it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

import anyio
from returns.result import Failure, Result, Success

from ..core import (
    Attempt,
    BackendCapability,
    CallPlan,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    Deadline,
    ErrorKind,
    LLMAdapter,
    Message,
    ProviderError,
    RunawayGuard,
    TimeoutWhich,
    Usage,
    aclose_adapter,
    input_digest,
    plan_call,
    planned,
    usage_of,
    with_usage,
)
from ._concurrency import ConcurrencyGate, Slot
from ._cooldown import CooldownStore, cooling_error, note_exhausted
from ._headroom import note_headroom
from ._receipt import billed_result, receipt
from ._tracing import call_span, record

__all__ = ["DEADLINE_SLACK_S", "RetryPolicy", "RetryingAdapter", "with_retry"]

T = TypeVar("T")

# How long past its bound an attempt may run before it is cancelled: room for the runner's
# own timeout to fire, kill the process group and report what it saw.
DEADLINE_SLACK_S = 1.0
_CLOCK_SLOP_S = 0.01  # timers of the inner layers fire at their bound, give or take this


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


def _until_reset(error: ProviderError) -> float | None:
    """Seconds until an exhausted window resets (`quota_exhausted` with `retry_at`), else
    None: such a failure is never retried before its reset."""
    if error.kind is not ErrorKind.quota_exhausted or error.retry_at is None:
        return None
    return max((error.retry_at - datetime.now(UTC)).total_seconds(), 0.0)


async def with_retry(
    call: Callable[[], Awaitable[Result[T, ProviderError]]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
) -> Result[T, ProviderError]:
    """Run *call* until it succeeds, fails non-retryably, or attempts run out (no deadline:
    bound it yourself; `RetryingAdapter` does for adapters)."""
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


class RetryingAdapter(ClosableAdapter):
    """An `LLMAdapter` that applies a `RetryPolicy` around another adapter, within the call's
    deadline.

    Per call: the call plan (`plan_call`: the config merged over *defaults*, the configured
    settings, unless a layer above made the plan already); `total_timeout_s` is the whole call's
    deadline and `attempt_timeout_s` one attempt's bound (module docstring). A failure carries
    `attempts` (one `Attempt` per try); a deadline reached ends in `ProviderError(timeout,
    timeout="total", retryable=False)` naming the last failure; a success's `duration_s` covers the
    whole call. Usage covers every attempt: a success's adds the failed attempts' (those that
    reported any), a failure's is the sum of all of them; `request_sent` is the whole call's.

    *hand_over*: error kinds that end the call at once, with no retry and no wait (a failover
    chain's member before the last: its rate limit, exhausted window, outage or missing
    install moves the chain to the next member instead of sleeping on this one's
    Retry-After; the attempt history still records it).

    *concurrency*: the backend's shared adaptive window (`ConcurrencyGate`): each attempt
    waits for room in it (within the deadline) and its outcome moves it.
    *runaway*: a `RunawayGuard` kept across calls (the factory gives each adapter one): a
    call whose input already failed the same way `bound` times in a row on this backend,
    counting every attempt, is refused as `ErrorKind.runaway` before it is sent
    (`core._runaway`).
    """

    def __init__(
        self,
        inner: LLMAdapter,
        policy: RetryPolicy | None = None,
        *,
        defaults: CompletionConfig | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        cooldown: CooldownStore | None = None,
        capability: BackendCapability | None = None,
        hand_over: frozenset[ErrorKind] = frozenset(),
        concurrency: ConcurrencyGate | None = None,
        runaway: RunawayGuard | None = None,
    ) -> None:
        self.runaway = runaway  # stops a loop repeating one failure (core._runaway), or None
        self.inner = inner
        self.concurrency = concurrency  # the backend's shared adaptive window, or None
        self.hand_over = hand_over
        self.policy = policy or RetryPolicy()
        self.defaults = defaults or CompletionConfig()
        self._sleep = sleep
        self.cooldown = cooldown  # the shared cooldown store, or None
        self.capability = capability  # for the per-call receipt, or None

    @property
    def backend(self) -> str:
        return self.inner.backend

    async def aclose(self) -> None:
        """Close what the wrapped adapter keeps between calls (its warm processes)."""
        await aclose_adapter(self.inner)

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        plan = plan_call(messages, config, self.defaults)  # the call's one merge and deadline
        merged = plan.config
        failed: list[ProviderError] = []  # every failed attempt: how far the call got
        digest = "" if self.runaway is None else input_digest(messages, merged.model)
        with call_span(self.backend, merged) as current:
            stop = None if self.runaway is None else self.runaway.refusal(
                digest, self.backend, merged.label
            )  # fmt: skip
            if stop is not None:
                result: Result[CompletionResponse, ProviderError] = Failure(stop)
            else:
                result = self._total(await self._attempts(plan, failed), failed)
                if self.runaway is not None:
                    error = result.failure() if isinstance(result, Failure) else None
                    self.runaway.observe(digest, self.backend, error)
            result = billed_result(self.capability, result)  # route and cost state set
            record(current, result)
        return result

    @staticmethod
    def _total(
        result: Result[CompletionResponse, ProviderError], failed: list[ProviderError]
    ) -> Result[CompletionResponse, ProviderError]:
        """*result* with the usage and `request_sent` of every failed attempt before it."""
        spent = sum((e.usage for e in failed), Usage())  # the failed attempts' requests
        if isinstance(result, Success):
            return with_usage(result, spent + usage_of(result)) if failed else result
        error = result.failure().reached_by([*failed, result.failure()])
        # the last error is one of `failed` (or a deadline / cooldown that spent nothing)
        return Failure(error.replace(usage=spent) if failed else error)

    async def _attempts(
        self, plan: CallPlan, failed: list[ProviderError]
    ) -> Result[CompletionResponse, ProviderError]:
        messages, config, deadline = plan.messages, plan.config, plan.deadline
        started = time.monotonic()
        attempts: list[Attempt] = []
        last: ProviderError | None = None  # the last failure that was not the deadline
        while True:
            if deadline.reached():
                return Failure(self._expired(deadline, attempts, last))
            if self.cooldown is not None:  # a backend whose window is exhausted is not called
                cooling = await cooling_error(self.cooldown, self.backend)
                if cooling is not None:
                    return Failure(cooling.replace(attempts=tuple(attempts)))
            async with AsyncExitStack() as stack:
                slot: Slot | None = None
                if self.concurrency is not None:  # room in the shared window, by the deadline
                    with anyio.move_on_after(deadline.remaining()):
                        slot = await stack.enter_async_context(self.concurrency.slot())
                    if slot is None or deadline.reached():
                        return Failure(self._queued(deadline, attempts, last))
                # the attempt's bound starts once it may run: the deadline, or its own limit
                began = time.monotonic()
                attempt = plan.for_attempt(began)
                bound = attempt.deadline
                result = await self._attempt(attempt)
                elapsed = time.monotonic() - began
                if slot is not None:
                    slot.settle(result)
            if self.cooldown is not None:  # the usage windows the response reported
                await note_headroom(self.cooldown.path.parent, self.backend, result)
            if isinstance(result, Success):
                response = result.unwrap()
                update: dict[str, object] = {"duration_s": time.monotonic() - started}
                if self.capability is not None and not response.receipt:
                    update["receipt"] = receipt(self.capability, messages, config)
                return Success(response.model_copy(update=update))
            error = result.failure()
            if self.cooldown is not None:
                await note_exhausted(self.cooldown, error, self.backend)
            # the backend's own "whole call" limit is the bound it was handed: the call's
            # deadline ("total", final) or this attempt's ("attempt", retryable); a "total"
            # timeout well before that bound is the backend's own limit, not the deadline
            if error.kind is ErrorKind.timeout and error.timeout == "total":
                if bound.reached(slop=_CLOCK_SLOP_S):
                    which: TimeoutWhich = bound.limit if bound.limit == "attempt" else "total"
                    error = error.replace(timeout=which, retryable=which != "total")
                else:
                    error = error.replace(retryable=True)
            attempts.append(
                Attempt(
                    error.kind, elapsed, error.exit_code, error.backend or self.backend,
                    error.timeout,
                )
            )  # fmt: skip
            failed.append(error)
            if error.kind in self.hand_over:  # another backend of the chain answers instead
                return Failure(error.replace(attempts=tuple(attempts)))
            cut = error.kind is ErrorKind.timeout and error.timeout == "total"
            if (cut or error.retryable) and deadline.reached(slop=_CLOCK_SLOP_S):
                return Failure(self._expired(deadline, attempts, (last or error) if cut else error))
            last = error
            # an exhausted window is retried only when it resets before the deadline
            until_reset = _until_reset(error)
            retryable = error.retryable or (
                until_reset is not None and until_reset < deadline.remaining()
            )
            if not retryable or len(attempts) >= self.policy.attempts:
                return Failure(error.replace(attempts=tuple(attempts)))
            delay = self.policy.delay(len(attempts) - 1, error)
            if until_reset is not None:
                delay = until_reset
            if delay >= deadline.remaining():
                return Failure(self._expired(deadline, attempts, error, waiting_s=delay))
            await self._sleep(delay)

    async def _attempt(self, plan: CallPlan) -> Result[CompletionResponse, ProviderError]:
        """One attempt, handed *plan* (bounded by its deadline: the call's, or the
        attempt's own), cancelled `DEADLINE_SLACK_S` after it when the backend does not
        stop itself."""
        bound = plan.deadline
        with anyio.move_on_after(bound.remaining() + DEADLINE_SLACK_S) as backstop, planned(plan):
            result = await self.inner.complete(plan.messages, plan.config)
        if backstop.cancelled_caught:
            return Failure(
                ProviderError(
                    ErrorKind.timeout,
                    f"no answer within {plan.config.total_timeout_s:g}s and the backend did "
                    "not stop itself",
                    backend=self.backend,
                    timeout="total" if bound.limit != "attempt" else "attempt",
                )
            )
        return result

    def _queued(
        self, deadline: Deadline, attempts: list[Attempt], last: ProviderError | None
    ) -> ProviderError:
        """The deadline passed while the attempt waited for room in the concurrency window."""
        error = self._expired(deadline, attempts, last)
        key = self.concurrency.key if self.concurrency is not None else self.backend
        return error.replace(
            message=f"{error.message}, waiting for room in the concurrency window of {key}",
            details={**error.details, "concurrency_wait": True},
        )

    def _expired(
        self,
        deadline: Deadline,
        attempts: list[Attempt],
        last: ProviderError | None,
        waiting_s: float | None = None,
    ) -> ProviderError:
        count = f"{len(attempts)} attempt{'s' if len(attempts) != 1 else ''}"
        if waiting_s is None:
            what = f"reached after {count}"
        else:
            what = f"would pass during the {waiting_s:.3g}s back-off after {count}"
        message = f"the call's deadline ({deadline.words()}) {what}"
        if last is None:
            return ProviderError(
                ErrorKind.timeout, message, backend=self.backend, retryable=False,
                timeout="total", attempts=attempts, request_sent=None if attempts else False,
            )  # fmt: skip
        if not (last.kind is ErrorKind.timeout and last.timeout == "total"):
            message += f"; last failure: {last.kind.value}: {last.message}"
        return ProviderError(
            ErrorKind.timeout,
            message,
            backend=last.backend or self.backend,
            retryable=False,
            retry_after=last.retry_after,
            timeout="total",
            exit_code=last.exit_code,
            status=last.status,
            stderr_tail=last.stderr_tail,
            raw_text=last.raw_text,
            details={**last.details, "last_kind": last.kind.value},
            attempts=attempts,
        )
