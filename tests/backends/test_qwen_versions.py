"""qwen-code 0.15 and 0.24 (CI's pin) through one spec, on the shapes each prints (measured
against both binaries with FakeModelServer; the real-CLI runs are the contract tests, on the
pinned release):

- 0.24 reports a failure as `result.error.message` with no `result` text;
- 0.24 writes its debug log (where the retry notice is read) only with
  QWEN_DEBUG_LOG_FILE=1, and follows the notice with a `{ ... }` block naming the
  provider's message;
- 0.24 offers meta tools (tool_call, list_agents, worktrees, goals) beside any
  `--core-tools` list: every tool not asked for is excluded.
"""

from __future__ import annotations

from pathlib import Path

from agentport.backends._spec import CliCall, RunOutcome
from agentport.backends.qwen import SPEC, build, tool_flags
from agentport.core import CompletionConfig, ErrorKind, ToolPolicy


def _excluded(flags: list[str]) -> set[str]:
    (value,) = [f.split("=", 1)[1] for f in flags if f.startswith("--exclude-tools=")]
    return set(value.split(","))


def test_every_tool_not_asked_for_is_excluded() -> None:
    only_read = tool_flags(ToolPolicy(allowed_tools=("read_file",)))
    assert "--core-tools=read_file" in only_read
    excluded = _excluded(only_read)
    assert "read_file" not in excluded
    assert {"tool_call", "agent", "skill", "tool_search", "enter_worktree"} <= excluded
    assert {"tool_call", "read_file"} <= _excluded(tool_flags(ToolPolicy(allowed_tools=())))
    assert tool_flags(ToolPolicy.cli_defaults()) == []


def _outcome(*lines: dict[str, object]) -> RunOutcome:
    events = [e for e in (SPEC.decode(line) for line in lines) if e is not None]
    return RunOutcome(exit_code=1, stderr_tail="", events=events)


def test_a_failure_in_result_error_message_is_classified() -> None:
    result = {"type": "result", "subtype": "error_during_execution", "is_error": True,
              "error": {"message": "[API Error: 401 bad key]"}}  # fmt: skip
    error = SPEC.classify(_outcome(result))
    assert error is not None
    assert (error.kind, error.status) == (ErrorKind.auth_required, 401)
    older = {"type": "result", "is_error": False, "result": "[API Error: 500 boom]"}
    said = SPEC.classify(_outcome(older))
    assert said is not None
    assert said.kind is ErrorKind.server_error


def test_the_retry_notice_waits_for_its_detail_block() -> None:
    assert SPEC.retry_notice is not None
    watch = SPEC.retry_notice()
    block = [
        "2026-12-04T13:58:33.420Z [WARN] [RETRY] Attempt 1 failed with status 429. "
        "Retrying with backoff in 2s... {",
        "  kind: 'http',",
        "  providerMessage: 'The usage limit has been reached',",
        "} Error: 429 The usage limit has been reached",
    ]
    assert [watch(line) for line in block[:-1]] == [None, None, None]
    error = watch(block[-1])
    assert error is not None
    assert (error.kind, error.status) == (ErrorKind.rate_limited, 429)
    assert "The usage limit has been reached" in error.message  # read by as_quota next
    # 0.15's notice has no block: it is the failure at once, in a fresh watcher per run
    plain = SPEC.retry_notice()(
        "2026-12-01T15:01:30.634Z [ERROR] [RETRY] Attempt 1 failed with status 500. Retrying"
    )
    assert plain is not None
    assert plain.kind is ErrorKind.server_error


def test_the_debug_log_is_asked_for(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    call = CliCall("qwen", "hi", None, CompletionConfig(), None, {}, tmp_path, tmp_path / "work")
    invocation = build(call)
    assert invocation.env["QWEN_DEBUG_LOG_FILE"] == "1"
    assert invocation.log_dir == tmp_path / "qwen-runtime" / "debug"
