"""qwen spec: argv/env/settings from a call, and the decoder + error table replayed on the
recorded qwen-code 0.15.10 transcripts (cli-contracts.md §5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _helpers import cli_call
from _more_clis_fixtures import replay
from agentport.backends import CliCall, RunOutcome
from agentport.backends.qwen import SPEC, api_error, build
from agentport.core import (
    AgentEvent,
    CompletionConfig,
    ErrorKind,
    EventType,
    Sandbox,
    ToolPolicy,
    Usage,
)


def _call(tmp_path: Path, **kw: object) -> CliCall:
    return cli_call(tmp_path, **({"executable": "/bin/qwen", "prompt": "Say hi"} | kw))


def test_prompt_goes_through_stdin_not_argv(tmp_path: Path) -> None:
    inv = build(_call(tmp_path, prompt="a very private prompt"))
    assert inv.stdin == b"a very private prompt"
    assert "a very private prompt" not in " ".join(inv.argv)
    assert inv.argv[:3] == ("/bin/qwen", "--output-format", "stream-json")


def test_base_url_selects_openai_auth_and_key_stays_out_of_argv(tmp_path: Path) -> None:
    opts = {"base_url": "http://127.0.0.1:9/v1/", "api_key": "sk-secret-123456789"}
    inv = build(_call(tmp_path, options=opts))
    assert inv.argv[3] == "--auth-type=openai"
    assert inv.env["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert inv.env["OPENAI_API_KEY"] == "sk-secret-123456789"
    assert not any("sk-secret" in a for a in inv.argv)


def test_without_base_url_the_users_own_auth_is_left_alone(tmp_path: Path) -> None:
    inv = build(_call(tmp_path))
    assert "--auth-type" not in inv.argv
    assert "OPENAI_BASE_URL" not in inv.env


def test_run_settings_turn_off_background_memory_and_long_retries(tmp_path: Path) -> None:
    config = CompletionConfig(temperature=0.2, max_tokens=50)
    inv = build(_call(tmp_path, config=config))
    settings = json.loads(Path(inv.env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"]).read_text())
    assert settings["memory"]["enableManagedAutoMemory"] is False
    generation = settings["model"]["generationConfig"]
    assert generation["maxRetries"] == 0
    assert generation["samplingParams"] == {"temperature": 0.2, "max_tokens": 50}


def test_large_answers_are_not_cut_off_by_the_pipe(tmp_path: Path) -> None:
    inv = build(_call(tmp_path, options={"env": {"NODE_OPTIONS": "--max-old-space-size=512"}}))
    node_options = inv.env["NODE_OPTIONS"]
    assert node_options.startswith("--max-old-space-size=512 --require ")
    preload = Path(json.loads(node_options.split("--require ", 1)[1]))
    assert "setBlocking(true)" in preload.read_text()


def test_flags_for_schema_system_tools_sandbox_turns_and_resume(tmp_path: Path) -> None:
    config = CompletionConfig(
        model="m1",
        max_turns=3,
        tools=ToolPolicy(allowed_tools=("read_file", "glob"), sandbox=Sandbox.workspace_write),
    )
    inv = build(
        _call(
            tmp_path,
            config=config,
            system_prompt="be brief",
            schema={"type": "object"},
            session_id="s-1",
        )
    )
    argv = list(inv.argv)

    def after(flag: str) -> str:  # every value travels as --flag=value
        return next(a for a in argv if a.startswith(flag + "="))[len(flag) + 1 :]

    assert after("--model") == "m1"
    assert after("--append-system-prompt") == "be brief"
    schema_ref = after("--json-schema")
    assert schema_ref.startswith("@")
    assert json.loads(Path(schema_ref[1:]).read_text()) == {"type": "object"}
    assert after("--max-session-turns") == "3"
    assert after("--core-tools") == "read_file,glob"
    assert after("--allowed-tools") == "read_file,glob"
    assert after("--approval-mode") == "auto-edit"
    assert after("--resume") == "s-1"


def test_replace_mode_uses_system_prompt_flag(tmp_path: Path) -> None:
    inv = build(_call(tmp_path, system_prompt="S", options={"system_prompt_mode": "replace"}))
    assert "--system-prompt=S" in inv.argv
    assert not any(a.startswith("--append-system-prompt") for a in inv.argv)


def test_plain_answer_decodes_to_text_usage_and_session() -> None:
    events, outcome = replay(SPEC, "qwen", "ok-stream-json")
    assert [e.type for e in events] == [EventType.init, EventType.text, EventType.usage]
    assert SPEC.classify(outcome) is None
    final = events[-1]
    assert final.end.final_text == '{"status": "ok", "answer": 42}'
    usage = final.metadata["usage"]
    assert isinstance(usage, Usage)
    assert usage.input_tokens == 25201
    assert usage.output_tokens == 14
    assert events[0].metadata["session_id"] == "cfbe518c-d348-4bd2-be7a-983a968886a3"


def test_schema_value_comes_from_structured_result() -> None:
    events, outcome = replay(SPEC, "qwen", "json-schema")
    assert SPEC.classify(outcome) is None
    # the value under qwen's own key (claude's is `structured_output`)
    assert events[-1].end.structured == {"status": "ok", "answer": 42}
    assert events[1].type is EventType.tool_call
    assert events[1].metadata["tool"] == "structured_output"


def test_tool_turn_yields_call_then_result_then_answer() -> None:
    events, outcome = replay(SPEC, "qwen", "tool-shell")
    types = [e.type for e in events]
    assert types == [
        EventType.init,
        EventType.tool_call,
        EventType.tool_result,
        EventType.text,
        EventType.usage,
    ]
    assert events[1].metadata["tool"] == "run_shell_command"
    assert events[2].content == "hello-from-tool"
    assert not events[2].is_error
    assert SPEC.classify(outcome) is None


@pytest.mark.parametrize(
    ("case", "kind", "status"),
    [
        ("http500-stream", ErrorKind.server_error, 500),
        ("http401", ErrorKind.auth_required, 401),
        ("close", ErrorKind.network, None),
        ("midstream", ErrorKind.network, None),
    ],
)
def test_exit_zero_api_error_in_the_answer_is_a_failure(
    case: str, kind: ErrorKind, status: int | None
) -> None:
    events, outcome = replay(SPEC, "qwen", case)
    assert outcome.exit_code == 0
    error = SPEC.classify(outcome)
    assert error is not None
    assert error.kind is kind
    assert error.status == status
    assert events[-1].end.final_text is None


def test_marker_after_partial_text_is_found_and_its_message_extracted() -> None:
    text = '{"status":[API Error: terminated (cause: other side closed)]'
    assert api_error(text) == "terminated (cause: other side closed)"
    assert api_error("[API Error: 429 fake: rate limited] Possible quota limitations") == (
        "429 fake: rate limited"
    )
    assert api_error("an answer that mentions API errors") is None


def test_marker_without_a_result_line_still_fails() -> None:
    text = AgentEvent(type=EventType.text, content="[API Error: 503 overloaded]")
    error = SPEC.classify(RunOutcome(0, "", [text]))
    assert error is not None
    assert error.kind is ErrorKind.server_error
    assert error.status == 503


def test_nonzero_exit_without_result_is_process_failed() -> None:
    error = SPEC.classify(RunOutcome(1, "Error: something broke\n", []))
    assert error is not None
    assert error.kind is ErrorKind.process_failed
    assert error.message == "Error: something broke"
