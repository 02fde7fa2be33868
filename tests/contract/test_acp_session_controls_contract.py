"""Session controls of the ACP runtime against the REAL agents (`gemini --acp`, `qwen --acp`,
`opencode acp`, `copilot --acp`) answering from FakeModelServer on 127.0.0.1 (loopback only:
scripts/test.sh): `interrupt()` sends `session/cancel` while the model request hangs, the turn
ends `interrupted` and the next turn goes on in the same session with the same agent;
`fork()` continues a copy of the session (`session/fork`) where the agent offers it and is
refused (`unsupported`) where it does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_runtime_steer_interrupt import _interrupt_when

from _acp_agents import AGENTS, acp_options
from _more_clis_util import MARKER_ENV, live_processes, network_isolated, new_marker
from agentport.core import ErrorKind, EventType
from agentport.factory import create_agent_runtime
from agentport.testing import FakeModelServer, Hang

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.contract,
    pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)"),
]


#: the pinned agents whose `initialize` answer offers `sessionCapabilities.fork`
FORKING = {"opencode"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Any:
    with FakeModelServer(default="fallback") as srv:
        yield srv


def _options(agent: str, server: FakeModelServer, tmp_path: Path, mp: pytest.MonkeyPatch) -> Any:
    found = acp_options(agent, server, tmp_path / "home")
    if found is None:
        pytest.skip(f"{agent} CLI not installed (.ci/steps/21-more-agent-clis)")
    mp.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    found["env"][MARKER_ENV] = new_marker()
    return found


@pytest.mark.parametrize("agent", AGENTS)
async def test_interrupt_cancels_the_prompt_and_the_session_goes_on(
    agent: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = _options(agent, server, tmp_path, monkeypatch)
    async with create_agent_runtime("acp", acp=options) as rt:
        assert rt.interrupt() is False  # no agent, no turn
        server.reply("first answer MARK-A1")
        first = [e async for e in rt.send("first question")]
        assert first[-1].type is EventType.final, first[-1]
        session = rt.handle.session_id
        pid = first[-1].metadata["response"].raw.extra["pid"]
        assert rt.interrupt() is False  # between turns
        server.reply(Hang())
        waiting = len(server.model_requests)

        def reached() -> bool:
            return len(server.model_requests) > waiting

        events, took = await _interrupt_when(rt, "second question", reached, first_s=0)
        assert reached(), "the hung request never started"
        error = events[-1].metadata["error"]
        assert error.kind is ErrorKind.interrupted, error
        assert error.details["session_id"] == session
        # the agent itself ended the prompt turn (stopReason cancelled) within its grace
        assert error.details["confirmed"] is True, error
        assert took < 5
        server.reply("third answer")
        third = [e async for e in rt.send("third question")]
        assert third[-1].type is EventType.final, third[-1]
        assert third[-1].content == "third answer"
        assert rt.handle.session_id == session
        assert third[-1].metadata["response"].raw.extra["pid"] == pid  # the same agent
        assert "MARK-A1" in json.dumps(server.model_requests[-1].body)  # the same session
    assert live_processes(options["env"][MARKER_ENV]) == []


@pytest.mark.parametrize("agent", AGENTS)
async def test_fork_copies_the_session_where_the_agent_offers_it(
    agent: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = _options(agent, server, tmp_path, monkeypatch)
    async with create_agent_runtime("acp", acp=options) as rt:
        with pytest.raises(ValueError, match="run a turn first"):
            rt.fork()
        server.reply("first answer MARK-F1")
        first = [e async for e in rt.send("first question")]
        assert first[-1].type is EventType.final, first[-1]
        original = rt.handle.session_id
        offered = first[-1].metadata["response"].raw.extra["agent_capabilities"]
        forks = "fork" in (offered.get("sessionCapabilities") or {})
        assert forks == (agent in FORKING), (agent, offered)  # what the pinned agents offer
        server.reply("forked answer")
        asked = len(server.model_requests)
        async with rt.fork() as forked:
            events = [e async for e in forked.send("in the fork")]
        if not forks:
            error = events[-1].metadata["error"]
            assert error.kind is ErrorKind.unsupported, error
            assert error.details["params"] == ["fork"]
            assert len(server.model_requests) == asked  # refused before any model request
            return
        assert events[-1].type is EventType.final, events[-1]
        assert events[-1].content == "forked answer"
        assert "MARK-F1" in json.dumps(server.model_requests[-1].body)  # the copied history
        assert forked.handle.session_id not in (None, original)
        server.reply("original goes on")
        again = [e async for e in rt.send("in the original")]
        assert again[-1].content == "original goes on", again[-1]
        assert rt.handle.session_id == original
        assert "in the fork" not in json.dumps(server.model_requests[-1].body)
    assert live_processes(options["env"][MARKER_ENV]) == []
