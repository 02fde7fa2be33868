"""The generic CLI adapter and runtime, driven through the factory with a fake CLI that
replays recorded transcripts (tests/fixtures/cli/<cli>/<case>.stdout)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from _runner_util import FIXTURES, fake_executable
from agentport import create_agent_runtime, create_llm_adapter
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    EventType,
    Message,
    Sandbox,
    ToolPolicy,
)

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {"status": {"type": "string"}, "answer": {"type": "integer"}},
    "required": ["status", "answer"],
}


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


def _options(tmp: Path, cli: str, case: str, **fake: str) -> dict[str, Any]:
    record = tmp / "record.json"
    env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / cli / f"{case}.stdout"),
        "FAKE_CLI_RECORD": str(record),
        "FAKE_CLI_STDIN": "read",
        **{f"FAKE_CLI_{k.upper()}": v for k, v in fake.items()},
    }
    return {"executable": str(fake_executable(tmp)), "env": env, "grace_s": 1.0}


def _recorded(tmp: Path) -> dict[str, Any]:
    return dict(json.loads((tmp / "record.json").read_text()))


async def test_codex_answer_usage_and_session_come_from_the_transcript(tmp_path: Path) -> None:
    llm = create_llm_adapter("codex", retry=False, codex=_options(tmp_path, "codex", "ok-json"))
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Success), result
    response = result.unwrap()
    assert response.content == '{"status": "ok", "answer": 42}'
    assert response.usage.input_tokens == 10360
    assert response.usage.output_tokens == 7
    assert response.raw.session_id == "01a2295a-6377-7c23-9444-0dc56d9e758a"
    assert any("Model metadata" in w for w in response.warnings)  # an error item = a warning
    seen = _recorded(tmp_path)
    assert seen["stdin"] == "Say hi"  # the prompt travels through stdin, not argv
    assert seen["argv"][-1] == "-"
    assert "--json" in seen["argv"]


async def test_codex_system_prompt_is_folded_into_the_prompt(tmp_path: Path) -> None:
    llm = create_llm_adapter("codex", retry=False, codex=_options(tmp_path, "codex", "ok-json"))
    await llm.complete([Message.system("Be terse."), Message.user("Say hi")])
    stdin = _recorded(tmp_path)["stdin"]
    assert stdin.startswith("System instructions:\nBe terse.")
    assert stdin.endswith("Say hi")


@pytest.mark.parametrize(
    ("cli", "case", "exit_code", "kind"),
    [
        ("codex", "http401", "1", ErrorKind.auth_required),
        ("codex", "http429", "1", ErrorKind.rate_limited),
        ("codex", "http500-noretry", "1", ErrorKind.server_error),
        ("codex", "close", "1", ErrorKind.network),
        ("claude", "http401", "1", ErrorKind.auth_required),
        ("claude", "http429", "1", ErrorKind.rate_limited),
        ("claude", "http500", "1", ErrorKind.server_error),
        ("claude", "close", "1", ErrorKind.network),
        ("gemini", "http500-stream", "244", ErrorKind.server_error),
        ("gemini", "midstream", "1", ErrorKind.network),
    ],
)
async def test_recorded_failures_are_classified_not_returned_as_answers(
    tmp_path: Path, cli: str, case: str, exit_code: str, kind: ErrorKind
) -> None:
    opts = _options(tmp_path, cli, case, exit=exit_code)
    llm = create_llm_adapter(cli, retry=False, **{cli: opts})
    result = await llm.complete([Message.user("hi")])
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.kind is kind, error
    assert error.backend == cli


async def test_claude_native_schema_uses_structured_output(tmp_path: Path) -> None:
    opts = _options(tmp_path, "claude", "json-schema-stream")
    llm = create_llm_adapter("claude", retry=False, claude=opts)
    result = await llm.complete([Message.user("hi")], CompletionConfig(output_schema=SCHEMA))
    assert result.unwrap().parsed == {"status": "ok", "answer": 42}
    argv = _recorded(tmp_path)["argv"]
    flag = next(a for a in argv if a.startswith("--json-schema="))
    assert json.loads(flag.split("=", 1)[1]) == SCHEMA


async def test_claude_schema_answer_without_structured_output_falls_back_to_the_text(
    tmp_path: Path,
) -> None:
    opts = _options(tmp_path, "claude", "json-schema-no-tool")
    llm = create_llm_adapter("claude", retry=False, claude=opts)
    result = await llm.complete([Message.user("hi")], CompletionConfig(output_schema=SCHEMA))
    assert result.unwrap().parsed == {"status": "ok", "answer": 42}


async def test_gemini_schema_is_translated_into_the_prompt_and_validated(tmp_path: Path) -> None:
    opts = _options(tmp_path, "gemini", "ok-stream-json")
    llm = create_llm_adapter("gemini", retry=False, gemini=opts)
    result = await llm.complete([Message.user("hi")], CompletionConfig(output_schema=SCHEMA))
    assert result.unwrap().parsed == {"status": "ok", "answer": 42}
    assert '"answer"' in _recorded(tmp_path)["stdin"]  # the schema went into the prompt


async def test_schema_mismatch_after_retries_carries_the_raw_text(tmp_path: Path) -> None:
    opts = _options(tmp_path, "gemini", "ok-stream-json")
    llm = create_llm_adapter("gemini", retry=False, gemini=opts)
    wrong = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    config = CompletionConfig(output_schema=wrong, schema_retries=1)
    result = await llm.complete([Message.user("hi")], config)
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.schema_mismatch
    assert result.failure().raw_text == '{"status": "ok", "answer": 42}'


async def test_ignored_parameter_warns_or_fails_per_policy(tmp_path: Path) -> None:
    llm = create_llm_adapter("codex", retry=False, codex=_options(tmp_path, "codex", "ok-json"))
    warned = await llm.complete([Message.user("hi")], CompletionConfig(temperature=0.2))
    assert any("codex ignores temperature" in w for w in warned.unwrap().warnings)
    failed = await llm.complete(
        [Message.user("hi")], CompletionConfig(temperature=0.2, on_ignored="fail")
    )
    assert isinstance(failed, Failure)
    assert failed.failure().kind is ErrorKind.unsupported


async def test_missing_cli_is_not_installed_with_the_install_hint(tmp_path: Path) -> None:
    llm = create_llm_adapter(
        "gemini", retry=False, gemini={"executable": str(tmp_path / "no-such-gemini")}
    )
    result = await llm.complete([Message.user("hi")])
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.not_installed
    assert "npm install -g @google/gemini-cli" in result.failure().message


async def test_exit_zero_without_an_answer_is_bad_output_not_empty_success(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type":"thread.started","thread_id":"t"}\n')
    opts = _options(tmp_path, "codex", "ok-json")
    opts["env"]["FAKE_CLI_STDOUT"] = str(empty)
    llm = create_llm_adapter("codex", retry=False, codex=opts)
    result = await llm.complete([Message.user("hi")])
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.bad_output


async def test_runtime_streams_events_and_resumes_the_session(tmp_path: Path) -> None:
    # the fake replays `codex exec` output (otherwise a runtime's turns run on app-server)
    opts = _options(tmp_path, "codex", "tool-shell") | {"runtime_app_server": False}
    async with create_agent_runtime("codex", codex=opts) as rt:
        first = [e async for e in rt.send("run echo")]
        types = [e.type for e in first]
        assert types[0] is EventType.init
        assert EventType.tool_call in types
        assert EventType.tool_result in types
        assert types[-1] is EventType.final
        assert first[-1].content == '{"status": "ok", "answer": 42}'
        assert rt.handle.session_id == "01a2295a-d394-7343-94ec-0a0388344055"
        _ = [e async for e in rt.send("again")]
        argv = _recorded(tmp_path)["argv"]
        assert argv[-3:] == ["resume", "01a2295a-d394-7343-94ec-0a0388344055", "-"]


async def test_runtime_turn_failure_ends_with_an_error_event(tmp_path: Path) -> None:
    opts = _options(tmp_path, "claude", "http429", exit="1")
    async with create_agent_runtime("claude", claude=opts) as rt:
        events = [e async for e in rt.send("hi")]
    assert events[-1].type is EventType.error
    assert events[-1].is_error
    assert events[-1].metadata["error"].kind is ErrorKind.rate_limited


async def test_sandbox_and_tools_reach_the_argv(tmp_path: Path) -> None:
    opts = _options(tmp_path, "claude", "ok-stream-json")
    llm = create_llm_adapter("claude", retry=False, claude=opts)
    tools = ToolPolicy(allowed_tools=("Read", "Edit"), sandbox=Sandbox.workspace_write)
    await llm.complete([Message.user("hi")], CompletionConfig(tools=tools, max_turns=2))
    argv = _recorded(tmp_path)["argv"]
    assert "--tools=Read,Edit" in argv
    assert "--allowedTools=Read,Edit" in argv
    assert "--permission-mode=acceptEdits" in argv
    assert "--max-turns=2" in argv


async def test_choices_are_matched_and_a_miss_is_schema_mismatch(tmp_path: Path) -> None:
    llm = create_llm_adapter("codex", retry=False, codex=_options(tmp_path, "codex", "ok-json"))
    hit = await llm.complete(
        [Message.user("hi")],
        CompletionConfig(choices=('{"status": "ok", "answer": 42}', "no")),
    )
    assert hit.unwrap().parsed == '{"status": "ok", "answer": 42}'
    assert "no" in _recorded(tmp_path)["stdin"]  # the choices went into the prompt
    miss = await llm.complete(
        [Message.user("hi")], CompletionConfig(choices=("yes", "no"), schema_retries=0)
    )
    assert isinstance(miss, Failure)
    assert miss.failure().kind is ErrorKind.schema_mismatch
