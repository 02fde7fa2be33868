"""Usage counts requests, not answers: a structured call that needed a re-ask reports both
requests, a failed call reports what it spent, retries and failover add up every attempt,
and a budget counts all of it and stops before the call that would cross a ceiling.

The structured loop is checked on the HTTP backends against `FakeModelServer` (the requests
a user's call really makes); the policy layer with adapters that fail or answer as told.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from returns.result import Failure, Result, Success

from agentport import create_llm_adapter
from agentport.backends._endstate import with_progress
from agentport.core import (
    AgentEvent,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    EventType,
    Message,
    ProviderError,
    Usage,
)
from agentport.policies import (
    Budget,
    BudgetAdapter,
    ChainMember,
    FailoverAdapter,
    RetryingAdapter,
    RetryPolicy,
)
from agentport.testing import FakeModelServer, JsonReply, TextReply, TokenUsage

FAST = CompletionConfig(startup_timeout_s=5, idle_timeout_s=5, total_timeout_s=30)


class Capital(BaseModel):
    country: str
    city: str


def _http(backend: str, server: FakeModelServer, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    if backend == "litellm":
        pytest.importorskip(
            "agentport.backends.litellm", reason="needs the litellm extra", exc_type=ImportError
        )
        options = {"model": "openai/fake-model", "api_base": server.openai_base_url,
                   "api_key": "sk-fake-0123"}  # fmt: skip
        return create_llm_adapter("litellm", cwd=tmp, litellm=options)
    options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123"}
    return create_llm_adapter("openai_compat", cwd=tmp, model="fake-model", openai_compat=options)


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["openai_compat", "litellm"])
async def test_a_re_asked_structured_answer_reports_both_requests(
    backend: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(
        TextReply("Paris, I think", usage=TokenUsage(input_tokens=100, output_tokens=40)),
        JsonReply({"country": "France", "city": "Paris"},
                  usage=TokenUsage(input_tokens=150, output_tokens=20)),
    )  # fmt: skip
    llm = _http(backend, server, tmp_path, monkeypatch)
    config = FAST.model_copy(update={"output_schema": Capital})
    response = (await llm.complete([Message.user("capital of France?")], config)).unwrap()
    assert len(server.model_requests) == 2
    assert response.parsed == Capital(country="France", city="Paris")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (250, 60)


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["openai_compat", "litellm"])
async def test_a_schema_mismatch_reports_every_request_it_made(
    backend: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.set_default(TextReply("no idea", usage=TokenUsage(input_tokens=70, output_tokens=9)))
    llm = _http(backend, server, tmp_path, monkeypatch)
    config = FAST.model_copy(update={"output_schema": Capital, "schema_retries": 2})
    error = (await llm.complete([Message.user("capital?")], config)).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert len(server.model_requests) == 3
    assert (error.usage.input_tokens, error.usage.output_tokens) == (210, 27)


def test_a_cli_run_that_failed_after_reporting_usage_keeps_it() -> None:
    spent = Usage(input_tokens=12, output_tokens=3)
    events = [AgentEvent(type=EventType.usage, content="", metadata={"usage": spent})]
    error = with_progress(ProviderError(ErrorKind.process_failed, "died"), events)
    assert error.usage == spent
    assert error.request_sent is True


# ---------------------------------------------------------------------- the policy layer

U = Usage(input_tokens=10, output_tokens=5)


class _Told:
    """An adapter that returns the given results in turn."""

    backend = "told"

    def __init__(self, results: Sequence[Result[CompletionResponse, ProviderError]]) -> None:
        self.results = list(results)

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        return self.results.pop(0)


def _fail(kind: ErrorKind = ErrorKind.server_error) -> Failure[ProviderError]:
    return Failure(ProviderError(kind, "failed", usage=U))


def _ok(usage: Usage = U) -> Success[CompletionResponse]:
    return Success(CompletionResponse(content="ok", usage=usage))


async def _no_sleep(_: float) -> None:
    return None


@pytest.mark.anyio
async def test_retries_add_up_every_attempt() -> None:
    llm = RetryingAdapter(_Told([_fail(), _fail(), _ok()]), RetryPolicy(attempts=3),
                          sleep=_no_sleep)  # fmt: skip
    assert (await llm.complete([Message.user("hi")])).unwrap().usage == U + U + U
    failing = RetryingAdapter(_Told([_fail(), _fail()]), RetryPolicy(attempts=2), sleep=_no_sleep)
    assert (await failing.complete([Message.user("hi")])).failure().usage == U + U


@pytest.mark.anyio
async def test_failover_adds_up_every_member() -> None:
    chain = FailoverAdapter(
        [ChainMember("a", lambda: _Told([_fail()])), ChainMember("b", lambda: _Told([_ok()]))]
    )
    response = (await chain.complete([Message.user("hi")])).unwrap()
    assert response.usage == U + U
    both = FailoverAdapter(
        [ChainMember("a", lambda: _Told([_fail()])), ChainMember("b", lambda: _Told([_fail()]))]
    )
    assert (await both.complete([Message.user("hi")])).failure().usage == U + U


@pytest.mark.anyio
async def test_a_budget_counts_failed_calls() -> None:
    budget = BudgetAdapter(_Told([_fail(), _ok()]), Budget(output_tokens=100))
    await budget.complete([Message.user("hi")])
    await budget.complete([Message.user("hi")])
    assert budget.spent == U + U


@pytest.mark.anyio
async def test_a_budget_refuses_before_the_call_that_would_cross_it() -> None:
    """The case users hit: 500 output tokens at 200 a call let 600 be spent; now 400."""
    each = Usage(output_tokens=200)
    budget = BudgetAdapter(_Told([_ok(each)] * 5), Budget(output_tokens=500))
    results = [await budget.complete([Message.user("hi")]) for _ in range(4)]
    assert [isinstance(r, Success) for r in results] == [True, True, False, False]
    refused = results[2].failure()
    assert refused.kind is ErrorKind.budget_exhausted
    assert "output_tokens 400/500, next call ~200" in refused.message
    assert refused.request_sent is False


@pytest.mark.anyio
@given(
    each=st.integers(min_value=1, max_value=400),
    ceiling=st.integers(min_value=1, max_value=2000),
    calls=st.integers(min_value=1, max_value=30),
)
async def test_like_calls_never_cross_a_token_ceiling_they_fit(
    each: int, ceiling: int, calls: int
) -> None:
    usage = Usage(input_tokens=each, output_tokens=each)
    budget = BudgetAdapter(_Told([_ok(usage)] * calls), Budget(output_tokens=ceiling))
    made = 0
    for _ in range(calls):
        if isinstance(await budget.complete([Message.user("hi")]), Success):
            made += 1
    spent = budget.spent.output_tokens
    assert spent == made * each
    if each <= ceiling:  # the first call has no estimate: only a call that fits is safe
        assert spent <= ceiling
        assert made == calls or spent + each > ceiling  # it stopped only when it had to
