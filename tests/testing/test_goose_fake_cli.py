"""goose against a fake CLI that replays the documented stream-json shapes (not the real tool)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel
from returns.result import Failure, Success

from _fake_clis_util import claimed, install_fake, live_processes_with, recorded
from agentport.backends import goose
from agentport.catalog import get_capability
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    EventType,
    Message,
    Param,
    ParamSupport,
    Sandbox,
    ToolPolicy,
)
from agentport.factory import create_agent_runtime, create_llm_adapter

pytestmark = pytest.mark.anyio


class Answer(BaseModel):
    status: str
    answer: int


def test_goose_catalog_entry_is_marked_unverified() -> None:
    cap = get_capability("goose")
    assert cap.verified_against is None
    assert cap.executable == "goose"
    assert cap.auto_priority == 80
    assert cap.supports_runtime


def test_goose_endpoint_keeps_the_path_out_of_the_host() -> None:
    # A host with a path gets /v1/chat/completions appended again by goose (a 404).
    env = goose.endpoint_env("http://127.0.0.1:8080/v1/")
    assert env == {
        "OPENAI_HOST": "http://127.0.0.1:8080",
        "OPENAI_BASE_PATH": "v1/chat/completions",
    }
    assert goose.endpoint_env("http://h:1")["OPENAI_BASE_PATH"] == "v1/chat/completions"


async def test_goose_answer_is_joined_from_stream_json_text_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "goose")
    adapter = create_llm_adapter(
        "goose", retry=False, goose={"base_url": "http://127.0.0.1:9/v1", "api_key": "k-1"}
    )
    result = await adapter.complete([Message.user("what is the answer?")])
    response = result.unwrap()
    assert response.content == '{"status": "ok", "answer": 42}'
    assert response.usage.input_tokens == 10
    assert response.usage.output_tokens == 5
    assert response.usage.cached_tokens == 2
    assert response.usage.cost_usd == pytest.approx(0.001)
    seen = recorded(record)
    assert seen["stdin"] == "what is the answer?"  # the prompt travels through stdin
    assert seen["argv"][:4] == ["run", "--output-format", "stream-json", "-q"]
    assert seen["argv"][-2:] == ["-i", "-"]
    assert "--no-session" in seen["argv"]
    env = seen["env"]
    assert env["GOOSE_MODE"] == "chat"  # no tools by default
    assert env["OPENAI_HOST"] == "http://127.0.0.1:9"
    assert env["OPENAI_BASE_PATH"] == "v1/chat/completions"
    assert env["OPENAI_API_KEY"] == "k-1"
    assert "--provider=openai" in seen["argv"]


async def test_goose_argv_matches_every_catalog_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "goose")
    adapter = create_llm_adapter("goose", retry=False)
    config = CompletionConfig(
        model="m-1",
        max_turns=3,
        session_id="sess-9",
        temperature=0.5,
        tools=ToolPolicy(sandbox=Sandbox.read_only),
        cwd=tmp_path,
    )
    messages = [Message.system("be terse"), Message.user("hi")]
    response = (await adapter.complete(messages, config)).unwrap()
    argv = recorded(record)["argv"]
    env = recorded(record)["env"]
    assert claimed("goose", Param.system_prompt) is ParamSupport.NATIVE
    assert "--system=be terse" in argv
    assert "be terse" not in recorded(record)["stdin"]
    assert claimed("goose", Param.model) is ParamSupport.NATIVE
    assert "--model=m-1" in argv
    assert claimed("goose", Param.max_turns) is ParamSupport.NATIVE
    assert "--max-turns=3" in argv
    assert claimed("goose", Param.session_resume) is ParamSupport.NATIVE
    assert "--name=sess-9" in argv
    assert "--resume" in argv
    assert "--no-session" not in argv
    assert claimed("goose", Param.sandbox) is ParamSupport.TRANSLATED
    assert env["GOOSE_MODE"] == "chat"
    assert claimed("goose", Param.temperature) is ParamSupport.IGNORED
    assert not any("temp" in a for a in argv)
    assert any("temperature" in w for w in response.warnings)


async def test_goose_schema_is_translated_into_the_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "goose")
    adapter = create_llm_adapter("goose", retry=False)
    result = await adapter.complete([Message.user("go")], CompletionConfig(output_schema=Answer))
    assert result.unwrap().parsed == Answer(status="ok", answer=42)
    seen = recorded(record)
    assert "answer" in seen["stdin"]
    assert "--output-schema" not in seen["argv"]


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [
        ("http401", ErrorKind.auth_required),
        ("http429", ErrorKind.rate_limited),
        ("http500", ErrorKind.server_error),
        ("crash", ErrorKind.process_failed),
    ],
)
async def test_goose_failure_is_classified_from_the_error_event_or_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, kind: ErrorKind
) -> None:
    install_fake(tmp_path, monkeypatch, "goose")
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    result = await create_llm_adapter("goose", retry=False).complete([Message.user("hi")])
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.kind is kind
    assert error.backend == "goose"
    assert error.exit_code == 1
    if scenario == "crash":
        assert "invalid YAML" in error.message


async def test_goose_approval_abort_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "goose")
    monkeypatch.setenv("FAKE_SCENARIO", "tool")
    adapter = create_llm_adapter("goose", retry=False, goose={"mode": "approve"})
    # the mode option applies when the call leaves tools and sandbox to the CLI
    config = CompletionConfig(tools=ToolPolicy.cli_defaults())
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.config
    assert "approval" in error.message


async def test_goose_runtime_streams_tool_events_then_final(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "goose")
    monkeypatch.setenv("FAKE_SCENARIO", "tool")
    async with create_agent_runtime("goose") as runtime:
        events = [e async for e in runtime.send("list files")]
    types = [e.type for e in events]
    assert types.index(EventType.tool_call) < types.index(EventType.tool_result)
    assert events[types.index(EventType.tool_call)].content == "developer__shell"
    assert events[types.index(EventType.tool_result)].content == "hello-from-tool"
    assert EventType.reasoning in types
    assert events[-1].type is EventType.final
    assert events[-1].content == '{"status": "ok", "answer": 42}'


async def test_goose_silent_hang_ends_in_idle_timeout_without_orphans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "goose")
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = create_llm_adapter("goose", retry=False, goose={"grace_s": 0.5})
    config = CompletionConfig(idle_timeout_s=1.0, total_timeout_s=20)
    result = await adapter.complete([Message.user("hi")], config)
    error = result.failure()
    assert error.kind is ErrorKind.timeout
    assert error.timeout == "idle"
    assert live_processes_with(str(record)) == []


async def test_goose_missing_binary_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    adapter = create_llm_adapter(
        "goose", retry=False, goose={"executable": str(tmp_path / "nowhere" / "goose")}
    )
    result = await adapter.complete([Message.user("hi")])
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.not_installed
    assert not isinstance(result, Success)
