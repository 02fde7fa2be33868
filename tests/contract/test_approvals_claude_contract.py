"""Typed approvals against the REAL claude (as CI installs it) answering from FakeModelServer
on 127.0.0.1: the model calls Bash, claude asks its permission prompt tool
(`--permission-prompt-tool`), an MCP server agentport serves for the call on loopback with a
per-call token, which asks the caller's hook. Allow -> the command ran; deny or a missed
deadline -> it never ran, the runtime streamed a typed `permission_denied` event, and the
model's next request carried the refusal. Skipped when the binary is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from _more_clis_util import MARKER_ENV, cli_executable, new_marker
from agentport.core import (
    Allow,
    CompletionConfig,
    Deny,
    EventType,
    PermissionKind,
    PermissionRequest,
    Sandbox,
    ToolPolicy,
)
from agentport.factory import create_agent_runtime
from agentport.testing import FakeModelServer, ToolCallReply

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    pytest.importorskip("mcp", reason="the approval server needs the mcp extra")
    exe = cli_executable("claude")
    if exe is None:
        pytest.skip("claude not installed (.ci/steps/20-agent-clis)")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return {"executable": str(exe), "api_key": "test-key", "env": {MARKER_ENV: new_marker()}}


async def _run(
    options: dict[str, Any], work: Path, hook: Any, tools: ToolPolicy, **cfg: Any
) -> tuple[list[Any], list[PermissionRequest], list[str]]:
    asked: list[PermissionRequest] = []

    async def recording(request: PermissionRequest) -> Any:
        asked.append(request)
        return await hook(request)

    bash = {"command": "touch made.txt", "description": "make a file"}
    with FakeModelServer(default="hello") as server:
        server.reply(ToolCallReply("Bash", bash, then="tool done"))
        options = {**options, "base_url": server.anthropic_base_url}
        config = CompletionConfig(
            cwd=work, tools=tools, on_permission=recording, idle_timeout_s=60,
            total_timeout_s=120, **cfg,
        )  # fmt: skip
        async with create_agent_runtime("claude", claude=options) as runtime:
            events = [e async for e in runtime.send("make a file", config)]
        bodies = [json.dumps(r.body) for r in server.model_requests]
    return events, asked, bodies


@pytest.mark.parametrize(
    "tools",
    [ToolPolicy.cli_defaults(), ToolPolicy(allowed_tools=("Bash",), sandbox=Sandbox.full)],
    ids=["cli-defaults", "listed-full"],
)
async def test_claude_asks_the_hook_and_an_allowed_tool_runs(
    options: dict[str, Any], tmp_path: Path, tools: ToolPolicy
) -> None:
    async def allow(request: PermissionRequest) -> Allow:
        return Allow()

    work = tmp_path / "work"
    work.mkdir()
    events, asked, _ = await _run(options, work, allow, tools)
    assert [(r.backend, r.tool, r.kind) for r in asked] == [
        ("claude", "Bash", PermissionKind.execute)
    ], events
    assert "touch made.txt" in asked[0].input_summary
    assert (work / "made.txt").exists()
    assert events[-1].type is EventType.final, events[-1]
    assert not [e for e in events if e.type is EventType.permission_denied]


@pytest.mark.parametrize("how", ["deny", "deadline"])
async def test_claude_denied_tool_never_runs_and_is_a_typed_event(
    options: dict[str, Any], tmp_path: Path, how: str
) -> None:
    async def deny(request: PermissionRequest) -> Deny:
        return Deny("not in this run")

    async def late(request: PermissionRequest) -> Allow:
        await anyio.sleep(60)
        return Allow()

    work = tmp_path / "work"
    work.mkdir()
    hook, cfg = (deny, {}) if how == "deny" else (late, {"permission_timeout_s": 1.0})
    events, asked, bodies = await _run(options, work, hook, ToolPolicy.cli_defaults(), **cfg)
    assert len(asked) == 1, events
    assert not (work / "made.txt").exists()
    denied = [e for e in events if e.type is EventType.permission_denied]
    assert len(denied) == 1
    reason = denied[0].metadata["reason"]
    assert reason == "not in this run" if how == "deny" else "within 1s" in reason
    assert reason in bodies[-1]  # the model heard why
    assert "agentport_approvals" not in "".join(bodies)  # the prompt tool is not the model's
    assert events[-1].type is EventType.final, events[-1]
