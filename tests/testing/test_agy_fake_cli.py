"""agy against a fake CLI that replays the documented stream-json shapes and Go flag parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel
from returns.result import Failure

from _fake_clis_util import claimed, install_fake, live_processes_with, recorded
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


def test_agy_catalog_entry_is_marked_unverified() -> None:
    cap = get_capability("antigravity")
    assert cap.name == "agy"
    assert cap.verified_against is None
    assert cap.auto_priority == 82


async def test_agy_prompt_is_the_last_value_of_p_and_answer_comes_from_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Go-style flags: `-p` before another flag would swallow that flag as the prompt.
    record = install_fake(tmp_path, monkeypatch, "agy")
    adapter = create_llm_adapter("agy", retry=False)
    response = (await adapter.complete([Message.user("--looks-like-a-flag")])).unwrap()
    assert response.content == ANSWER
    assert response.usage.input_tokens == 10
    assert response.usage.cached_tokens == 3
    assert response.raw.session_id == "conv-123"
    argv = recorded(record)["argv"]
    assert argv[-2:] == ["-p", "--looks-like-a-flag"]
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert argv[argv.index("--print-timeout") + 1] == "1800s"
    assert "--add-dir" in argv


async def test_agy_argv_matches_every_catalog_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "agy")
    config = CompletionConfig(
        model="gemini-x",
        session_id="conv-7",
        cwd=tmp_path,
        total_timeout_s=90,
        tools=ToolPolicy(sandbox=Sandbox.full),
    )
    messages = [Message.system("be terse"), Message.user("hi")]
    response = await create_llm_adapter("agy", retry=False).complete(messages, config)
    assert response.unwrap().raw.session_id == "conv-7"
    argv = recorded(record)["argv"]
    assert claimed("agy", Param.model) is ParamSupport.NATIVE
    assert argv[argv.index("--model") + 1] == "gemini-x"
    assert claimed("agy", Param.session_resume) is ParamSupport.NATIVE
    assert argv[argv.index("--conversation") + 1] == "conv-7"
    assert claimed("agy", Param.cwd) is ParamSupport.NATIVE
    assert argv[argv.index("--add-dir") + 1] == str(tmp_path)
    assert claimed("agy", Param.sandbox) is ParamSupport.TRANSLATED
    assert "--dangerously-skip-permissions" in argv
    assert claimed("agy", Param.system_prompt) is ParamSupport.TRANSLATED
    assert argv[-1].startswith("System instructions:\nbe terse")
    assert argv[argv.index("--print-timeout") + 1] == "90s"


async def test_agy_native_schema_goes_in_a_file_and_structured_output_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "agy")
    monkeypatch.setenv("FAKE_ANSWER", ' {"status":"ok","answer":42} ')
    config = CompletionConfig(output_schema=Answer)
    response = await create_llm_adapter("agy", retry=False).complete([Message.user("x")], config)
    assert response.unwrap().parsed == Answer(status="ok", answer=42)
    argv = recorded(record)["argv"]
    assert claimed("agy", Param.output_schema) is ParamSupport.NATIVE
    assert "--json-schema" in argv
    assert "properties" not in argv[-1]  # NATIVE: the schema is not in the prompt


async def test_agy_missing_structured_output_falls_back_to_validating_the_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # antigravity-cli #794: SUCCESS without structured_output.
    install_fake(tmp_path, monkeypatch, "agy")
    monkeypatch.setenv("FAKE_SCENARIO", "no-structured")
    config = CompletionConfig(output_schema=Answer)
    result = await create_llm_adapter("agy", retry=False).complete([Message.user("x")], config)
    assert result.unwrap().parsed == Answer(status="ok", answer=42)


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [
        ("error", ErrorKind.quota_exhausted),  # "RESOURCE_EXHAUSTED: 429 quota exceeded"
        ("server", ErrorKind.server_error),
        ("old", ErrorKind.config),
        ("silent", ErrorKind.bad_output),
    ],
)
async def test_agy_failures_end_in_the_right_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, kind: ErrorKind
) -> None:
    install_fake(tmp_path, monkeypatch, "agy")
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    result = await create_llm_adapter("agy", retry=False).complete([Message.user("hi")])
    assert isinstance(result, Failure)
    assert result.failure().kind is kind, result.failure()


async def test_agy_runtime_streams_deltas_tools_and_resumes_the_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "agy")
    monkeypatch.setenv("FAKE_SCENARIO", "tool")
    async with create_agent_runtime("agy") as runtime:
        first = [e async for e in runtime.send("list files")]
        assert runtime.handle.session_id == "conv-123"
        second = [e async for e in runtime.send("and again")]
    types = [e.type for e in first]
    assert types[0] is EventType.init
    assert types.index(EventType.tool_call) < types.index(EventType.tool_result)
    assert first[types.index(EventType.tool_result)].content == "hello-from-tool"
    assert EventType.reasoning in types
    assert first[-1].type is EventType.final
    assert first[-1].content == ANSWER
    assert second[-1].type is EventType.final
    argv = json.loads(record.read_text())["argv"]
    assert argv[argv.index("--conversation") + 1] == "conv-123"


async def test_agy_hang_is_killed_with_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "agy")
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = create_llm_adapter("agy", retry=False, agy={"grace_s": 0.5})
    config = CompletionConfig(idle_timeout_s=1.0, total_timeout_s=20)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert live_processes_with(str(record)) == []
