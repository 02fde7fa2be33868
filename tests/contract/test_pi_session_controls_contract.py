"""Native steer and interrupt on a REAL pi runtime (a runtime's turn runs `pi --mode rpc`)
against FakeModelServer on loopback: `steer()` is pi's `steer` command, delivered after
the running assistant turn's tool calls, before the next model call (`applied_now`: with a
tool running, and with only text streaming, the turn's next model request carries the
text); `interrupt()` is pi's `abort` (the turn ends `interrupted`, the runtime goes on).
Skipped when the binary is absent."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from _more_clis_util import network_isolated
from _session_util import cli_options
from agentport import create_agent_runtime
from agentport.core import (
    AgentEvent,
    CompletionConfig,
    ErrorKind,
    EventType,
    SteerResult,
    ToolPolicy,
)
from agentport.testing import ALLOW_ENV, FakeModelServer, Hang, TextReply, ToolCallReply

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.contract,
    pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)"),
]

_CONFIG = CompletionConfig(tools=ToolPolicy.cli_defaults(), idle_timeout_s=60, total_timeout_s=120)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")


async def _turn_with(rt: Any, ready: Any, act: Any) -> tuple[list[AgentEvent], Any, float]:
    """A turn; once *ready(events)*, `act()` (its answer, seconds from it to the turn's end)."""
    events: list[AgentEvent] = []
    said: list[Any] = []
    at = [0.0]
    async with anyio.create_task_group() as tg:

        async def later() -> None:
            with anyio.fail_after(60):
                # the events list is plain state, no event to wait on
                while not ready(events):  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            at[0] = time.monotonic()
            said.append(act())

        tg.start_soon(later)
        async for event in rt.send("run it", _CONFIG):
            events.append(event)
    return events, said[0], time.monotonic() - at[0]


@pytest.mark.parametrize("during", ["tool", "text"])
async def test_steer_reaches_the_running_turn(tmp_path: Path, during: str) -> None:
    with FakeModelServer(default="steered answer") as server:
        options = {"pi": cli_options("pi", server, tmp_path / "home")}
        if during == "tool":
            server.reply(ToolCallReply("bash", {"command": "sleep 3"}, then="not steered"))
            want = EventType.tool_call
        else:
            server.reply(TextReply("slow answer", chunk_size=4, chunk_delay=0.5))
            want = EventType.text
        async with create_agent_runtime("pi", model="fake-model", **options) as rt:
            events, said, _ = await _turn_with(
                rt,
                lambda seen: any(e.type is want for e in seen),
                lambda: rt.steer("MARK-STEER answer in one word"),
            )
    bodies = [json.dumps(r.body) for r in server.model_requests]
    assert said is SteerResult.applied_now
    assert len(bodies) == 2  # one turn, two model requests
    assert "MARK-STEER" not in bodies[0]
    assert "MARK-STEER" in bodies[1]
    assert events[-1].type is EventType.final, events[-1]
    assert events[-1].content == "steered answer"


async def test_interrupt_is_abort(tmp_path: Path) -> None:
    with FakeModelServer(default="fallback") as server:
        options = {"pi": cli_options("pi", server, tmp_path / "home")}
        server.reply(Hang())
        async with create_agent_runtime("pi", model="fake-model", **options) as rt:
            events, said, took = await _turn_with(
                rt, lambda seen: bool(server.model_requests), rt.interrupt
            )
            server.reply("next answer")
            after = [e async for e in rt.send("next question", _CONFIG)]
    assert said is True
    assert events[-1].metadata["error"].kind is ErrorKind.interrupted
    assert any(e.type is EventType.error and "aborted" in e.content for e in events[:-1])
    assert took < 5, took
    print(f"interrupt() -> turn end: {took:.2f}s")
    assert after[-1].content == "next answer"
