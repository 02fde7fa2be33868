"""kiro-cli against a fake CLI that replays the documented plain-text output and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel
from returns.result import Failure

from _fake_clis_util import claimed, install_fake, live_processes_with, recorded
from agentport.backends import kiro
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
ANSWER = '{"status": "ok", "answer": 42}'


class Answer(BaseModel):
    status: str
    answer: int


def test_kiro_catalog_entry_is_marked_unverified() -> None:
    cap = get_capability("kiro-cli")
    assert cap.name == "kiro"
    assert cap.verified_against is None
    assert cap.executable == "kiro-cli"
    assert cap.auto_priority == 81


def test_kiro_transcript_lines_lose_ansi_and_the_answer_marker() -> None:
    assert kiro.clean("\x1b[32m> \x1b[0mHello") == "Hello"
    assert kiro.clean("a > b") == "a > b"


async def test_kiro_plain_text_answer_keeps_its_lines_and_json_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A JSON-looking answer line must reach the answer, not be taken for a protocol frame.
    record = install_fake(tmp_path, monkeypatch, "kiro-cli")
    adapter = create_llm_adapter("kiro", retry=False, kiro={"api_key": "kk", "prompt_via": "argv"})
    response = (await adapter.complete([Message.user("-starts with a dash")])).unwrap()
    assert response.content == f"The answer follows.\n\n{ANSWER}"
    seen = recorded(record)
    assert seen["argv"][:2] == ["chat", "--no-interactive"]
    assert seen["argv"][-2:] == ["--", "-starts with a dash"]
    assert seen["env"]["KIRO_API_KEY"] == "kk"


async def test_kiro_argv_matches_every_catalog_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "kiro-cli")
    monkeypatch.setenv("KIRO_API_KEY", "from-env")
    adapter = create_llm_adapter("kiro", retry=False, kiro={"harness": "v2", "agent": "ci"})
    config = CompletionConfig(
        model="claude-sonnet-4.6",
        session_id="s-1",
        max_turns=2,
        tools=ToolPolicy(allowed_tools=("read", "grep")),
    )
    response = await adapter.complete([Message.system("be terse"), Message.user("hi")], config)
    argv = recorded(record)["argv"]
    assert claimed("kiro", Param.model) is ParamSupport.NATIVE
    assert "--model=claude-sonnet-4.6" in argv
    assert claimed("kiro", Param.tool_restriction) is ParamSupport.NATIVE
    assert "--trust-tools=read,grep" in argv
    assert claimed("kiro", Param.session_resume) is ParamSupport.NATIVE
    assert "--resume-id=s-1" in argv
    assert claimed("kiro", Param.system_prompt) is ParamSupport.TRANSLATED
    assert recorded(record)["stdin"].startswith("System instructions:\nbe terse")
    assert "--v2" in argv
    assert "--agent=ci" in argv
    assert claimed("kiro", Param.max_turns) is ParamSupport.IGNORED
    assert any("max_turns" in w for w in response.unwrap().warnings)


@pytest.mark.parametrize(
    ("sandbox", "flag"),
    [
        (Sandbox.read_only, "--trust-tools=read,grep"),
        (Sandbox.workspace_write, "--trust-tools=read,grep,write"),
        (Sandbox.full, "--trust-all-tools"),
    ],
)
async def test_kiro_sandbox_maps_to_trusted_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox, flag: str
) -> None:
    record = install_fake(tmp_path, monkeypatch, "kiro-cli")
    monkeypatch.setenv("KIRO_API_KEY", "k")
    config = CompletionConfig(tools=ToolPolicy(sandbox=sandbox))  # the CLI's tools in it
    await create_llm_adapter("kiro", retry=False).complete([Message.user("hi")], config)
    assert flag in recorded(record)["argv"]


async def test_kiro_prompt_can_travel_through_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "kiro-cli")
    monkeypatch.setenv("KIRO_API_KEY", "k")
    adapter = create_llm_adapter("kiro", retry=False, kiro={"prompt_via": "stdin"})
    assert (await adapter.complete([Message.user("big prompt")])).unwrap().content
    seen = recorded(record)
    assert seen["stdin"] == "big prompt"
    assert "big prompt" not in seen["argv"]


async def test_kiro_schema_is_translated_and_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "kiro-cli")
    monkeypatch.setenv("KIRO_API_KEY", "k")
    config = CompletionConfig(output_schema=Answer)
    adapter = create_llm_adapter("kiro", retry=False)
    response = (await adapter.complete([Message.user("x")], config)).unwrap()
    assert response.parsed == Answer(status="ok", answer=42)
    assert "answer" in recorded(record)["stdin"]  # the schema instruction, in the prompt


@pytest.mark.parametrize(
    ("scenario", "kind", "code"),
    [
        ("auth", ErrorKind.auth_required, 1),
        ("mcp", ErrorKind.config, 3),
        ("http429", ErrorKind.rate_limited, 1),
    ],
)
async def test_kiro_exit_code_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, kind: ErrorKind, code: int
) -> None:
    install_fake(tmp_path, monkeypatch, "kiro-cli")
    monkeypatch.setenv("KIRO_API_KEY", "k")
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    result = await create_llm_adapter("kiro", retry=False).complete([Message.user("hi")])
    assert isinstance(result, Failure)
    assert result.failure().kind is kind
    assert result.failure().exit_code == code


async def test_kiro_missing_api_key_is_auth_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "kiro-cli")
    monkeypatch.delenv("KIRO_API_KEY", raising=False)
    error = (await create_llm_adapter("kiro", retry=False).complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.auth_required
    assert "KIRO_API_KEY" in error.message


async def test_kiro_runtime_streams_lines_as_text_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "kiro-cli")
    monkeypatch.setenv("KIRO_API_KEY", "k")
    async with create_agent_runtime("kiro") as runtime:
        events = [e async for e in runtime.send("hi")]
    assert [e.type for e in events[:3]] == [EventType.text] * 3
    assert events[-1].type is EventType.final
    assert events[-1].content.endswith(ANSWER)


async def test_kiro_hang_times_out_and_kills_the_pass_through_and_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "kiro-cli")
    monkeypatch.setenv("KIRO_API_KEY", "k")
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = create_llm_adapter("kiro", retry=False, kiro={"grace_s": 0.5})
    config = CompletionConfig(startup_timeout_s=1.0, total_timeout_s=20)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert error.timeout == "startup"
    assert live_processes_with(str(record)) == []
