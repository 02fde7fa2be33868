"""Typed approvals against REAL ACP agents (`gemini --acp`, `qwen --acp`, `opencode acp`,
`copilot --acp`, as CI installs them) answering from FakeModelServer on 127.0.0.1: the model
calls the agent's shell tool, the agent asks `session/request_permission`, the caller's hook
decides. Allow -> the command ran (its file exists); deny -> it never ran and the runtime
streamed a typed `permission_denied` event; a hook past its deadline -> deny.
An agent whose binary is absent is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from _acp_agents import AGENTS, acp_options
from _more_clis_util import MARKER_ENV, new_marker
from agentport.core import (
    Allow,
    CompletionConfig,
    Deny,
    ErrorKind,
    EventType,
    PermissionKind,
    PermissionRequest,
    ToolPolicy,
)
from agentport.factory import create_agent_runtime
from agentport.testing import FakeModelServer, ToolCallReply

pytestmark = [pytest.mark.anyio, pytest.mark.contract]

# each agent's shell tool and its arguments (the names its model is offered)
_SHELL: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "gemini": ("run_shell_command", {}, "gemini"),
    "qwen": ("run_shell_command", {"description": "make a file"}, None),
    "opencode": ("bash", {"description": "make a file"}, None),
    "copilot": ("bash", {"description": "make a file"}, None),
}


# what each agent does after a refused permission (measured): gemini tells the model and
# goes on; qwen and opencode end the turn; copilot ends it with "Info: Operation cancelled by
# user" as its own text (stopReason end_turn)
_GOES_ON = {"gemini": True, "qwen": False, "opencode": False, "copilot": False}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Any:
    with FakeModelServer(default="hello from the fake model") as srv:
        yield srv


@pytest.fixture(params=AGENTS)
def agent(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: FakeModelServer,
) -> tuple[str, dict[str, Any]]:
    found = acp_options(request.param, server, tmp_path / "home")
    if found is None:
        pytest.skip(f"{request.param} CLI not installed (.ci/steps/2x-agent-clis)")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    found["env"][MARKER_ENV] = new_marker()
    if request.param == "opencode":  # it asks only where its own config says "ask"
        config = json.loads(found["env"]["OPENCODE_CONFIG_CONTENT"])
        config["permission"] = {"bash": "ask", "edit": "ask", "webfetch": "ask"}
        found["env"]["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
    return str(request.param), found


async def _run(
    agent: tuple[str, dict[str, Any]], server: FakeModelServer, work: Path, hook: Any, **cfg: Any
) -> tuple[list[Any], list[PermissionRequest]]:
    name, options = agent
    tool, extra, api = _SHELL[name]
    args = {"command": "touch made.txt", **extra}
    if api:
        server.reply(ToolCallReply(tool, args, then="tool done"), api=api)
    else:
        server.reply(ToolCallReply(tool, args, then="tool done"))
    asked: list[PermissionRequest] = []

    async def recording(request: PermissionRequest) -> Any:
        asked.append(request)
        return await hook(request)

    config = CompletionConfig(
        cwd=work,
        tools=ToolPolicy.cli_defaults(),
        on_permission=recording,
        idle_timeout_s=60,
        total_timeout_s=120,
        **cfg,
    )
    async with create_agent_runtime("acp", acp=options) as runtime:
        events = [e async for e in runtime.send("make a file", config)]
    return events, asked


async def test_an_allowed_tool_runs_after_the_hook_was_asked(
    agent: tuple[str, dict[str, Any]], server: FakeModelServer, tmp_path: Path
) -> None:
    async def allow(request: PermissionRequest) -> Allow:
        return Allow()

    work = tmp_path / "work"
    work.mkdir()
    events, asked = await _run(agent, server, work, allow)
    assert len(asked) == 1, events
    assert asked[0].backend == "acp"
    assert asked[0].kind is PermissionKind.execute
    assert "touch made.txt" in asked[0].input_summary + asked[0].tool
    assert (work / "made.txt").exists()
    assert not [e for e in events if e.type is EventType.permission_denied]
    assert events[-1].type is EventType.final, events[-1]
    assert events[-1].metadata["response"].warnings == ()


async def test_an_agent_that_runs_a_tool_without_asking_is_named_in_the_warnings(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # opencode's `permission` defaults to allow: it never asks, so the hook cannot decide;
    # the answer says so instead of passing for an approved run
    options = acp_options("opencode", server, tmp_path / "home")
    if options is None:
        pytest.skip("opencode CLI not installed")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    options["env"][MARKER_ENV] = new_marker()

    async def deny(request: PermissionRequest) -> Deny:
        return Deny("never")

    work = tmp_path / "work"
    work.mkdir()
    events, asked = await _run(("opencode", options), server, work, deny)
    assert asked == []
    warnings = events[-1].metadata["response"].warnings
    assert any("without asking permission" in w and "bash" in w for w in warnings), warnings


@pytest.mark.parametrize("how", ["deny", "deadline"])
async def test_a_denied_tool_never_runs_and_is_a_typed_event(
    agent: tuple[str, dict[str, Any]], server: FakeModelServer, tmp_path: Path, how: str
) -> None:
    async def deny(request: PermissionRequest) -> Deny:
        return Deny("not in this run")

    async def late(request: PermissionRequest) -> Allow:
        await anyio.sleep(60)
        return Allow()

    work = tmp_path / "work"
    work.mkdir()
    hook, cfg = (deny, {}) if how == "deny" else (late, {"permission_timeout_s": 1.0})
    events, asked = await _run(agent, server, work, hook, **cfg)
    assert len(asked) == 1, events
    assert not (work / "made.txt").exists()
    denied = [e for e in events if e.type is EventType.permission_denied]
    assert len(denied) == 1
    reason = denied[0].metadata["reason"]
    assert reason == "not in this run" if how == "deny" else "within 1s" in reason
    last = events[-1]
    if _GOES_ON[agent[0]]:  # the model hears the refusal and answers
        assert last.type is EventType.final, last
        assert last.content == "tool done"
    else:  # the agent ends its turn on the refusal: a typed failure, not an answer
        assert last.type is EventType.error, last
        assert last.metadata["error"].kind is ErrorKind.permission_denied
