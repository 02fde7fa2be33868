"""copilot spec: argv/env from a call, and the decoder + error table replayed on the recorded
GitHub Copilot CLI 1.0.102 transcripts (cli-contracts.md §7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _helpers import cli_call
from _more_clis_fixtures import replay
from agentport.backends import CliCall
from agentport.backends.copilot import SPEC, build
from agentport.core import CompletionConfig, ErrorKind, EventType, ToolPolicy


def _call(tmp_path: Path, **kw: object) -> CliCall:
    return cli_call(tmp_path, **({"executable": "/bin/copilot", "prompt": "Say hi"} | kw))


def test_prompt_goes_through_stdin_with_no_tools_by_default(tmp_path: Path) -> None:
    inv = build(_call(tmp_path, prompt="private words"))
    assert inv.stdin == b"private words"
    assert "-p" not in inv.argv
    assert "--allow-all-tools" not in inv.argv  # least privilege
    assert "--deny-tool=shell" in inv.argv
    assert inv.argv[inv.argv.index("--output-format") + 1] == "json"


def test_base_url_runs_byok_through_provider_variables(tmp_path: Path) -> None:
    opts = {"base_url": "http://127.0.0.1:9/v1/", "api_key": "sk-secret-123456789"}
    config = CompletionConfig(model="m1", tools=ToolPolicy(allowed_tools=("bash", "view")))
    inv = build(_call(tmp_path, options=opts, config=config))
    assert inv.env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert inv.env["COPILOT_PROVIDER_API_KEY"] == "sk-secret-123456789"
    assert inv.env["COPILOT_PROVIDER_TYPE"] == "openai"
    assert inv.env["COPILOT_MODEL"] == "m1"
    assert not any("sk-secret" in a for a in inv.argv)
    assert "--available-tools=bash,view" in inv.argv


def test_without_base_url_no_byok_variables_are_set(tmp_path: Path) -> None:
    inv = build(_call(tmp_path))
    assert not any(k.startswith("COPILOT_PROVIDER") for k in inv.env)


def test_plain_answer_is_the_final_assistant_message() -> None:
    events, outcome = replay(SPEC, "copilot", "ok-json")
    assert SPEC.classify(outcome) is None
    assert events[-1].end.terminal is True
    assert events[-1].metadata["session_id"] == "f81d4a98-6011-43f5-b19e-ba54a8a03ae3"
    answers = [e.end.final_text for e in events if e.end.final_text is not None]
    assert answers == ['{"status": "ok", "answer": 42}']


def test_tool_turn_message_with_tool_requests_is_not_the_answer() -> None:
    events, outcome = replay(SPEC, "copilot", "tool-bash")
    assert SPEC.classify(outcome) is None
    calls = [e for e in events if e.type is EventType.tool_call]
    results = [e for e in events if e.type is EventType.tool_result]
    assert [c.metadata["tool"] for c in calls] == ["bash"]
    assert results[0].content.startswith("hello-from-tool")
    answers = [e.end.final_text for e in events if e.end.final_text is not None]
    assert answers == ['{"status": "ok", "answer": 42}']


@pytest.mark.parametrize(
    ("case", "kind", "status"),
    [
        ("http500", ErrorKind.server_error, 500),
        ("http429", ErrorKind.rate_limited, 429),
        ("http401", ErrorKind.auth_required, 401),
        ("close", ErrorKind.network, None),
    ],
)
def test_session_error_is_classified_by_status_then_wording(
    case: str, kind: ErrorKind, status: int | None
) -> None:
    _, outcome = replay(SPEC, "copilot", case)
    assert outcome.exit_code == 1
    error = SPEC.classify(outcome)
    assert error is not None
    assert error.kind is kind
    assert error.status == status


def test_missing_github_login_without_byok_is_auth_required() -> None:
    _, outcome = replay(SPEC, "copilot", "no-byok")
    error = SPEC.classify(outcome)
    assert error is not None
    assert error.kind is ErrorKind.auth_required
