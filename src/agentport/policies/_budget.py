"""A budget over an adapter: no new call once a ceiling is reached.

`BudgetAdapter(inner, Budget(calls=..., input_tokens=..., output_tokens=..., cost_usd=...,
deadline_s=...))` counts what the calls through it spend (a call is counted when it starts;
tokens and cost from the `usage` of each answer AND each failure, which cover every request
the call made: re-asks, retried attempts, failover members; cost only where the backend
reports it) and refuses a new call once any ceiling is reached, or would be by the next
call: `Failure(ErrorKind.budget_exhausted)`, not retryable, with `details["budget"]` (the
ceilings), `details["spent"]` and `details["limit"]` (the ceiling hit: `BudgetLimit.of(error)`
reads it back typed). The next call is estimated at the mean a finished call
spent so far, once for it and once for each call still running; so a run of like calls stops
before it crosses a token or cost ceiling, not after (one call far above the mean can still
pass it, and so can calls that start together before any has finished: no estimate yet).
Calls already running finish; each is bounded by the time left of `deadline_s` (its
`total_timeout_s` is lowered to it, and a call still running at the deadline is cancelled);
a call ended by the deadline is `budget_exhausted` too (`details["cut"]`). The call ceiling
is never passed. A workflow that catches `budget_exhausted` ends with what it
has finished (a partial result: `run_research(budget=...)`, `run_loop(budget=...)`).

A money ceiling does not pretend a precision it lacks: once a call came back without a price
(`Usage.cost_state` not `priced`: a CLI that reports tokens only, an endpoint without a price
table) the money spent is a lower bound. *on_unpriced* decides, like `on_ignored` does for
parameters: `warn` (default) keeps going, says so in the answer's warnings and writes
"lower bound" in the ceiling's reason; `fail` refuses the next call (`budget_exhausted`,
`details["unpriced"]`). `details["spent"]` carries `cost_state` either way.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Literal

import anyio
from returns.result import Failure, Result, Success

from ..core import (
    CallPlan,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    CostState,
    Deadline,
    ErrorKind,
    LLMAdapter,
    Message,
    ProviderError,
    Usage,
    aclose_adapter,
    plan_call,
    planned,
    usage_of,
)
from ._budget_limit import DETAILS_KEY, BudgetLimit, BudgetLimitName

_LOWER_BOUND = frozenset({CostState.lower_bound, CostState.unpriced})

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


class BudgetAdapter(ClosableAdapter):
    """An `LLMAdapter` that stops making calls at the first ceiling of its `Budget`."""

    def __init__(
        self,
        inner: LLMAdapter,
        budget: Budget,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_unpriced: Literal["warn", "fail"] = "warn",
    ) -> None:
        if on_unpriced not in ("warn", "fail"):
            raise ValueError(f"on_unpriced must be 'warn' or 'fail' (got {on_unpriced!r})")
        self.on_unpriced = on_unpriced
        self.inner = inner
        self.budget = budget
        self.calls = 0
        self.spent = Usage()
        self.finished = 0  # calls whose usage is in `spent`
        self.running = 0
        self._clock = clock
        self._started: float | None = None

    @property
    def backend(self) -> str:
        return self.inner.backend

    async def aclose(self) -> None:
        """Close what the wrapped adapter keeps between calls (its warm processes)."""
        await aclose_adapter(self.inner)

    def reached(self) -> str | None:
        """Which ceiling is reached, as "calls 10/10", or would be by the next call, as
        "output_tokens 400/500, next call ~200" (module docstring); None when there is room.
        The short form of `reached_limit`."""
        limit = self.reached_limit()
        return None if limit is None else str(limit)

    def reached_limit(self) -> BudgetLimit | None:
        """The ceiling that is reached, or would be by the next call; None when there is
        room."""
        b, s = self.budget, self.spent
        share = self.running + 1  # the next call and those still running, at the mean
        mean = (lambda total: total / self.finished) if self.finished else (lambda _: 0.0)
        checks: list[tuple[BudgetLimitName, float | None, float, float]] = [
            ("calls", b.calls, self.calls, 0.0),
            ("input_tokens", b.input_tokens, s.input_tokens, mean(s.input_tokens)),
            ("output_tokens", b.output_tokens, s.output_tokens, mean(s.output_tokens)),
            ("cost_usd", b.cost_usd, s.cost_usd or 0.0, mean(s.cost_usd or 0.0)),
        ]
        if b.deadline_s is not None and self._started is not None:
            checks.append(("deadline_s", b.deadline_s, self._clock() - self._started, 0.0))
        for name, ceiling, used, next_call in checks:
            if ceiling is None:
                continue
            if name == "cost_usd" and self.unpriced:  # a call had no price: a lower bound
                if self.on_unpriced == "fail":
                    return BudgetLimit(name=name, ceiling=ceiling, used=used, no_price=True)
                if used >= ceiling:
                    return BudgetLimit(name=name, ceiling=ceiling, used=used, lower_bound=True)
                if used + share * next_call > ceiling:
                    return BudgetLimit(
                        name=name, ceiling=ceiling, used=used, next_call=next_call,
                        lower_bound=True,
                    )  # fmt: skip
                continue
            if used >= ceiling:
                return BudgetLimit(name=name, ceiling=ceiling, used=used)
            if used + share * next_call > ceiling:
                return BudgetLimit(name=name, ceiling=ceiling, used=used, next_call=next_call)
        return None

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        if self._started is None:
            self._started = self._clock()
        limit = self.reached_limit()
        if limit is not None:
            return Failure(
                ProviderError(
                    ErrorKind.budget_exhausted,
                    f"budget reached ({limit}): no new call",
                    backend=self.backend,
                    retryable=False,
                    details={
                        "budget": {k: v for k, v in asdict(self.budget).items() if v is not None},
                        "spent": {"calls": self.calls, **self.spent.model_dump(mode="json")},
                        DETAILS_KEY: limit.model_dump(),
                    }
                    | ({"unpriced": True} if self.unpriced and self.budget.cost_usd else {}),
                )
            )
        self.calls += 1  # counted at the start: calls running together never pass it
        plan: CallPlan | None = None
        if self.budget.deadline_s is not None:
            left = self.budget.deadline_s - (self._clock() - self._started)
            # the configured deadline of the adapter below counts as set: the call's plan
            # (its one merge) is made here and handed down, bounded by what is left
            plan = plan_call(messages, config, getattr(self.inner, "defaults", CompletionConfig()))
            if left < plan.config.total_timeout_s:
                plan = plan.within(Deadline.after(max(left, 0.001)))
            config = plan.config
        self.running += 1
        try:
            with nullcontext() if plan is None else planned(plan):
                result = await self._call(messages, config)
        finally:
            self.running -= 1
        self.finished += 1
        self.spent = self.spent + usage_of(result)
        unpriced = usage_of(result).cost_state in _LOWER_BOUND
        if self.budget.cost_usd is not None and isinstance(result, Success) and unpriced:
            note = (
                f"budget usd={self.budget.cost_usd:g}: this call had no price; the "
                f"${self.spent.cost_usd or 0.0:g} counted is a lower bound"
            )
            response = result.unwrap()
            result = Success(response.model_copy(update={"warnings": (*response.warnings, note)}))
        return result

    @property
    def unpriced(self) -> bool:
        """Whether the money counted so far is only a lower bound (a call had no price)."""
        return self.spent.cost_state in _LOWER_BOUND

    async def _call(
        self, messages: Sequence[Message], config: CompletionConfig | None
    ) -> Result[CompletionResponse, ProviderError]:
        assert self._started is not None
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
        return result

    def _cut(self, how: str) -> Result[CompletionResponse, ProviderError]:
        """A running call ended by the wall-clock ceiling."""
        assert self.budget.deadline_s is not None
        limit = BudgetLimit(name="deadline_s", ceiling=self.budget.deadline_s)
        return Failure(
            ProviderError(
                ErrorKind.budget_exhausted,
                f"budget reached ({limit}): call {how} at the deadline",
                backend=self.backend,
                retryable=False,
                details={
                    "budget": {"deadline_s": self.budget.deadline_s},
                    "cut": True,
                    DETAILS_KEY: limit.model_dump(),
                },
            )
        )
