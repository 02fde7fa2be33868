"""The ACP backend against a fake ACP agent (tests/fixtures/fake_clis/fake_acp_agent.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from _fake_clis_util import FAKE_CLIS, live_processes_with
from agentport.backends._acp_rpc import rpc_error
from agentport.backends.acp import decode_update, permission_allowed
from agentport.catalog import get_capability
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    EventType,
    LLMAdapter,
    Message,
    Param,
    ParamSupport,
    Sandbox,
    ToolPolicy,
)
from agentport.factory import create_agent_runtime, create_llm_adapter

pytestmark = pytest.mark.anyio
ANSWER = '{"status": "ok", "answer": 42}'
AGENT = FAKE_CLIS / "fake_acp_agent.py"


class Answer(BaseModel):
    status: str
    answer: int


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    path = tmp_path / "received.jsonl"
    monkeypatch.setenv("FAKE_RECORD", str(path))
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")  # the allow-list opt-in
    return path


def received(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def adapter(**options: Any) -> LLMAdapter:
    return create_llm_adapter(
        "acp", retry=False, acp={"command": [sys.executable, str(AGENT)], **options}
    )


# ---------------------------------------------------------------- pure parts


def test_acp_permission_default_allows_reads_only() -> None:
    assert not permission_allowed({"kind": "read"}, ToolPolicy(), Path("/w"))  # no tools
    policy = ToolPolicy.cli_defaults()
    assert permission_allowed({"kind": "read"}, policy, Path("/w"))
    assert not permission_allowed({"kind": "execute"}, policy, Path("/w"))
    assert not permission_allowed({"kind": "edit"}, policy, Path("/w"))


def test_acp_permission_workspace_write_refuses_edits_outside_cwd(tmp_path: Path) -> None:
    policy = ToolPolicy(sandbox=Sandbox.workspace_write)
    inside = {"kind": "edit", "locations": [{"path": str(tmp_path / "a.txt")}]}
    outside = {"kind": "edit", "locations": [{"path": "/etc/passwd"}]}
    escape = {"kind": "edit", "locations": [{"path": "../x"}]}
    assert permission_allowed(inside, policy, tmp_path)
    assert not permission_allowed(outside, policy, tmp_path)
    assert not permission_allowed(escape, policy, tmp_path)
    assert not permission_allowed({"kind": "execute"}, policy, tmp_path)


def test_acp_permission_allowed_tools_must_name_the_tool() -> None:
    policy = ToolPolicy(allowed_tools=("run_shell_command",))
    call = {"kind": "execute", "toolCallId": "run_shell_command__17", "title": "ls"}
    assert permission_allowed(call, policy, Path("/w"))
    assert not permission_allowed({"kind": "edit", "toolCallId": "replace__1"}, policy, Path("/w"))
    none = ToolPolicy(allowed_tools=())
    assert not permission_allowed({"kind": "read"}, none, Path("/w"))
    full_but_listed = ToolPolicy(allowed_tools=("read",), sandbox=Sandbox.full)
    assert not permission_allowed({"kind": "execute"}, full_but_listed, Path("/w"))


def test_acp_rpc_error_with_http_status_code_is_classified_by_status() -> None:
    assert rpc_error({"code": 429, "message": "x"}, "session/prompt").kind is ErrorKind.rate_limited
    assert rpc_error({"code": 500, "message": "x"}, "m").kind is ErrorKind.server_error
    assert rpc_error({"code": -32000, "message": "x"}, "m").kind is ErrorKind.auth_required
    assert rpc_error({"code": -32601, "message": "x"}, "m").kind is ErrorKind.unsupported
    error = rpc_error({"code": -32603, "message": "socket hang up"}, "session/prompt")
    assert error.kind is ErrorKind.network
    assert error.message.startswith("session/prompt:")


def test_acp_tool_updates_become_call_and_result_events() -> None:
    call = decode_update({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "ls",
                          "kind": "execute", "rawInput": {"c": 1}})  # fmt: skip
    assert call is not None
    assert call.type is EventType.tool_call
    assert call.metadata["input"] == {"c": 1}
    running = decode_update({"sessionUpdate": "tool_call_update", "toolCallId": "t",
                             "status": "in_progress"})  # fmt: skip
    assert running is None
    done = decode_update({"sessionUpdate": "tool_call_update", "toolCallId": "t",
                          "status": "failed", "rawOutput": {"err": "no"}})  # fmt: skip
    assert done is not None
    assert done.is_error
    assert json.loads(done.content) == {"err": "no"}
    assert decode_update({"sessionUpdate": "plan", "entries": []}) is None


def test_acp_catalog_claims() -> None:
    cap = get_capability("agent-client-protocol")
    assert cap.name == "acp"
    assert cap.auto_priority is None
    assert cap.support(Param.system_prompt) is ParamSupport.TRANSLATED
    assert cap.support(Param.session_resume) is ParamSupport.NATIVE


# ---------------------------------------------------------------- against the fake agent


async def test_acp_answer_is_the_joined_message_chunks_with_usage(record: Path) -> None:
    result = await adapter().complete([Message.system("be terse"), Message.user("hi")])
    response = result.unwrap()
    assert response.content == ANSWER
    assert response.usage.input_tokens == 10
    assert response.raw.session_id == "sess-1"
    assert response.raw.extra["agent_info"]["name"] == "fake-acp"
    msgs = received(record)
    assert [m["method"] for m in msgs[:3]] == ["initialize", "session/new", "session/prompt"]
    init = msgs[0]["params"]
    assert init["protocolVersion"] == 1
    assert init["clientCapabilities"]["fs"] == {"readTextFile": False, "writeTextFile": False}
    assert Path(msgs[1]["params"]["cwd"]).is_absolute()
    text = msgs[2]["params"]["prompt"][0]["text"]
    assert text.startswith("System instructions:\nbe terse")  # TRANSLATED system prompt


async def test_acp_cwd_is_the_session_cwd(record: Path, tmp_path: Path) -> None:
    await adapter().complete([Message.user("hi")], CompletionConfig(cwd=tmp_path))
    assert received(record)[1]["params"]["cwd"] == str(tmp_path)


@pytest.mark.parametrize(
    ("tools", "option", "allowed"),
    [
        (ToolPolicy(), "cancel", False),
        (ToolPolicy(sandbox=Sandbox.read_only), "cancel", False),
        (ToolPolicy(sandbox=Sandbox.full), "proceed_once", True),
        (ToolPolicy(allowed_tools=("run_shell_command",)), "proceed_once", True),
    ],
)
async def test_acp_permission_requests_are_answered_from_the_tool_policy(
    record: Path,
    monkeypatch: pytest.MonkeyPatch,
    tools: ToolPolicy,
    option: str,
    allowed: bool,
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "tool")
    result = await adapter().complete([Message.user("make a file")], CompletionConfig(tools=tools))
    response = result.unwrap()
    answers = [m for m in received(record) if "result" in m]
    assert answers[0]["result"]["outcome"] == {"outcome": "selected", "optionId": option}
    assert response.raw.extra["permissions"][0]["allowed"] is allowed


async def test_acp_rpc_error_429_is_rate_limited(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "error429")
    error = (await adapter().complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.rate_limited
    assert error.status == 429
    assert error.backend == "acp"


async def test_acp_auth_required_unless_an_auth_method_is_configured(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "auth")
    error = (await adapter().complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.auth_required
    response = (await adapter(auth_method="api-key").complete([Message.user("hi")])).unwrap()
    assert response.content == ANSWER
    methods = [m.get("method") for m in received(record)]
    assert methods.count("authenticate") == 1
    assert [m.get("params") for m in received(record) if m.get("method") == "authenticate"] == [
        {"methodId": "api-key"}
    ]


@pytest.mark.parametrize("scenario", ["crash", "exit_at_init"])
async def test_acp_agent_that_dies_is_process_failed_with_its_stderr(
    record: Path, monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    error = (await adapter().complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.process_failed
    assert error.exit_code in (2, 3)
    assert ("exploded" if scenario == "crash" else "missing config") in error.stderr_tail
    assert (error.request_sent, error.mid_stream) == (None, False)  # nothing of the model's


@pytest.mark.parametrize("scenario", ["crash", "exit_at_init"])
async def test_a_dead_agents_stderr_is_read_to_its_end_even_when_read_late(
    record: Path, monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    # under load the stderr reader can run after stdout's end was seen: the error still
    # carries what the agent wrote before it died
    from agentport.backends._acp_rpc import AgentConnection

    drain = AgentConnection._drain

    async def late(self: AgentConnection, *args: Any) -> None:
        await anyio.sleep(0.2)
        await drain(self, *args)

    monkeypatch.setattr(AgentConnection, "_drain", late)
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    error = (await adapter().complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.process_failed
    assert ("exploded" if scenario == "crash" else "missing config") in error.stderr_tail


async def test_acp_agent_dying_mid_answer_failed_mid_stream(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "crash_mid")
    error = (await adapter().complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.process_failed
    assert (error.request_sent, error.mid_stream) == (True, True)


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [("refusal", ErrorKind.content_filter), ("max_turns", ErrorKind.process_failed)],
)
async def test_acp_stop_reasons_other_than_end_turn_fail(
    record: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, kind: ErrorKind
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    assert (await adapter().complete([Message.user("hi")])).failure().kind is kind


async def test_acp_stdout_noise_does_not_break_the_protocol(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "noisy")
    assert (await adapter().complete([Message.user("hi")])).unwrap().content == ANSWER


async def test_acp_silent_agent_times_out_and_leaves_no_process(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    config = CompletionConfig(idle_timeout_s=1.0, total_timeout_s=30)
    error = (await adapter(grace_s=0.5).complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert error.timeout == "idle"
    assert live_processes_with(str(record)) == []


async def test_acp_total_timeout(record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    config = CompletionConfig(idle_timeout_s=30, total_timeout_s=1.0)
    error = (await adapter(grace_s=0.5).complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert error.timeout == "total"
    assert live_processes_with(str(record)) == []


async def test_acp_missing_command_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    error = (await create_llm_adapter("acp", retry=False).complete([Message.user("x")])).failure()
    assert error.kind is ErrorKind.config
    missing = create_llm_adapter("acp", retry=False, acp={"command": "no-such-agent --acp"})
    assert (await missing.complete([Message.user("x")])).failure().kind is ErrorKind.not_installed


async def test_acp_model_uses_set_model_only_when_the_agent_lists_models(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = CompletionConfig(model="m-big")
    error = (await adapter().complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.unsupported
    monkeypatch.setenv("FAKE_MODELS", "1")
    response = (await adapter().complete([Message.user("hi")], config)).unwrap()
    assert response.model == "m-big"
    sets = [m["params"] for m in received(record) if m.get("method") == "session/set_model"]
    assert sets == [{"sessionId": "sess-1", "modelId": "m-big"}]


async def test_acp_resume_loads_the_session_when_the_agent_can(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = CompletionConfig(session_id="sess-old")
    error = (await adapter().complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.unsupported  # no loadSession in initialize
    monkeypatch.setenv("FAKE_LOAD", "1")
    response = (await adapter().complete([Message.user("hi")], config)).unwrap()
    assert response.content == ANSWER  # the replayed history is not part of the answer
    assert response.raw.session_id == "sess-old"
    assert "session/new" not in [m.get("method") for m in received(record)[-3:]]


async def test_acp_schema_is_translated_and_validated(record: Path) -> None:
    config = CompletionConfig(output_schema=Answer)
    response = (await adapter().complete([Message.user("hi")], config)).unwrap()
    assert response.parsed == Answer(status="ok", answer=42)
    prompt = next(m for m in received(record) if m.get("method") == "session/prompt")
    assert "answer" in prompt["params"]["prompt"][0]["text"]


async def test_acp_runtime_keeps_one_agent_and_one_session_across_turns(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "tool")
    command = [sys.executable, str(AGENT)]
    async with create_agent_runtime("acp", acp={"command": command}) as runtime:
        full = CompletionConfig(tools=ToolPolicy(sandbox=Sandbox.full))
        first = [e async for e in runtime.send("one", full)]
        second = [e async for e in runtime.send("two", full)]
        assert runtime.handle.session_id == "sess-1"
    for events in (first, second):
        types = [e.type for e in events]
        assert types[0] is EventType.init
        assert types.index(EventType.tool_call) < types.index(EventType.tool_result)
        assert EventType.reasoning in types
        assert events[-1].type is EventType.final
        assert events[-1].content == ANSWER
    one, two = (e[-1].metadata["response"] for e in (first, second))
    assert one.raw.extra["pid"] == two.raw.extra["pid"]
    assert two.usage.input_tokens == 20  # the agent counted two turns in one session
    methods = [m.get("method") for m in received(record)]
    assert methods.count("initialize") == 1
    assert methods.count("session/new") == 1
    assert live_processes_with(str(record)) == []


async def test_acp_runtime_reports_a_dead_agent_as_an_error_event_and_restarts(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "crash")
    command = [sys.executable, str(AGENT)]
    async with create_agent_runtime("acp", acp={"command": command}) as runtime:
        first = [e async for e in runtime.send("one")]
        assert first[-1].type is EventType.error
        assert first[-1].metadata["error"].kind is ErrorKind.process_failed
        monkeypatch.setenv("FAKE_SCENARIO", "ok")
        second = [e async for e in runtime.send("two")]
        assert second[-1].type is EventType.final
    assert [m.get("method") for m in received(record)].count("initialize") == 2


async def test_acp_runtime_leaving_mid_turn_kills_the_agent(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    command = [sys.executable, str(AGENT)]
    async with create_agent_runtime("acp", acp={"command": command, "grace_s": 0.5}) as rt:
        events = rt.send("hi")
        with anyio.move_on_after(1.5):
            async for _ in events:
                pass
        assert live_processes_with(str(record)) != []  # the agent is mid-turn
    assert live_processes_with(str(record)) == []
    cancels = [m for m in received(record) if m.get("method") == "session/cancel"]
    assert cancels == [
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "sess-1"}}
    ]
