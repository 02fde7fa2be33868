"""The native session controls without a CLI: codex's app-server dialogue (`AppTurn`)
answers approval requests through the one approvals path and offers steer/interrupt only
while codex has a running turn; claude writes a steer only while a tool of the turn runs
and hands back what claude did not take; pi's rpc turn offers steer/abort until
`agent_end`. The real CLIs: tests/test_*_session_controls_contract.py,
tests/contract/test_claude_steer_contract.py, tests/contract/test_approvals_codex_contract.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentport.backends import CliCall
from agentport.backends._codex_app import AppTurn, exec_line
from agentport.backends._turn_control import CURRENT_TURN, TurnControl
from agentport.core import Allow, CompletionConfig, Deny, EventType, Sandbox, ToolPolicy

pytestmark = pytest.mark.anyio


def _call(tmp_path: Path, **cfg: Any) -> CliCall:
    config = CompletionConfig(**cfg)
    return CliCall(
        executable="cli", prompt="p", system_prompt=None, config=config, schema=None,
        options={}, run_dir=tmp_path, cwd=tmp_path, session_id=None,
    )  # fmt: skip


def _ask(method: str = "item/commandExecution/requestApproval") -> dict[str, Any]:
    params = {"threadId": "T", "turnId": "U", "itemId": "i1", "command": "touch x"}
    return {"id": 7, "method": method, "params": params}


@pytest.mark.parametrize(
    ("sandbox", "answer", "asked", "decision"),
    [
        (None, Allow(), 1, "accept"),
        (None, Deny("no"), 1, "decline"),
        (Sandbox.full, Allow(), 1, "accept"),
        (Sandbox.read_only, Allow(), 0, "decline"),  # a named sandbox holds
        (Sandbox.workspace_write, Allow(), 0, "decline"),
    ],
)
async def test_codex_approval_requests_go_through_the_one_path(
    tmp_path: Path, sandbox: Sandbox | None, answer: Any, asked: int, decision: str
) -> None:
    seen: list[Any] = []

    def hook(request: Any) -> Any:
        seen.append(request)
        return answer

    tools = ToolPolicy(sandbox=sandbox) if sandbox else ToolPolicy.cli_defaults()
    turn = AppTurn(_call(tmp_path, tools=tools, on_permission=hook))
    message = _ask()
    reply = await turn.replies(message)  # type: ignore[misc]
    assert json.loads(reply) == {"id": 7, "result": {"decision": decision}}
    assert len(seen) == asked
    event = exec_line(message)
    if decision == "decline":
        assert getattr(event, "type", None) is EventType.permission_denied
    else:
        assert event is None


def test_codex_requests_without_a_hook_are_refused_never_left_waiting(tmp_path: Path) -> None:
    turn = AppTurn(_call(tmp_path))
    for method in ("item/commandExecution/requestApproval", "item/tool/requestUserInput"):
        reply = turn.replies(_ask(method))
        assert isinstance(reply, bytes)
        assert json.loads(reply)["error"]["code"] == -32601


def test_codex_steers_only_a_running_turn_and_hands_back_a_refused_steer(tmp_path: Path) -> None:
    control = TurnControl()
    token = CURRENT_TURN.set(control)
    try:
        turn = AppTurn(_call(tmp_path))
    finally:
        CURRENT_TURN.reset(token)
    assert control.steer is not None
    assert control.interrupt is not None
    assert control.steer("x") is None  # codex has not named its thread and turn yet
    started = turn.replies({"id": "agentport-thread", "result": {"thread": {"id": "T"}}})
    assert b"turn/start" in (started or b"")
    turn.replies({"method": "turn/started", "params": {"turn": {"id": "U"}}})
    steer = json.loads(control.steer("go left") or b"null")
    assert steer["params"] == {
        "threadId": "T", "expectedTurnId": "U", "input": [{"type": "text", "text": "go left"}]
    }  # fmt: skip
    assert json.loads(control.interrupt() or b"null")["params"] == {"threadId": "T", "turnId": "U"}
    refused = {"id": steer["id"], "error": {"code": -32600, "message": "no active turn"}}
    turn.replies(refused)
    assert control.refused == ["go left"]
    warning = exec_line(refused)
    assert getattr(warning, "end", None) is not None
    assert warning.end.warning
    turn.replies({"method": "turn/completed", "params": {"turn": {"id": "U"}}})
    assert control.steer("late") is None
    assert control.interrupt() is None


def test_claude_writes_a_steer_only_while_a_tool_runs(tmp_path: Path) -> None:
    from agentport.backends import claude

    control = TurnControl()
    token = CURRENT_TURN.set(control)
    try:
        invocation = claude.build(_call(tmp_path))
    finally:
        CURRENT_TURN.reset(token)
    assert "--input-format=stream-json" in invocation.argv
    assert "--replay-user-messages" in invocation.argv
    replies = invocation.replies
    assert replies is not None
    assert control.steer is not None
    assert control.steer("early") is None  # no tool runs: the runtime queues it
    replies({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1"}]}})
    assert control.steer("taken") is not None
    assert control.steer("not taken") is not None
    echo = {"type": "user", "message": {"content": [{"type": "text", "text": "taken"}]}}
    replies(
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1"}]}}
    )
    replies(echo)
    assert control.steer("after the tool") is None
    replies({"type": "result"})
    assert control.refused == ["not taken"]  # leads the next turn


def test_pi_rpc_turn_offers_steer_and_abort_until_agent_end(tmp_path: Path) -> None:
    from agentport.backends import pi

    control = TurnControl()
    token = CURRENT_TURN.set(control)
    try:
        invocation = pi.build(_call(tmp_path))
    finally:
        CURRENT_TURN.reset(token)
    assert "rpc" in invocation.argv
    assert "-p" not in invocation.argv
    assert control.steer is not None
    assert control.interrupt is not None
    assert json.loads(control.steer("x") or b"null") == {"type": "steer", "message": "x"}
    assert json.loads(control.interrupt() or b"null") == {"type": "abort"}
    assert invocation.replies is not None
    invocation.replies({"type": "agent_end"})
    assert control.steer("x") is None
    assert control.interrupt() is None
    assert "rpc" not in pi.build(_call(tmp_path)).argv  # outside a runtime: `--mode json`
