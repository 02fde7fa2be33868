"""A budget ends in a typed failure, never in more calls: the call ceiling is never passed,
even by calls running together; token, cost and wall-clock ceilings stop new calls; bad
ceilings are one-line errors naming the field."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from returns.result import Failure, Result, Success

from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    Usage,
    as_messages,
)
from agentport.policies import Budget, BudgetAdapter

pytestmark = pytest.mark.anyio


class _Spender:
    backend = "fake"

    def __init__(self) -> None:
        self.calls = 0
        self.usage = Usage(input_tokens=10, output_tokens=5, cost_usd=0.01)
        self.configs: list[CompletionConfig | None] = []

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        self.calls += 1
        self.configs.append(config)
        await anyio.sleep(0.01)
        return Success(CompletionResponse(content="ok", backend=self.backend, usage=self.usage))


async def test_no_call_past_the_call_ceiling_even_when_calls_run_together() -> None:
    inner = _Spender()
    llm = BudgetAdapter(inner, Budget(calls=5))
    results: list[Result[CompletionResponse, ProviderError]] = []

    async def one() -> None:
        results.append(await llm.complete(as_messages("hi")))

    async with anyio.create_task_group() as tg:
        for _ in range(12):
            tg.start_soon(one)
    assert inner.calls == 5
    refused = [r.failure() for r in results if isinstance(r, Failure)]
    assert len(refused) == 7
    assert all(e.kind is ErrorKind.budget_exhausted and not e.retryable for e in refused)
    assert refused[0].details["budget"] == {"calls": 5}
    assert "calls 5/5" in refused[0].message


@pytest.mark.parametrize(
    ("budget", "allowed"),
    [
        # a third call would cross 12 (10 spent, ~5 a call): refused before, not after
        (Budget(output_tokens=12), 2),
        (Budget(input_tokens=10), 1),
        (Budget(cost_usd=0.025), 2),  # 0.02 spent + ~0.01 > 0.025
        (Budget(output_tokens=15), 3),  # 5 + 5 + 5 fits exactly
    ],
)
async def test_token_and_cost_ceilings_stop_new_calls(budget: Budget, allowed: int) -> None:
    inner = _Spender()
    llm = BudgetAdapter(inner, budget)
    outcomes = [await llm.complete(as_messages("hi")) for _ in range(6)]
    assert inner.calls == allowed
    assert all(isinstance(o, Success) for o in outcomes[:allowed])
    assert all(isinstance(o, Failure) for o in outcomes[allowed:])
    assert outcomes[-1].failure().details["spent"]["calls"] == allowed


async def test_the_wall_clock_ceiling_bounds_and_then_stops_calls() -> None:
    now = [0.0]
    inner = _Spender()
    llm = BudgetAdapter(inner, Budget(deadline_s=100), clock=lambda: now[0])
    assert isinstance(await llm.complete(as_messages("hi")), Success)
    now[0] = 70.0
    assert isinstance(await llm.complete(as_messages("hi")), Success)
    last = inner.configs[-1]
    assert last is not None
    assert last.total_timeout_s == pytest.approx(30.0)  # the time left, not 1800 s
    now[0] = 100.0
    refused = await llm.complete(as_messages("hi"))
    assert isinstance(refused, Failure)
    assert refused.failure().kind is ErrorKind.budget_exhausted
    assert inner.calls == 2


@pytest.mark.parametrize(
    "field", ["calls", "input_tokens", "output_tokens", "cost_usd", "deadline_s"]
)
@pytest.mark.parametrize("value", [0, -1])
def test_zero_or_negative_ceilings_are_refused_naming_the_field(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=rf"^budget\.{field} must be > 0 \(got {value}\)$"):
        Budget(**{field: value})
