"""The ceiling a budget stopped at travels as typed data (`BudgetLimit` in
`ProviderError.details["limit"]`), never as text to parse back: for every ceiling and any
spend, the typed limit reads back the same short form the message shows, and survives a
pickle and the Temporal JSON round trip unchanged."""

from __future__ import annotations

import pickle
import re
from collections.abc import Sequence

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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
from agentport.policies import Budget, BudgetAdapter, BudgetLimit

_FIELDS = ("calls", "input_tokens", "output_tokens", "cost_usd")


class _Spender:
    backend = "fake"

    def __init__(self, usage: Usage) -> None:
        self.usage = usage
        self.calls = 0

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        self.calls += 1
        return Success(CompletionResponse(content="ok", backend=self.backend, usage=self.usage))


async def _until_refused(llm: BudgetAdapter) -> ProviderError:
    for _ in range(400):
        result = await llm.complete(as_messages("hi"))
        if isinstance(result, Failure):
            return result.failure()
    raise AssertionError("the budget never refused a call")


def _said(error: ProviderError) -> str:
    """What the message shows between its first parentheses (the form workflows report)."""
    found = re.search(r"\(([^)]*)\)", error.message)
    assert found is not None, error.message
    return found.group(1)


@settings(max_examples=40)
@given(
    field=st.sampled_from(_FIELDS),
    ceiling=st.integers(1, 150),
    spent=st.integers(1, 3_000),
    cost=st.floats(0.001, 5.0),
)
def test_every_ceiling_reads_back_typed_as_the_message_says(
    field: str, ceiling: int, spent: int, cost: float
) -> None:
    usage = Usage(input_tokens=spent, output_tokens=spent, cost_usd=cost)
    limit_value: float = ceiling if field != "cost_usd" else ceiling / 1000
    llm = BudgetAdapter(_Spender(usage), Budget(**{field: limit_value}))
    error = anyio.run(_until_refused, llm)
    limit = BudgetLimit.of(error)
    assert limit is not None
    assert limit.name == field
    assert limit.ceiling == limit_value
    assert str(limit) == _said(error)
    assert llm.reached() == str(limit)
    again = pickle.loads(pickle.dumps(error))
    assert BudgetLimit.of(again) == limit


def test_a_call_cut_at_the_deadline_carries_the_deadline_limit() -> None:
    now = [0.0]

    class _Slow(_Spender):
        async def complete(
            self, messages: Sequence[Message], config: CompletionConfig | None = None
        ) -> Result[CompletionResponse, ProviderError]:
            now[0] = 10.0
            await anyio.sleep(5)
            raise AssertionError("not cancelled at the deadline")

    async def main() -> ProviderError:
        llm = BudgetAdapter(_Slow(Usage()), Budget(deadline_s=0.05), clock=lambda: now[0])
        result = await llm.complete(as_messages("hi"))
        assert isinstance(result, Failure)
        return result.failure()

    error = anyio.run(main)
    assert error.details["cut"] is True
    limit = BudgetLimit.of(error)
    assert limit == BudgetLimit(name="deadline_s", ceiling=0.05)
    assert str(limit) == _said(error) == "deadline_s 0.05"


def test_the_limit_survives_the_temporal_json_round_trip() -> None:
    pytest.importorskip("temporalio")
    from agentport.temporal._data import error_from_dict, error_to_dict

    llm = BudgetAdapter(_Spender(Usage(output_tokens=5)), Budget(calls=2))
    error = anyio.run(_until_refused, llm)
    back = error_from_dict(error_to_dict(error))
    assert (
        BudgetLimit.of(back)
        == BudgetLimit.of(error)
        == BudgetLimit(name="calls", ceiling=2, used=2)
    )


@pytest.mark.parametrize(
    "error",
    [
        ProviderError(ErrorKind.rate_limited, "x", details={"limit": {"name": "calls"}}),
        ProviderError(ErrorKind.budget_exhausted, "budget reached (calls 1/1)"),
        ProviderError(ErrorKind.budget_exhausted, "x", details={"limit": {"name": "turns"}}),
        ProviderError(ErrorKind.budget_exhausted, "x", details={"limit": "calls 1/1"}),
    ],
    ids=["another kind", "no details", "unknown ceiling", "text, not data"],
)
def test_no_limit_is_read_from_anything_but_typed_budget_details(error: ProviderError) -> None:
    assert BudgetLimit.of(error) is None


def test_the_limit_is_closed_and_immutable() -> None:
    limit = BudgetLimit(name="calls", ceiling=1, used=1)
    with pytest.raises(ValueError, match="extra"):
        BudgetLimit.model_validate({"name": "calls", "ceiling": 1, "window": "weekly"})
    with pytest.raises(ValueError, match="frozen"):
        limit.used = 0  # type: ignore[misc]


def test_a_question_share_of_a_batch_budget_names_its_scope() -> None:
    pytest.importorskip("temporalio")
    from agentport.temporal._budget import AllowanceAdapter

    now = [0.0]
    llm = AllowanceAdapter(_Spender(Usage()), {"calls": 1, "deadline_at": 50.0}, lambda: now[0])
    share = anyio.run(_until_refused, llm)
    limit = BudgetLimit.of(share)
    assert limit == BudgetLimit(name="calls", ceiling=1, used=1, scope="question_share")
    assert share.message == f"budget reached ({limit}): no new call"
    assert str(limit) == "calls 1/1 (this question's share of the batch budget)"

    late = AllowanceAdapter(_Spender(Usage()), {"calls": 9, "deadline_at": 50.0}, lambda: now[0])
    now[0] = 60.0
    wall = BudgetLimit.of(anyio.run(_until_refused, late))
    assert wall is not None
    assert (wall.name, wall.scope) == ("deadline_s", "batch_deadline")
    assert str(wall) == "deadline_s (the batch's wall-clock budget)"
