"""Native session controls on the REAL codex (a runtime's turns run on `codex app-server`)
against FakeModelServer on loopback: `steer()` mid-turn is `turn/steer` (the turn's next
model request carries the text: `applied_now`); `interrupt()` is `turn/interrupt` (codex
ends the turn with status `interrupted`, the runtime reports `interrupted`, the next turn
resumes the thread); `fork()` is `thread/fork` (a new thread with the history; the original
goes on without the fork's turns). Skipped when the binary is absent."""

from __future__ import annotations

import json
import time
from pathlib import Path

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
from agentport.testing import ALLOW_ENV, FakeModelServer, Hang, ToolCallReply

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


async def test_steer_reaches_the_running_turn(tmp_path: Path) -> None:
    with FakeModelServer(default="steered answer") as server:
        options = {"codex": cli_options("codex", server, tmp_path / "home")}
        server.reply(ToolCallReply("exec_command", {"cmd": "sleep 3"}, then="not steered"))
        async with create_agent_runtime("codex", model="fake-model", **options) as rt:
            events: list[AgentEvent] = []
            said: list[SteerResult] = []
            async with anyio.create_task_group() as tg:

                async def once_the_tool_runs() -> None:
                    with anyio.fail_after(60):
                        # the events list is plain state, no event to wait on
                        while not any(e.type is EventType.tool_call for e in events):  # noqa: ASYNC110
                            await anyio.sleep(0.05)
                    said.append(rt.steer("MARK-STEER answer in one word"))

                tg.start_soon(once_the_tool_runs)
                async for event in rt.send("run the sleep", _CONFIG):
                    events.append(event)
            assert said == [SteerResult.applied_now]
            assert events[-1].type is EventType.final, events[-1]
            bodies = [json.dumps(r.body) for r in server.model_requests]
            server.reply("next answer")
            after = [e async for e in rt.send("and now?", _CONFIG)]
    # one turn, two model requests: the second (after the tool) carries the steer text
    assert len(bodies) == 2
    assert "MARK-STEER" not in bodies[0]
    assert "MARK-STEER" in bodies[1]
    assert events[-1].content == "steered answer"
    assert after[-1].content == "next answer"
    # applied once: the next turn does not lead with it again
    last = server.model_requests[-1].body["input"]
    assert sum("MARK-STEER" in json.dumps(item) for item in last) == 1


async def test_interrupt_is_turn_interrupt_and_the_thread_resumes(tmp_path: Path) -> None:
    with FakeModelServer(default="fallback") as server:
        options = {"codex": cli_options("codex", server, tmp_path / "home")}
        async with create_agent_runtime("codex", model="fake-model", **options) as rt:
            server.reply("first answer MARK-A1")
            [e async for e in rt.send("first question", _CONFIG)]
            session = rt.handle.session_id
            server.reply(Hang())
            events: list[AgentEvent] = []
            asked = 0.0
            async with anyio.create_task_group() as tg:

                async def once_waiting() -> None:
                    nonlocal asked
                    with anyio.fail_after(60):
                        while len(server.model_requests) < 2:  # noqa: ASYNC110
                            await anyio.sleep(0.05)
                    await anyio.sleep(0.3)  # codex has named its turn
                    asked = time.monotonic()
                    assert rt.interrupt() is True

                tg.start_soon(once_waiting)
                async for event in rt.send("second question", _CONFIG):
                    events.append(event)
            took = time.monotonic() - asked
            server.reply("third answer")
            third = [e async for e in rt.send("third question", _CONFIG)]
    assert events[-1].metadata["error"].kind is ErrorKind.interrupted
    ended = [e.raw for e in events if isinstance(e.raw, dict) and e.raw.get("method")]
    statuses = [r["params"]["turn"]["status"] for r in ended if r["method"] == "turn/completed"]
    assert statuses == ["interrupted"]  # codex ended the turn itself: not a killed process
    assert took < 5, took
    print(f"interrupt() -> turn end: {took:.2f}s")
    assert third[-1].content == "third answer"
    assert rt.handle.session_id == session
    assert "MARK-A1" in json.dumps(server.model_requests[-1].body)


async def test_fork_is_thread_fork(tmp_path: Path) -> None:
    with FakeModelServer(default="fallback") as server:
        options = {"codex": cli_options("codex", server, tmp_path / "home")}
        async with create_agent_runtime("codex", model="fake-model", **options) as rt:
            server.reply("first answer MARK-F1")
            [e async for e in rt.send("first question", _CONFIG)]
            original = rt.handle.session_id
            server.reply("forked answer")
            async with rt.fork() as forked:
                events = [e async for e in forked.send("in the fork MARK-IN-FORK", _CONFIG)]
            assert events[-1].content == "forked answer", events[-1]
            assert "MARK-F1" in json.dumps(server.model_requests[-1].body)
            assert forked.handle.session_id not in (None, original)
            server.reply("original goes on")
            again = [e async for e in rt.send("in the original", _CONFIG)]
    assert again[-1].content == "original goes on"
    assert rt.handle.session_id == original
    last = json.dumps(server.model_requests[-1].body)
    assert "MARK-F1" in last
    assert "MARK-IN-FORK" not in last
