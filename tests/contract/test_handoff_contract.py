"""Handoff between REAL CLIs against FakeModelServer on 127.0.0.1: a session on one backend
(turns with a tool call where the CLI runs one headless) is continued on another, and the
second backend's first model request carries the transcript: the earlier answers, the tool's
output in short form, the working folder and the open question. Loopback only: run under
`unshare -n` (scripts/test.sh).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _more_clis_util import network_isolated
from _session_util import cli_options, model_for
from agentport import create_agent_runtime, handoff
from agentport.core import CompletionConfig, EventType, Sandbox, ToolPolicy, TurnKind
from agentport.testing import ALLOW_ENV, FakeModelServer, ToolCallReply

pytestmark = [
    pytest.mark.contract,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not network_isolated(), reason="run under `unshare -n` (loopback only) to reach no host"
    ),
]

# a tool the CLI runs headless, with the policy that lets it (None: the pair's source
# session has text turns only)
_TOOL: dict[str, tuple[str, dict[str, Any], ToolPolicy] | None] = {
    "claude": ("Bash", {"command": "echo tool-says-MARK-T", "description": "greet"},
               ToolPolicy(allowed_tools=("Bash",), sandbox=None)),
    "codex": ("exec_command", {"cmd": "echo tool-says-MARK-T"}, ToolPolicy.cli_defaults()),
    "gemini": ("run_shell_command", {"command": "echo tool-says-MARK-T"},
               ToolPolicy(allowed_tools=None, sandbox=Sandbox.full)),
    "pi": ("bash", {"command": "echo tool-says-MARK-T"},
           ToolPolicy(allowed_tools=("bash", "read"))),
}  # fmt: skip
PAIRS = [
    ("claude", "codex"), ("codex", "gemini"), ("gemini", "opencode"), ("pi", "claude"),
    ("opencode", "qwen"), ("qwen", "copilot"), ("copilot", "pi"),
]  # fmt: skip


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
async def test_the_second_backend_starts_from_the_transcript(
    source: str, target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")
    with FakeModelServer(default="fallback answer") as server:
        options = {
            source: cli_options(source, server, tmp_path / "home-a"),
            target: cli_options(target, server, tmp_path / "home-b"),
        }
        base = {"idle_timeout_s": 30, "total_timeout_s": 120}
        async with create_agent_runtime(source, model=model_for(source), **options) as rt:
            server.reply("first answer MARK-A1")
            first = [e async for e in rt.send("first question MARK-Q1", CompletionConfig(**base))]
            assert first[-1].type is EventType.final, first[-1]
            tool = _TOOL.get(source)
            if tool is not None:
                name, args, policy = tool
                server.reply(ToolCallReply(name, args, then="the tool said MARK-A2"))
                config = CompletionConfig(tools=policy, **base)
                second = [e async for e in rt.send("run the tool MARK-Q2", config)]
                assert second[-1].type is EventType.final, second[-1]
                kinds = [t.kind for t in rt.transcript.turns]
                assert TurnKind.tool_call in kinds
                assert TurnKind.tool_result in kinds
            workdir = rt.transcript.cwd
            before = len(server.model_requests)
            server.reply("continued on the second backend")
            async with handoff(rt, to=target, model=model_for(target), **options) as moved:
                events = [
                    e
                    async for e in moved.send(
                        "what did we find? MARK-OPEN", CompletionConfig(**base)
                    )
                ]
        assert events[-1].type is EventType.final, events[-1]
        assert events[-1].content == "continued on the second backend"
        assert moved.handle.backend == target
        first_request = json.dumps(server.model_requests[before].body)
        for marker in ("MARK-Q1", "MARK-A1", "MARK-OPEN"):
            assert marker in first_request, f"{marker} missing from {target}'s first request"
        if tool is not None:
            assert "tool-says-MARK-T" in first_request  # the tool's output, short form
            assert "MARK-A2" in first_request
        assert workdir is not None
        assert workdir in first_request
        assert moved.warnings == ()  # everything fit the default bound
        # the moved session can be handed over again: its transcript holds every turn
        assert moved.transcript.turns[-1].text == "continued on the second backend"
        assert moved.transcript.backend == source
