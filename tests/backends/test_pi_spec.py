"""pi spec: argv/env/agent folder from a call, and the decoder + error table replayed on the
recorded pi-coding-agent 0.73.1 transcripts (cli-contracts.md §6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _helpers import cli_call
from _more_clis_fixtures import replay
from agentport.backends import CliCall, RunOutcome
from agentport.backends._retry_notice import notice_error
from agentport.backends.pi import SPEC, build
from agentport.core import CompletionConfig, ErrorKind, EventType, ToolPolicy, Usage


def _call(tmp_path: Path, **kw: object) -> CliCall:
    return cli_call(tmp_path, **({"executable": "/bin/pi", "prompt": "Say hi"} | kw))


def test_prompt_goes_through_stdin_in_json_mode_without_a_session(tmp_path: Path) -> None:
    inv = build(_call(tmp_path, prompt="private words"))
    assert inv.stdin == b"private words"
    assert inv.argv[:5] == ("/bin/pi", "-p", "--mode", "json", "--no-session")
    assert "PI_CODING_AGENT_DIR" not in inv.env  # the user's own providers


def test_base_url_gets_a_private_agent_folder_with_provider_and_short_retries(
    tmp_path: Path,
) -> None:
    opts = {"base_url": "http://127.0.0.1:9/v1/", "api_key": "sk-secret-123456789"}
    inv = build(_call(tmp_path, options=opts, config=CompletionConfig(model="m1")))
    argv = list(inv.argv)
    assert argv[argv.index("--provider") + 1] == "agentport"
    assert argv[argv.index("--model") + 1] == "m1"
    folder = Path(inv.env["PI_CODING_AGENT_DIR"])
    provider = json.loads((folder / "models.json").read_text())["providers"]["agentport"]
    assert provider["baseUrl"] == "http://127.0.0.1:9/v1"
    assert provider["models"][0]["id"] == "m1"
    # the key is an env variable NAME in the file; the value only in the child's env
    assert provider["apiKey"] == "AGENTPORT_PI_API_KEY"
    assert inv.env["AGENTPORT_PI_API_KEY"] == "sk-secret-123456789"
    assert not any("sk-secret" in a for a in argv)
    retry = json.loads((folder / "settings.json").read_text())["retry"]
    assert retry == {"maxRetries": 0, "provider": {"maxRetries": 0}}  # agentport retries


def test_qualified_model_names_the_users_provider(tmp_path: Path) -> None:
    inv = build(_call(tmp_path, config=CompletionConfig(model="anthropic/claude-x")))
    argv = list(inv.argv)
    assert argv[argv.index("--provider") + 1] == "anthropic"
    assert argv[argv.index("--model") + 1] == "claude-x"


def test_tool_list_and_empty_list(tmp_path: Path) -> None:
    some = build(_call(tmp_path, config=CompletionConfig(tools=ToolPolicy(allowed_tools=("a",)))))
    assert some.argv[-2:] == ("--tools", "a")
    none = build(_call(tmp_path, config=CompletionConfig(tools=ToolPolicy(allowed_tools=()))))
    assert none.argv[-2:] == ("--no-tools", "--no-extensions")


def test_plain_answer_comes_from_the_final_assistant_message() -> None:
    events, outcome = replay(SPEC, "pi", "ok-json")
    assert SPEC.classify(outcome) is None
    assert events[-1].end.terminal is True
    answer = [e for e in events if e.end.final_text is not None][-1]
    assert answer.end.final_text == '{"status": "ok", "answer": 42}'
    usage = answer.metadata["usage"]
    assert isinstance(usage, Usage)
    assert (usage.input_tokens, usage.output_tokens) == (1457, 7)
    assert events[0].metadata["session_id"] == "01a2295d-819c-72b7-9207-1d178161e620"


def test_tool_turn_has_call_and_result_and_the_answer_after_it() -> None:
    events, outcome = replay(SPEC, "pi", "tool-bash")
    assert SPEC.classify(outcome) is None
    calls = [e for e in events if e.type is EventType.tool_call]
    results = [e for e in events if e.type is EventType.tool_result]
    assert [c.metadata["tool"] for c in calls] == ["bash"]
    assert results[0].content == "hello-from-tool\n"
    answers = [e.end.final_text for e in events if e.end.final_text is not None]
    assert answers == ['{"status": "ok", "answer": 42}']


@pytest.mark.parametrize(
    ("case", "kind", "status"),
    [
        ("http500", ErrorKind.server_error, 500),
        ("http401", ErrorKind.auth_required, 401),
        ("close", ErrorKind.network, None),
        ("midstream", ErrorKind.network, None),
    ],
)
def test_exit_zero_with_stop_reason_error_is_a_failure(
    case: str, kind: ErrorKind, status: int | None
) -> None:
    events, outcome = replay(SPEC, "pi", case)
    assert outcome.exit_code == 0
    # pi's own auto-retry ends the run at its first notice (agentport owns retries), with the
    # same failure as pi's final report
    notices = [e for e in events if e.end.retry_notice]
    if case != "http401":  # 401 is not auto-retried
        assert notices
        assert notices[0].end.terminal
        early = notice_error(notices[0], 0, "")
        assert (early.kind, early.status) == (kind, status)
    error = SPEC.classify(outcome)
    assert error is not None
    assert error.kind is kind
    assert error.status == status


def test_text_mode_failure_exit_one_uses_stderr() -> None:
    error = SPEC.classify(RunOutcome(1, "500 stub: internal server error\n", []))
    assert error is not None
    assert error.kind is ErrorKind.server_error


def test_rpc_get_state_answer_reports_the_session_id() -> None:
    """`pi --mode rpc` prints no `session` line; a runtime turn asks `get_state` first and
    its answer is the turn's init event with the session id (pi docs/rpc.md); a refused
    get_state stays a refused command."""
    ok = {"type": "response", "command": "get_state", "success": True,
          "data": {"sessionId": "abc123", "sessionFile": "/x.jsonl"}}  # fmt: skip
    event = SPEC.decode(ok)
    assert event is not None
    assert event.type is EventType.init
    assert event.metadata["session_id"] == "abc123"
    refused = {"type": "response", "command": "get_state", "success": False, "error": "no"}
    failed = SPEC.decode(refused)
    assert failed is not None
    assert failed.type is EventType.error
    assert failed.end.fatal
