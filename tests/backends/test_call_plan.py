"""One call, one plan: the caller's config is merged over the settings exactly once per
`complete()`, whatever the stack above the backend (retry policy, failover chain, budget, or
none), and one `Deadline` value (when the call ends, which limit ends it) is what every
layer reads, down to the process runner.

The stacks run the way users build them (`create_llm_adapter`, `BudgetAdapter`) against
tests/fixtures/cli/fake_cli.py replaying a recorded codex transcript.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _helpers import ROOT
from _runner_util import FIXTURES, fake_executable
from agentport import CompletionConfig, LLMAdapter, Message, create_llm_adapter
from agentport.backends import _cli
from agentport.core import CallPlan, Deadline
from agentport.policies import Budget, BudgetAdapter
from agentport.transport import ProcessRequest

pytestmark = pytest.mark.anyio

seconds = st.floats(min_value=0.001, max_value=1e6, allow_nan=False)
instants = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)


@given(total=seconds, attempt=st.none() | seconds, now=instants, later=st.lists(instants))
def test_a_deadline_counts_down_to_zero_and_names_the_earliest_limit(
    total: float, attempt: float | None, now: float, later: list[float]
) -> None:
    deadline = Deadline.of_call(total, attempt, now)
    ends = {"total": now + total, "attempt": math.inf if attempt is None else now + attempt}
    # the limit named is the one that ends first (the whole call's on a tie)
    assert deadline.limit == ("attempt" if ends["attempt"] < ends["total"] else "total")
    assert deadline.end == min(ends.values())
    assert deadline.seconds == (total if deadline.limit == "total" else attempt)
    left = [deadline.remaining(now + step) for step in sorted(later)]
    assert all(x >= 0 for x in left)  # never negative
    assert all(a >= b for a, b in itertools.pairwise(left))  # never grows
    for step in later:
        assert deadline.reached(now + step) == (deadline.remaining(now + step) == 0)


@given(st.lists(st.tuples(instants, st.sampled_from(["total", "attempt", "scope"])), min_size=1))
def test_the_earliest_of_many_deadlines_is_the_first_that_ends(
    ends: list[tuple[float, Any]],
) -> None:
    deadlines = [Deadline(end, limit) for end, limit in ends]
    first = functools.reduce(Deadline.earliest, deadlines)
    assert first.end == min(end for end, _ in ends)
    assert first is next(d for d in deadlines if d.end == first.end)  # a tie keeps the outer


@given(total=seconds, attempt=st.none() | seconds, now=instants, spent=instants)
def test_an_attempt_plan_never_outlives_the_call(
    total: float, attempt: float | None, now: float, spent: float
) -> None:
    config = CompletionConfig(total_timeout_s=total, attempt_timeout_s=attempt)
    plan = CallPlan((Message.user("hi"),), config, Deadline.of_call(total, None, now))
    one = plan.for_attempt(now + spent)
    assert one.deadline.end <= plan.deadline.end
    assert one.deadline.limit in ("total", "attempt")
    # what a backend that reads only its config gets: the seconds left, never 0
    assert one.config.total_timeout_s == max(one.deadline.remaining(now + spent), 0.001)
    assert one.messages is plan.messages
    assert plan.config is config  # the call's own plan is left as it was


def _codex(tmp: Path) -> dict[str, Any]:
    env = {"FAKE_CLI_STDOUT": str(FIXTURES / "codex" / "ok-json.stdout"), "FAKE_CLI_STDIN": "read"}
    return {"executable": str(fake_executable(tmp)), "env": env}


def _stacks() -> dict[str, Callable[[dict[str, Any], dict[str, Any]], LLMAdapter]]:
    def budget(opts: dict[str, Any], limits: dict[str, Any]) -> LLMAdapter:
        inner = create_llm_adapter("codex", **limits, codex=opts)
        return BudgetAdapter(inner, Budget(deadline_s=600))

    return {
        "retry": lambda opts, limits: create_llm_adapter("codex", **limits, codex=opts),
        "no retry": lambda o, limits: create_llm_adapter("codex", retry=False, **limits, codex=o),
        "chain": lambda opts, limits: create_llm_adapter(
            ["codex", "claude"], **limits, codex=opts, claude=opts
        ),
        "budget": budget,
    }


@pytest.mark.parametrize("stack", list(_stacks()))
async def test_the_config_is_merged_once_and_one_deadline_reaches_the_runner(
    stack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    merges: list[CompletionConfig] = []
    merge = CompletionConfig.with_defaults

    def counted(self: CompletionConfig, defaults: CompletionConfig) -> CompletionConfig:
        merges.append(self)
        return merge(self, defaults)

    requests: list[ProcessRequest] = []
    run = _cli.run_process

    async def recorded(request: ProcessRequest, on_frame: Any) -> Any:
        requests.append(request)
        return await run(request, on_frame)

    monkeypatch.setattr(CompletionConfig, "with_defaults", counted)
    monkeypatch.setattr(_cli, "run_process", recorded)
    # the settings set the call's limits; the caller sets only its attempt bound and a label
    limits = {"startup_timeout_s": 30, "idle_timeout_s": 30, "total_timeout_s": 90}
    llm = _stacks()[stack](_codex(tmp_path), limits)
    config = CompletionConfig(attempt_timeout_s=60, label="plan")
    result = await llm.complete([Message.user("Reply with exactly this JSON")], config)

    assert result.unwrap().content == '{"status": "ok", "answer": 42}'
    assert merges == [config]  # merged once, the caller's own config, at the top
    (request,) = requests
    deadline = request.deadline
    assert deadline is not None  # the runner ends by the plan's deadline, not its own sum
    # attempt_timeout_s=60 ends before total_timeout_s=90: the deadline says which
    assert (deadline.limit, deadline.seconds) == ("attempt", 60)
    assert request.total_timeout_s <= 60


async def test_a_callers_cancel_scope_is_a_deadline_on_the_same_clock() -> None:
    with anyio.move_on_after(5):
        await anyio.lowlevel.checkpoint()  # the caller's code runs inside its scope
        scope = Deadline.of_scope(anyio.current_effective_deadline())
        call = Deadline.of_call(30).earliest(scope)
    assert call is scope  # the caller's 5 s end before the call's 30 s
    assert scope.limit == "scope"
    assert 4 < scope.remaining() <= 5


def test_only_the_call_plan_merges_defaults() -> None:
    # every layer reaches the merge through `plan_call` / `merge_config`, which hand a
    # planned config back as it is: no other module may merge on its own
    src = ROOT / "src" / "agentport"
    callers = sorted(
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if ".with_defaults(" in path.read_text(encoding="utf-8")
    )
    assert callers == ["core/_plan.py"]
