"""A loop that keeps getting the same failure for the same input from the same backend is
stopped with `ErrorKind.runaway` at the bound, instead of spending until a budget or a
usage window ends it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from _runner_util import FIXTURES, fake_executable
from agentport import create_llm_adapter
from agentport.core import Attempt, ErrorKind, Message, ProviderError
from agentport.core._runaway import RunawayGuard, input_digest
from agentport.policies import RetryingAdapter, RetryPolicy
from agentport.transport._binary import forget_binaries

pytestmark = pytest.mark.anyio

# failures that reach a provider (they spend); a success is None
SPENT = [ErrorKind.rate_limited, ErrorKind.server_error, ErrorKind.bad_output]
UNSENT = [ErrorKind.config, ErrorKind.budget_exhausted, ErrorKind.unsupported]


@given(
    st.integers(min_value=1, max_value=5),
    st.lists(st.sampled_from([*SPENT, *UNSENT, None]), max_size=30),
)
def test_a_run_of_identical_failures_stops_at_exactly_the_bound(
    bound: int, outcomes: list[ErrorKind | None]
) -> None:
    guard = RunawayGuard(bound=bound)
    run_kind, run = None, 0  # the model: the trailing run of one spent kind
    for outcome in outcomes:
        refused = guard.refusal("in", "claude")
        assert (refused is not None) == (run >= bound)
        if refused is not None:
            assert refused.kind is ErrorKind.runaway
            assert refused.details["loop"]["repeats"] == run
            assert refused.details["loop"]["kind"] == run_kind.value  # type: ignore[union-attr]
            continue  # refused calls are not made
        if outcome is None:
            guard.observe("in", "claude", None)
            run_kind, run = None, 0
        elif outcome in UNSENT:
            guard.observe("in", "claude", ProviderError(outcome, "x"))  # costs nothing
        else:
            guard.observe("in", "claude", ProviderError(outcome, "x"))
            run = run + 1 if outcome is run_kind else 1
            run_kind = outcome


@given(st.integers(min_value=1, max_value=4))
def test_another_input_or_backend_is_another_run(bound: int) -> None:
    guard = RunawayGuard(bound=bound)
    for _ in range(bound):
        guard.failed("a", "claude", ErrorKind.server_error)
    assert guard.refusal("a", "claude") is not None
    assert guard.refusal("b", "claude") is None
    assert guard.refusal("a", "codex") is None


def test_each_attempt_of_a_call_counts_on_its_own_backend() -> None:
    guard = RunawayGuard(bound=3)
    attempts = [Attempt(ErrorKind.rate_limited, 1.0, backend="claude")] * 3
    guard.observe("in", "claude", ProviderError(ErrorKind.rate_limited, "x", attempts=attempts))
    assert guard.run("in", "claude") == (ErrorKind.rate_limited, 3)
    refused = guard.refusal("in", "claude", label="verify")
    assert refused is not None
    assert refused.request_sent is False
    assert not refused.retryable
    assert "'verify'" in refused.message
    assert refused.details["loop"]["label"] == "verify"


def test_a_bad_bound_is_refused() -> None:
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="runaway bound"):
            RunawayGuard(bound=bad)  # type: ignore[arg-type]


def test_the_input_digest_is_the_messages_and_the_model() -> None:
    hi = [Message.user("hi")]
    assert input_digest(hi) == input_digest([Message.user("hi")])
    assert input_digest(hi) != input_digest([Message.user("ho")])
    assert input_digest(hi, "a") != input_digest(hi, "b")


# ------------------------------------------------- the way a user's loop hits it


@pytest.fixture(autouse=True)
def _real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    forget_binaries()


def _failing_codex(tmp: Path, runs: Path) -> dict[str, Any]:
    env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / "codex" / "http401.stdout"),
        "FAKE_CLI_EXIT": "1",
        "FAKE_CLI_RECORD": str(runs),
        "FAKE_CLI_STDIN": "read",
    }
    return {"executable": str(fake_executable(tmp)), "env": env, "grace_s": 1.0}


async def test_a_loop_over_a_failing_cli_stops_after_the_bound(tmp_path: Path) -> None:
    runs = tmp_path / "last-run.json"
    llm = create_llm_adapter("codex", codex=_failing_codex(tmp_path, runs))
    kinds = []
    for _ in range(6):  # a workflow re-asking the same step
        runs.unlink(missing_ok=True)
        result = await llm.complete([Message.user("Say hi")])
        assert isinstance(result, Failure)
        kinds.append((result.failure().kind, runs.exists()))
    # three real runs of the CLI, then refused before it is started again
    assert kinds[:3] == [(ErrorKind.auth_required, True)] * 3
    assert kinds[3:] == [(ErrorKind.runaway, False)] * 3
    # another input is another loop
    other = await llm.complete([Message.user("Something else")])
    assert other.failure().kind is ErrorKind.auth_required
    assert json.loads(runs.read_text())["stdin"] == "Something else"


async def test_a_chain_moves_past_a_member_whose_loop_is_stopped(tmp_path: Path) -> None:
    runs = tmp_path / "last-run.json"
    # the default failover set moves on from auth_required, and from runaway
    llm = create_llm_adapter(["codex", "echo"], codex=_failing_codex(tmp_path, runs))
    for _ in range(5):
        runs.unlink(missing_ok=True)
        result = await llm.complete([Message.user("Say hi")])
        assert isinstance(result, Success), result
        assert result.unwrap().backend == "echo"
    skipped = result.unwrap().skipped
    assert skipped[0].kind is ErrorKind.runaway  # codex no longer started for this input
    assert not runs.exists()


async def test_retries_count_toward_the_bound() -> None:
    calls = 0

    class Overloaded:
        backend = "claude"

        async def complete(self, messages: Any, config: Any = None) -> Any:
            nonlocal calls
            calls += 1
            return Failure(ProviderError(ErrorKind.overloaded, "busy", backend="claude"))

    async def no_sleep(_s: float) -> None:
        return None

    llm = RetryingAdapter(
        Overloaded(), RetryPolicy(attempts=5), sleep=no_sleep, runaway=RunawayGuard(bound=3)
    )
    first = await llm.complete([Message.user("x")])
    assert first.failure().kind is ErrorKind.overloaded  # the retry policy's own end
    assert calls == 5
    second = await llm.complete([Message.user("x")])
    assert second.failure().kind is ErrorKind.runaway
    assert calls == 5  # not called again
    assert second.failure().details["loop"]["repeats"] == 5
