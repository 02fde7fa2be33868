"""Typed approvals against the REAL codex (as CI installs it) answering from FakeModelServer
on 127.0.0.1: a call with an approval hook runs on `codex app-server` with
`approval_policy = "on-request"`; the model runs its shell tool with escalated permissions
(`sandbox_permissions: "require_escalated"`, the form codex's tool offers), codex sends
`item/commandExecution/requestApproval`, the hook decides. Allow -> the command ran; deny or
a missed deadline -> it never ran (no marker file) and one typed `permission_denied` event
streamed; a sandbox the call's ToolPolicy names holds without asking the hook. Skipped when
the binary is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from _more_clis_util import MARKER_ENV, cli_executable, network_isolated, new_marker
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
from agentport.factory import create_agent_runtime, create_llm_adapter
from agentport.testing import FakeModelServer, ToolCallReply

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.contract,
    pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    exe = cli_executable("codex")
    if exe is None:
        pytest.skip("codex not installed (.ci/steps)")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return {"executable": str(exe), "api_key": "test-key", "env": {MARKER_ENV: new_marker()}}


_ESCALATED = {
    "cmd": "touch made.txt",
    "sandbox_permissions": "require_escalated",
    "justification": "make the file",
}


async def _run(
    options: dict[str, Any], work: Path, hook: Any, tools: ToolPolicy, **cfg: Any
) -> tuple[list[Any], list[PermissionRequest], list[str]]:
    asked: list[PermissionRequest] = []

    async def recording(request: PermissionRequest) -> Any:
        asked.append(request)
        return await hook(request)

    with FakeModelServer(default="hello") as server:
        server.reply(ToolCallReply("exec_command", _ESCALATED, then="tool done"))
        options = {**options, "base_url": server.openai_base_url}
        config = CompletionConfig(
            cwd=work, tools=tools, on_permission=recording, idle_timeout_s=60,
            total_timeout_s=120, **cfg,
        )  # fmt: skip
        async with create_agent_runtime("codex", codex=options) as runtime:
            events = [e async for e in runtime.send("make a file", config)]
        bodies = [json.dumps(r.body) for r in server.model_requests]
    return events, asked, bodies


async def _allow(request: PermissionRequest) -> Allow:
    return Allow()


async def test_codex_asks_the_hook_and_an_allowed_command_runs(
    options: dict[str, Any], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    events, asked, _ = await _run(options, work, _allow, ToolPolicy.cli_defaults())
    assert [(r.backend, r.tool, r.kind) for r in asked] == [
        ("codex", "command_execution", PermissionKind.execute)
    ], events
    assert "touch made.txt" in asked[0].input_summary
    assert asked[0].call_id
    assert (work / "made.txt").exists()
    assert events[-1].type is EventType.final, events[-1]
    assert not [e for e in events if e.type is EventType.permission_denied]


@pytest.mark.parametrize("how", ["deny", "deadline"])
async def test_codex_denied_command_never_runs_and_is_a_typed_event(
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
    assert denied[0].metadata["request"] is asked[0]
    assert len(bodies) == 2  # the model was told and answered
    assert events[-1].type is EventType.final, events[-1]


@pytest.mark.parametrize("sandbox", [Sandbox.read_only, Sandbox.workspace_write])
async def test_a_named_sandbox_holds_without_asking_the_hook(
    options: dict[str, Any], tmp_path: Path, sandbox: Sandbox
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    events, asked, _ = await _run(options, work, _allow, ToolPolicy(sandbox=sandbox))
    assert asked == []  # the hook only narrows: leaving the sandbox is not its to allow
    assert not (work / "made.txt").exists()
    denied = [e for e in events if e.type is EventType.permission_denied]
    assert [d.metadata["reason"] for d in denied] == [
        "the call's ToolPolicy does not allow this tool"
    ]


async def test_a_completion_call_asks_the_hook_too(options: dict[str, Any], tmp_path: Path) -> None:
    """Outside a runtime (`complete()`, one process per call) the same path asks."""
    from agentport.core import Message

    work = tmp_path / "work"
    work.mkdir()
    asked: list[PermissionRequest] = []

    def sync_deny(request: PermissionRequest) -> Deny:  # a sync hook runs in a thread
        asked.append(request)
        return Deny("no")

    with FakeModelServer(default="hello") as server:
        server.reply(ToolCallReply("exec_command", _ESCALATED, then="tool done"))
        llm = create_llm_adapter(
            "codex", retry=False, codex={**options, "base_url": server.openai_base_url}
        )
        config = CompletionConfig(
            cwd=work, tools=ToolPolicy.cli_defaults(), on_permission=sync_deny,
            idle_timeout_s=60, total_timeout_s=120,
        )  # fmt: skip
        response = (await llm.complete([Message.user("make a file")], config)).unwrap()
    assert response.content == "tool done"
    assert len(asked) == 1
    assert not (work / "made.txt").exists()
