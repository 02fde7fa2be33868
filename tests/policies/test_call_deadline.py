"""One deadline per call: `total_timeout_s` bounds the whole call,
agentport's retries, schema re-prompts and back-off included, and ends in
`Failure(timeout, timeout="total")` with the attempt history.

Regression: each attempt had its own `total_timeout_s`, so a 30 s budget on a backend that
kept failing took three budgets plus back-off; a hang was only cut by `anyio.fail_after`,
a bare `TimeoutError` without an ErrorKind. The `fail_after` guards below only stop a broken
build from hanging the suite; they are far above the deadlines and assert no timing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Failure

from _runner_util import FIXTURES, fake_executable
from agentport import (
    Attempt,
    CompletionConfig,
    ErrorKind,
    Message,
    ProviderError,
    create_llm_adapter,
)
from agentport.policies import RetryingAdapter, RetryPolicy
from agentport.testing import FakeModelServer, Hang, HttpFault, ScriptedAdapter

pytestmark = pytest.mark.anyio

GUARD_S = 30  # a hang of the suite, not a timing assertion
FAST_RETRY = {"retry_attempts": 10_000, "retry_base_delay_s": 0.01, "retry_max_delay_s": 0.02}


def _http(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any
) -> Any:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123456789"}
    return create_llm_adapter("openai_compat", cwd=tmp_path, openai_compat=options, **kw)


def _failure(result: Any) -> ProviderError:
    assert isinstance(result, Failure), result
    error = result.failure()
    assert isinstance(error, ProviderError)
    return error


async def test_a_backend_failing_retryably_forever_ends_at_the_deadline_with_its_history(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.default = HttpFault.server_error()
    llm = _http(server, tmp_path, monkeypatch, **FAST_RETRY)
    with anyio.fail_after(GUARD_S):
        result = await llm.complete([Message.user("hi")], CompletionConfig(total_timeout_s=1.0))
    error = _failure(result)
    assert (error.kind, error.timeout, error.retryable) == (ErrorKind.timeout, "total", False)
    assert "deadline" in error.message
    assert "server_error" in error.message
    assert len(error.attempts) > 1
    assert all(isinstance(a, Attempt) for a in error.attempts)
    # every attempt failed with the 500, except perhaps the last one, cut by the deadline
    assert {a.kind for a in error.attempts[:-1]} == {ErrorKind.server_error}
    assert {a.backend for a in error.attempts} == {"openai_compat"}
    assert len(server.model_requests) <= len(error.attempts)  # no attempt after the deadline


async def test_a_hanging_backend_ends_at_the_deadline_as_a_total_timeout(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.default = Hang()
    llm = _http(server, tmp_path, monkeypatch, **FAST_RETRY)
    with anyio.fail_after(GUARD_S):
        result = await llm.complete([Message.user("hi")], CompletionConfig(total_timeout_s=0.5))
    error = _failure(result)
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "total")
    assert [a.kind for a in error.attempts] == [ErrorKind.timeout]
    assert error.attempts[0].timeout == "total"


async def test_the_attempt_bound_fires_first_and_the_call_retries_within_the_deadline(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.default = Hang()
    llm = _http(server, tmp_path, monkeypatch, **FAST_RETRY)
    config = CompletionConfig(attempt_timeout_s=0.3, total_timeout_s=1.5)
    with anyio.fail_after(GUARD_S):
        error = _failure(await llm.complete([Message.user("hi")], config))
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "total")
    whiches = [a.timeout for a in error.attempts]
    assert len(whiches) >= 2
    assert set(whiches[:-1]) == {"attempt"}  # each attempt cut by its own bound, then retried


async def test_a_hanging_cli_ends_at_the_deadline_and_says_which_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    started = tmp_path / "started.stdout"  # the session starts, then nothing more
    started.write_text('{"type":"thread.started","thread_id":"t-1"}\n')
    env = {"FAKE_CLI_STDOUT": str(started), "FAKE_CLI_HANG": "1"}
    options = {"executable": str(fake_executable(tmp_path)), "env": env, "grace_s": 0.5}
    llm = create_llm_adapter("codex", cwd=tmp_path, codex=options, **FAST_RETRY)
    with anyio.fail_after(GUARD_S):
        result = await llm.complete([Message.user("hi")], CompletionConfig(total_timeout_s=1.0))
    error = _failure(result)
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "total")
    assert [(a.kind, a.timeout) for a in error.attempts] == [(ErrorKind.timeout, "total")]


@pytest.mark.parametrize("retry", [True, False], ids=["policy", "bare-adapter"])
async def test_schema_re_prompts_share_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retry: bool
) -> None:
    # every answer misses a required field, so the adapter re-prompts; 200 re-prompts of a
    # slow CLI would take far longer than the deadline
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    env = {"FAKE_CLI_STDOUT": str(FIXTURES / "codex" / "ok-json.stdout"), "FAKE_CLI_DELAY": "0.1"}
    options = {"executable": str(fake_executable(tmp_path)), "env": env, "grace_s": 0.5}
    llm = create_llm_adapter("codex", cwd=tmp_path, retry=retry, codex=options)
    schema = {
        "type": "object",
        "properties": {"never": {"type": "string"}},
        "required": ["never"],
    }
    config = CompletionConfig(output_schema=schema, schema_retries=200, total_timeout_s=2.0)
    with anyio.fail_after(GUARD_S):
        error = _failure(await llm.complete([Message.user("hi")], config))
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "total")


async def test_a_back_off_past_the_deadline_is_not_slept() -> None:
    inner = ScriptedAdapter().add(ProviderError(ErrorKind.rate_limited, "busy", retry_after=30))
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    llm = RetryingAdapter(inner, RetryPolicy(attempts=5, max_delay_s=60), sleep=sleep)
    error = _failure(await llm.complete([Message.user("q")], CompletionConfig(total_timeout_s=5)))
    assert (error.kind, error.timeout, error.retry_after) == (ErrorKind.timeout, "total", 30)
    assert "back-off" in error.message
    assert "rate_limited" in error.message
    assert slept == []
    assert len(inner.calls) == 1
    assert [a.kind for a in error.attempts] == [ErrorKind.rate_limited]


async def test_exhausted_retries_keep_their_kind_and_carry_every_attempt() -> None:
    inner = ScriptedAdapter().add(ProviderError(ErrorKind.server_error, "boom", exit_code=7))
    llm = RetryingAdapter(inner, RetryPolicy(attempts=3, base_delay_s=0))
    error = _failure(await llm.complete([Message.user("q")]))
    assert error.kind is ErrorKind.server_error
    assert [(a.kind, a.exit_code, a.backend) for a in error.attempts] == [
        (ErrorKind.server_error, 7, "scripted")
    ] * 3
    assert "3 attempts" in str(error)


async def test_a_non_retryable_failure_has_one_attempt() -> None:
    inner = ScriptedAdapter().add(ProviderError(ErrorKind.auth_required, "no key"))
    llm = RetryingAdapter(inner, RetryPolicy(attempts=5))
    error = _failure(await llm.complete([Message.user("q")]))
    assert error.kind is ErrorKind.auth_required
    assert len(error.attempts) == 1


async def test_the_scripted_error_object_is_not_mutated_by_the_policy() -> None:
    shared = ProviderError(ErrorKind.network, "reset")
    inner = ScriptedAdapter().add(shared)
    llm = RetryingAdapter(inner, RetryPolicy(attempts=2, base_delay_s=0))
    assert isinstance(await llm.complete([Message.user("q")]), Failure)
    assert shared.attempts == ()


async def test_duration_covers_every_attempt_of_the_call() -> None:
    inner = ScriptedAdapter()
    inner.add(ProviderError(ErrorKind.network, "reset"), delay_s=0.2, times=1)
    inner.add("done")
    llm = RetryingAdapter(inner, RetryPolicy(attempts=2, base_delay_s=0))
    response = (await llm.complete([Message.user("q")])).unwrap()
    assert response.content == "done"
    assert response.duration_s >= 0.2  # the failed first attempt slept 0.2 s


async def test_each_attempt_is_handed_the_time_left() -> None:
    inner = ScriptedAdapter().add(ProviderError(ErrorKind.network, "x"), times=1).add("ok")
    llm = RetryingAdapter(inner, RetryPolicy(attempts=2, base_delay_s=0))
    await llm.complete([Message.user("q")], CompletionConfig(total_timeout_s=50))
    first, second = (c.config.total_timeout_s for c in inner.calls)
    assert 0 < second <= first <= 50


async def test_cancellation_from_outside_is_not_turned_into_a_timeout() -> None:
    inner = ScriptedAdapter().add("late", delay_s=10)
    llm = RetryingAdapter(inner, RetryPolicy(attempts=3))
    with anyio.move_on_after(0.05) as scope:
        await llm.complete([Message.user("q")], CompletionConfig(total_timeout_s=60))
    assert scope.cancelled_caught
    assert len(inner.calls) == 1


async def test_a_backend_total_timeout_before_the_deadline_is_retried_not_final() -> None:
    # an HTTP 408 is reported as the backend's "total" timeout long before the call's deadline
    early = ProviderError(ErrorKind.timeout, "HTTP 408", timeout="total")
    inner = ScriptedAdapter().add(early, times=1).add("second try")
    llm = RetryingAdapter(inner, RetryPolicy(attempts=2, base_delay_s=0))
    result = await llm.complete([Message.user("q")], CompletionConfig(total_timeout_s=60))
    assert result.unwrap().content == "second try"
