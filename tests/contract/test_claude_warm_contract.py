"""Warm processes against the REAL claude (as .ci/steps/20-agent-clis installs it), configured
as its docs tell users to reach an endpoint (`ANTHROPIC_BASE_URL` + `ANTHROPIC_API_KEY`, here
through `[llm.claude] base_url / api_key`), answering from FakeModelServer on 127.0.0.1.

Checked: two warm calls run on one claude process, and the second call's model request carries
nothing of the first (claude's `/clear` in stream-json input starts a new conversation); a
large answer arrives whole from a warm process (a one-shot claude loses the end of one on a
pipe at exit); `--max-turns` (a start-time flag) gives each warm call the whole budget again
and still stops a call that needs more; nothing is left after `aclose()`. Skipped when the
binary is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from _more_clis_util import MARKER_ENV, cli_executable, live_processes, new_marker
from agentport.core import CompletionConfig, Message, ToolPolicy
from agentport.factory import create_llm_adapter
from agentport.testing import FakeModelServer, LargeReply, ToolCallReply

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    exe = cli_executable("claude")
    if exe is None:
        pytest.skip("claude not installed (.ci/steps/20-agent-clis)")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return {"executable": str(exe), "api_key": "test-key", "env": {MARKER_ENV: new_marker()}}


def _bodies(server: FakeModelServer) -> list[str]:
    return [json.dumps(r.body) for r in server.model_requests]


async def test_claude_warm_calls_share_one_process_and_no_conversation(
    options: dict[str, Any],
) -> None:
    with FakeModelServer() as server:
        server.script("first answer", "second answer")
        options["base_url"] = server.anthropic_base_url
        adapter = create_llm_adapter("claude", retry=False, warm=1, claude=options)
        one = (await adapter.complete([Message.user("remember the word pineapple")])).unwrap()
        two = (await adapter.complete([Message.user("which word did I say?")])).unwrap()
        bodies = _bodies(server)
        marker = options["env"][MARKER_ENV]
        assert live_processes(marker) != []  # kept warm
        await adapter.aclose()
    assert (one.content, two.content) == ("first answer", "second answer")
    assert one.raw is not None
    assert two.raw is not None
    assert one.raw.extra["pid"] == two.raw.extra["pid"]
    assert one.raw.session_id != two.raw.session_id
    assert len(bodies) == 2
    assert "pineapple" in bodies[0]
    assert "which word" in bodies[1]
    assert "pineapple" not in bodies[1]  # the second conversation starts empty
    assert live_processes(marker) == []


async def test_claude_warm_process_delivers_a_large_answer_whole(
    options: dict[str, Any],
) -> None:
    size = 2 << 20
    with FakeModelServer() as server:
        server.script("small", LargeReply(size))
        options["base_url"] = server.anthropic_base_url
        adapter = create_llm_adapter("claude", retry=False, warm=1, claude=options)
        first = (await adapter.complete([Message.user("warm up")])).unwrap()
        large = (await adapter.complete([Message.user("a long one")])).unwrap()
        await adapter.aclose()
    assert first.content == "small"
    assert len(large.content) == size
    assert live_processes(options["env"][MARKER_ENV]) == []


async def test_claude_warm_max_turns_counts_each_call_afresh(options: dict[str, Any]) -> None:
    # `--max-turns` is given once, at the process's start: each call on a warm process gets
    # the whole budget again, and a call that needs more is still stopped by it
    bash = {"command": "echo hi", "description": "greet"}
    config = CompletionConfig(
        max_turns=2, tools=ToolPolicy(allowed_tools=("Bash",)), total_timeout_s=90
    )
    with FakeModelServer() as server:
        options["base_url"] = server.anthropic_base_url
        adapter = create_llm_adapter("claude", retry=False, warm=1, claude=options)
        answers = []
        for n in range(3):
            server.reply(ToolCallReply("Bash", bash, then=f"done {n}"))
            answers.append((await adapter.complete([Message.user(f"greet {n}")], config)).unwrap())
        server.reply(ToolCallReply("Bash", bash, then=ToolCallReply("Bash", bash, then="late")))
        over = await adapter.complete([Message.user("greet twice")], config)
        await adapter.aclose()
    assert [a.content for a in answers] == ["done 0", "done 1", "done 2"]
    pids = {a.raw.extra["pid"] for a in answers if a.raw is not None}
    assert len(pids) == 1  # all three on one warm process
    assert isinstance(over, Failure)
    assert over.failure().message.startswith("turn limit reached")
