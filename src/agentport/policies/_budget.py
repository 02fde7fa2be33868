"""A budget over an adapter: no new call once a ceiling is reached.

`BudgetAdapter(inner, Budget(calls=..., input_tokens=..., output_tokens=..., cost_usd=...,
deadline_s=...))` counts what the calls through it spend (a call is counted when it starts;
tokens and cost from each successful response's `usage`, cost only where the backend reports
it) and refuses a new call once any ceiling is reached: `Failure(ErrorKind.budget_exhausted)`,
not retryable, with `details["budget"]` (the ceilings) and `details["spent"]`. Calls already
running finish; each is bounded by the time left of `deadline_s` (its `total_timeout_s` is
lowered to it, and a call still running at the deadline is cancelled); a call ended by the
deadline is `budget_exhausted` too (`details["cut"]`). Token and cost ceilings are checked
before a call, so calls running together may pass them by what they spend; the call ceiling
is never passed. A workflow that catches `budget_exhausted` ends with what it has finished
(a partial result: `run_research(budget=...)`, `run_loop(budget=...)`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import anyio
from returns.result import Failure, Result, Success

from ..core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    LLMAdapter,
    Message,
    ProviderError,
    Usage,
    merge_config,
)

__all__ = ["Budget", "BudgetAdapter"]


@dataclass(frozen=True, slots=True)
class Budget:
    """Ceilings; None = no ceiling. `deadline_s` is wall-clock seconds from the adapter's
    first call. Raises `ValueError` naming the field for a zero or negative ceiling."""

    calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    deadline_s: float | None = None

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise ValueError(f"budget.{name} must be > 0 (got {value!r})")


class BudgetAdapter:
    """An `LLMAdapter` that stops making calls at the first ceiling of its `Budget`."""

    def __init__(
        self,
        inner: LLMAdapter,
        budget: Budget,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.budget = budget
        self.calls = 0
        self.spent = Usage()
        self._clock = clock
        self._started: float | None = None

    @property
    def backend(self) -> str:
        return self.inner.backend

    def reached(self) -> str | None:
        """Which ceiling is reached, as "calls 10/10", or None."""
        b, s = self.budget, self.spent
        checks: list[tuple[str, float | None, float]] = [
            ("calls", b.calls, self.calls),
            ("input_tokens", b.input_tokens, s.input_tokens),
            ("output_tokens", b.output_tokens, s.output_tokens),
            ("cost_usd", b.cost_usd, s.cost_usd or 0.0),
        ]
        if b.deadline_s is not None and self._started is not None:
            checks.append(("deadline_s", b.deadline_s, self._clock() - self._started))
        for name, ceiling, used in checks:
            if ceiling is not None and used >= ceiling:
                shown = f"{used:.3g}" if name == "deadline_s" else f"{used:g}"
                return f"{name} {shown}/{ceiling:g}"
        return None

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        if self._started is None:
            self._started = self._clock()
        why = self.reached()
        if why is not None:
            return Failure(
                ProviderError(
                    ErrorKind.budget_exhausted,
                    f"budget reached ({why}): no new call",
                    backend=self.backend,
                    retryable=False,
                    details={
                        "budget": {k: v for k, v in asdict(self.budget).items() if v is not None},
                        "spent": {"calls": self.calls, **self.spent.model_dump()},
                    },
                )
            )
        self.calls += 1  # counted at the start: calls running together never pass it
        if self.budget.deadline_s is not None:
            left = self.budget.deadline_s - (self._clock() - self._started)
            # the configured deadline of the adapter below counts as set (merge_config)
            base = merge_config(config, getattr(self.inner, "defaults", CompletionConfig()))
            if left < base.total_timeout_s:
                config = base.model_copy(update={"total_timeout_s": max(left, 0.001)})
        if self.budget.deadline_s is None:
            result = await self.inner.complete(messages, config)
        else:
            # an adapter that overruns its total_timeout_s is cancelled at the deadline
            left = self.budget.deadline_s - (self._clock() - self._started)
            outcome: Result[CompletionResponse, ProviderError] | None = None
            with anyio.move_on_after(max(left, 0.0)):
                outcome = await self.inner.complete(messages, config)
            result = outcome if outcome is not None else self._cut("cancelled")
            late = self._clock() - self._started >= self.budget.deadline_s
            if late and isinstance(result, Failure) and result.failure().kind is ErrorKind.timeout:
                result = self._cut("timed out")
        if isinstance(result, Success):
            self.spent = self.spent + result.unwrap().usage
        return result

    def _cut(self, how: str) -> Result[CompletionResponse, ProviderError]:
        """A running call ended by the wall-clock ceiling."""
        return Failure(
            ProviderError(
                ErrorKind.budget_exhausted,
                f"budget reached (deadline_s {self.budget.deadline_s:g}): call {how} at the "
                "deadline",
                backend=self.backend,
                retryable=False,
                details={"budget": {"deadline_s": self.budget.deadline_s}, "cut": True},
            )
        )
