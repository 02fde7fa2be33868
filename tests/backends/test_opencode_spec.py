"""opencode spec: argv/env from a call, and the decoder + error table replayed on the recorded
opencode 1.18.33 transcripts (cli-contracts.md §4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _helpers import cli_call
from _more_clis_fixtures import replay
from agentport.backends import CliCall, RunOutcome
from agentport.backends.opencode import SPEC, build
from agentport.core import CompletionConfig, ErrorKind, EventType, Usage


def _call(tmp_path: Path, **kw: object) -> CliCall:
    return cli_call(tmp_path, **({"executable": "/bin/opencode", "prompt": "Say hi"} | kw))


def test_message_goes_through_stdin(tmp_path: Path) -> None:
    inv = build(_call(tmp_path, prompt="private words"))
    assert inv.stdin == b"private words"
    # logs on stderr: they carry the retry notice (agentport owns retries)
    assert inv.argv == (
        *("/bin/opencode", "run", "--format", "json"),
        *("--print-logs", "--log-level", "INFO"),
    )


def test_base_url_becomes_an_inline_provider_and_title_model_stays_on_it(tmp_path: Path) -> None:
    opts = {"base_url": "http://127.0.0.1:9/v1/", "api_key": "sk-secret-123456789"}
    inv = build(_call(tmp_path, options=opts, config=CompletionConfig(model="m1")))
    assert inv.argv[-1] == "--model=agentport/m1"
    config = json.loads(inv.env["OPENCODE_CONFIG_CONTENT"])
    provider = config["provider"]["agentport"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"]["baseURL"] == "http://127.0.0.1:9/v1"
    assert config["small_model"] == config["model"] == "agentport/m1"
    # the key travels in its own variable, referenced from the config, never in argv
    assert "sk-secret" not in inv.env["OPENCODE_CONFIG_CONTENT"]
    assert provider["options"]["apiKey"] == "{env:AGENTPORT_OPENCODE_API_KEY}"
    assert inv.env["AGENTPORT_OPENCODE_API_KEY"] == "sk-secret-123456789"


def test_qualified_model_is_passed_as_is_without_base_url(tmp_path: Path) -> None:
    inv = build(_call(tmp_path, config=CompletionConfig(model="anthropic/claude-x")))
    assert inv.argv[-1] == "--model=anthropic/claude-x"
    assert "provider" not in json.loads(inv.env["OPENCODE_CONFIG_CONTENT"])


def test_plain_answer_is_the_text_of_the_last_step_with_its_usage() -> None:
    events, outcome = replay(SPEC, "opencode", "ok-json")
    assert SPEC.classify(outcome) is None
    assert SPEC.final_text(events) == '{"status": "ok", "answer": 42}'
    usage = events[-1].metadata["usage"]
    assert isinstance(usage, Usage)
    assert (usage.input_tokens, usage.output_tokens) == (7808, 7)
    assert events[0].metadata["session_id"] == "ses_dd6a3acbfffe94MjHOns7ZqGWc"


def test_tool_step_text_is_not_part_of_the_answer() -> None:
    events, outcome = replay(SPEC, "opencode", "tool-bash")
    assert SPEC.classify(outcome) is None
    tools = [e for e in events if e.type is EventType.tool_result]
    assert len(tools) == 1
    assert tools[0].metadata["tool"] == "bash"
    assert tools[0].content == "hello-from-tool\n"
    assert SPEC.final_text(events) == '{"status": "ok", "answer": 42}'


@pytest.mark.parametrize(
    ("case", "kind", "status"),
    [
        ("http500", ErrorKind.server_error, 500),
        ("http429", ErrorKind.rate_limited, 429),
        ("http401", ErrorKind.auth_required, 401),
        ("close", ErrorKind.network, None),
        ("midstream", ErrorKind.network, None),
        ("unknown-model", ErrorKind.process_failed, None),
    ],
)
def test_error_line_is_classified_by_status_then_wording(
    case: str, kind: ErrorKind, status: int | None
) -> None:
    _, outcome = replay(SPEC, "opencode", case)
    assert outcome.exit_code == 1
    error = SPEC.classify(outcome)
    assert error is not None
    assert error.kind is kind
    assert error.status == status


def test_nonzero_exit_without_an_error_line_is_process_failed() -> None:
    error = SPEC.classify(RunOutcome(1, "Error: Unexpected error\n", []))
    assert error is not None
    assert error.kind is ErrorKind.process_failed
