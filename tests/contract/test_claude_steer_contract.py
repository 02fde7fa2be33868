"""Steering a REAL claude runtime turn (stream-json input held open, `--replay-user-messages`)
against FakeModelServer on loopback: a steer while a tool runs is taken at the tool boundary
(`applied_now`: the turn's next model request carries it; one `result`); a steer while no
tool runs is `queued_next_turn` (claude would answer it as a turn of its own after the
turn's `result`) and leads the next turn, once. Skipped when the binary is absent."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from _more_clis_util import network_isolated
from _session_util import cli_options
from agentport import create_agent_runtime
from agentport.core import AgentEvent, CompletionConfig, EventType, SteerResult, ToolPolicy
from agentport.testing import ALLOW_ENV, FakeModelServer, TextReply, ToolCallReply

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.contract,
    pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)"),
]

_CONFIG = CompletionConfig(
    tools=ToolPolicy(allowed_tools=("Bash",)), idle_timeout_s=60, total_timeout_s=120
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")


async def _steered_turn(
    rt: object, prompt: str, when: EventType
) -> tuple[list[AgentEvent], list[SteerResult]]:
    events: list[AgentEvent] = []
    said: list[SteerResult] = []
    async with anyio.create_task_group() as tg:

        async def steer_once() -> None:
            with anyio.fail_after(60):
                # the events list is plain state, no event to wait on
                while not any(e.type is when for e in events):  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            said.append(rt.steer("MARK-STEER answer in one word"))  # type: ignore[attr-defined]

        tg.start_soon(steer_once)
        async for event in rt.send(prompt, _CONFIG):  # type: ignore[attr-defined]
            events.append(event)
    return events, said


async def test_a_steer_during_a_tool_is_taken_at_the_tool_boundary(tmp_path: Path) -> None:
    with FakeModelServer(default="steered answer") as server:
        options = {"claude": cli_options("claude", server, tmp_path / "home")}
        bash = {"command": "sleep 3", "description": "wait"}
        server.reply(ToolCallReply("Bash", bash, then="not steered"))
        async with create_agent_runtime("claude", model="fake-model", **options) as rt:
            events, said = await _steered_turn(rt, "run the sleep", EventType.tool_call)
            bodies = [json.dumps(r.body) for r in server.model_requests]
            server.reply("next answer")
            after = [e async for e in rt.send("and now?", _CONFIG)]
    assert said == [SteerResult.applied_now]
    assert events[-1].type is EventType.final, events[-1]
    assert len(bodies) == 2  # one turn: the steer rode on the request after the tool
    assert "MARK-STEER" not in bodies[0]
    assert "MARK-STEER" in bodies[1]
    assert after[-1].content == "next answer"
    last = json.dumps(server.model_requests[-1].body)
    assert last.count("MARK-STEER") == 1  # not sent again


async def test_a_steer_while_no_tool_runs_leads_the_next_turn(tmp_path: Path) -> None:
    with FakeModelServer(default="fallback") as server:
        options = {"claude": cli_options("claude", server, tmp_path / "home")}
        server.reply(TextReply("slow answer", chunk_size=4, chunk_delay=0.5))
        async with create_agent_runtime("claude", model="fake-model", **options) as rt:
            events, said = await _steered_turn(rt, "a question", EventType.init)
            server.reply("next answer")
            after = [e async for e in rt.send("and now?", _CONFIG)]
    assert said == [SteerResult.queued_next_turn]
    assert events[-1].content == "slow answer"
    assert after[-1].content == "next answer"
    assert "MARK-STEER" in json.dumps(server.model_requests[-1].body)
    assert len(server.model_requests) == 2  # nothing answered the steer on its own
    assert json.dumps(server.model_requests[-1].body).count("MARK-STEER") == 1
