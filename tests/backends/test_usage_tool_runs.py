"""Usage of a run with a tool step counts every model request: replaying each CLI's recorded
stream of such a run (two or three requests to the stub, 7 output tokens each) through the
adapter gives what the run spent, whether the CLI reports usage per request (pi, opencode:
summed) or as the run's total (claude, qwen, codex, gemini: the last report), as each spec's
`usage_mode` says. The real pi, opencode and qwen against the fake model server:
tests/contract/test_more_clis_contract.py::test_usage_of_a_tool_step_counts_both_model_requests."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from _runner_util import FIXTURES
from agentport import create_llm_adapter
from agentport.backends import claude, codex, copilot, gemini, gjc, opencode, pi, qwen
from agentport.backends._endstate import reported_usage
from agentport.core import AgentEvent, CompletionConfig, EventType, Message, ToolPolicy, Usage

pytestmark = pytest.mark.anyio

#: cli -> (recorded tool run, (input, output) the run spent: the stub's requests summed)
TOOL_RUNS = {
    "pi": ("tool-bash", (1458 + 1533, 7 + 7)),
    "opencode": ("tool-bash", (7809 + 7891, 7 + 7)),
    "claude": ("tool-bash", (39198, 14)),
    "qwen": ("tool-shell", (39909, 14)),
    "codex": ("tool-shell", (20826, 14)),
    "gemini": ("tool-shell", (25409, 21)),  # three requests
    "copilot": ("tool-bash", (0, 0)),  # its json output carries no token counts
}
MODES = {
    "pi": "per_request",
    "gjc": "per_request",
    "opencode": "per_request",
    "claude": "cumulative",
    "qwen": "cumulative",
    "codex": "cumulative",
    "gemini": "cumulative",
    "copilot": "cumulative",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("cli", sorted(TOOL_RUNS))
async def test_a_recorded_tool_run_reports_what_all_its_requests_spent(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    case, (spent_in, spent_out) = TOOL_RUNS[cli]
    exe = tmp_path / "replay-cli"
    exe.write_text(f"#!/bin/sh\ncat >/dev/null\nexec cat {FIXTURES / cli / f'{case}.stdout'}\n")
    exe.chmod(0o755)
    llm = create_llm_adapter(cli, retry=False, **{cli: {"executable": str(exe)}})
    config = CompletionConfig(total_timeout_s=30, tools=ToolPolicy.cli_defaults())
    result = await llm.complete([Message.user("hi")], config)
    assert isinstance(result, Success), result
    usage = result.unwrap().usage
    assert (usage.input_tokens, usage.output_tokens) == (spent_in, spent_out)


@pytest.mark.parametrize("module", [claude, codex, copilot, gemini, gjc, opencode, pi, qwen])
def test_each_spec_declares_how_its_stream_counts_usage(module: object) -> None:
    spec = module.SPEC  # type: ignore[attr-defined]
    assert spec.usage_mode == MODES[spec.name]


_usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**6),
    output_tokens=st.integers(0, 10**6),
    cached_tokens=st.integers(0, 10**6),
)


def _events(usages: list[Usage]) -> list[AgentEvent]:
    out = []
    for u in usages:  # text between the reports: they need not be adjacent
        out.append(AgentEvent(type=EventType.text, content="x"))
        out.append(AgentEvent(type=EventType.usage, metadata={"usage": u}))
    return out


@given(st.lists(_usages, min_size=1, max_size=6))
def test_per_request_reports_add_up_and_cumulative_ones_do_not(usages: list[Usage]) -> None:
    events = _events(usages)
    total = reported_usage(events, "per_request")
    assert total is not None
    assert total.input_tokens == sum(u.input_tokens for u in usages)
    assert total.output_tokens == sum(u.output_tokens for u in usages)
    assert total.cached_tokens == sum(u.cached_tokens for u in usages)
    assert reported_usage(events, "cumulative") == usages[-1]
    assert reported_usage([AgentEvent(type=EventType.text, content="x")], "per_request") is None
