"""End-state rules that need a live process: a CLI lingering after its terminal
event is a success, neither an idle timeout nor retried; a fatal error line followed by
silence ends the run after the error grace with that text; an unfinished tool is closed as
abandoned in the runtime's stream; the finish reason and the stderr of an empty success reach
the caller. Driven the way users call it (`create_llm_adapter` / `create_agent_runtime`, the
default retry policy) with tests/fixtures/cli/fake_cli.py replaying real transcripts; shapes
no transcript shows are built from one and say so. No timing is asserted: a broken rule shows
as the wrong ErrorKind (an idle timeout) or as more than one process start.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from _helpers import TESTS
from _runner_util import FAKE_CLI, FIXTURES
from agentport import create_agent_runtime, create_llm_adapter
from agentport.core import ErrorKind, EventType, Message
from agentport.transport import group_members

pytestmark = pytest.mark.anyio

# long enough that hitting one instead of the rule under test fails the assertion on the kind
LIMITS: dict[str, Any] = {"startup_timeout_s": 30, "idle_timeout_s": 30, "total_timeout_s": 90}


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


def _counting_executable(tmp: Path) -> Path:
    """fake_cli.py behind a script that appends one line to `starts` per process start."""
    exe = tmp / "fake-agent"
    exe.write_text(
        "#!/bin/sh\n"
        # `codex debug models` (the catalog read before a run) is not a start
        f'[ "$1" = debug ] || echo start >> "{tmp / "starts"}"\n'
        f'exec "{sys.executable}" "{FAKE_CLI}" "$@"\n'
    )
    exe.chmod(0o755)
    return exe


def _starts(tmp: Path) -> int:
    path = tmp / "starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _write(tmp: Path, name: str, objs: list[dict[str, Any]]) -> Path:
    path = tmp / name
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def _lines(cli: str, case: str) -> list[dict[str, Any]]:
    text = (FIXTURES / cli / f"{case}.stdout").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _options(tmp: Path, stdout: Path, **fake: str) -> dict[str, Any]:
    env = {
        "FAKE_CLI_STDOUT": str(stdout),
        "FAKE_CLI_STDIN": "read",
        "FAKE_CLI_PIDFILE": str(tmp / "grandchild.pid"),
        **{f"FAKE_CLI_{k.upper()}": v for k, v in fake.items()},
    }
    return {
        "executable": str(_counting_executable(tmp)),
        "env": env,
        "grace_s": 1.0,
        "linger_s": 0.2,
        "error_grace_s": 0.5,
    }


def _no_orphan(tmp: Path) -> None:
    pid = int((tmp / "grandchild.pid").read_text())
    assert group_members(pid) == []
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


@pytest.mark.parametrize(
    ("cli", "case"),
    [
        ("opencode", "tool-bash"),  # step_finish reason stop
        ("claude", "ok-stream-json"),  # result
        ("codex", "ok-json"),  # turn.completed
        ("gemini", "ok-stream-json"),  # result status success
        ("copilot", "ok-json"),  # result exitCode 0
        ("pi", "ok-json"),  # agent_end
        ("qwen", "ok-stream-json"),  # result
    ],
)
async def test_a_cli_lingering_after_its_terminal_event_is_one_successful_attempt(
    tmp_path: Path, cli: str, case: str
) -> None:
    stdout = FIXTURES / cli / f"{case}.stdout"
    opts = _options(tmp_path, stdout, hang="1", child="1")
    llm = create_llm_adapter(cli, **LIMITS, **{cli: opts})
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Success), result
    assert result.unwrap().content == '{"status": "ok", "answer": 42}'
    assert result.unwrap().finish_reason == "stop"
    assert _starts(tmp_path) == 1  # not retried
    _no_orphan(tmp_path)


@pytest.mark.parametrize(
    ("cli", "case", "cut", "kind"),
    [
        ("codex", "http500-noretry", "turn.failed", ErrorKind.server_error),
        ("copilot", "http500", "result", ErrorKind.server_error),
        ("qwen", "http500-stream", "result", ErrorKind.server_error),
    ],
)
async def test_a_fatal_error_line_then_silence_fails_with_its_text_not_a_timeout(
    tmp_path: Path, cli: str, case: str, cut: str, kind: ErrorKind
) -> None:
    """built: the real failure transcript cut before its closing line (*cut*), the CLI then
    hanging with stdout open."""
    objs = [o for o in _lines(cli, case) if o.get("type") != cut]
    opts = _options(tmp_path, _write(tmp_path, "out.jsonl", objs), hang="1", child="1")
    llm = create_llm_adapter(cli, retry=False, **LIMITS, **{cli: opts})
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is kind, error
    assert error.timeout is None
    _no_orphan(tmp_path)


async def test_opencode_early_error_then_answer_is_a_success_with_the_error_as_warning(
    tmp_path: Path,
) -> None:
    """built: opencode http500's `error` line followed by ok-json (exit 0)."""
    objs = [_lines("opencode", "http500")[0], *_lines("opencode", "ok-json")]
    opts = _options(tmp_path, _write(tmp_path, "out.jsonl", objs))
    llm = create_llm_adapter("opencode", **LIMITS, opencode=opts)
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Success), result
    assert result.unwrap().content == '{"status": "ok", "answer": 42}'
    assert any("stub: internal server error" in w for w in result.unwrap().warnings)
    assert _starts(tmp_path) == 1


async def test_codex_unfinished_tool_is_closed_as_abandoned_in_the_runtime_stream(
    tmp_path: Path,
) -> None:
    """built: codex tool-shell without the command's `item.completed`."""
    objs = [
        o
        for o in _lines("codex", "tool-shell")
        if not (o["type"] == "item.completed" and o["item"]["type"] == "command_execution")
    ]
    # the fake replays `codex exec` output (otherwise a runtime's turns run on app-server)
    opts = _options(tmp_path, _write(tmp_path, "out.jsonl", objs)) | {"runtime_app_server": False}
    async with create_agent_runtime("codex", **LIMITS, codex=opts) as runtime:
        events = [e async for e in runtime.send("run echo")]
    results = [e for e in events if e.type is EventType.tool_result]
    assert len(results) == 1
    assert results[0].is_error
    assert results[0].metadata["abandoned"] is True
    kinds = [e.type for e in events]
    assert kinds.index(EventType.tool_result) < kinds.index(EventType.usage)  # before the end
    assert events[-1].type is EventType.final


async def test_claude_max_tokens_reaches_the_caller_as_length_with_a_warning(
    tmp_path: Path,
) -> None:
    """built: claude ok-stream-json with the result's `stop_reason: "max_tokens"`."""
    objs = [
        {**o, "stop_reason": "max_tokens"} if o.get("type") == "result" else o
        for o in _lines("claude", "ok-stream-json")
    ]
    opts = _options(tmp_path, _write(tmp_path, "out.jsonl", objs))
    llm = create_llm_adapter("claude", retry=False, **LIMITS, claude=opts)
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Success), result
    assert result.unwrap().finish_reason == "length"
    assert any("token limit" in w for w in result.unwrap().warnings)


async def test_gemini_empty_success_with_a_429_on_stderr_is_rate_limited(tmp_path: Path) -> None:
    """built: gemini ok-stream-json without assistant text + the http429 run's stderr."""
    objs = [
        o
        for o in _lines("gemini", "ok-stream-json")
        if not (o.get("type") == "message" and o.get("role") == "assistant")
    ]
    stderr = str(FIXTURES / "gemini" / "http429.stderr")
    opts = _options(tmp_path, _write(tmp_path, "out.jsonl", objs), stderr=stderr)
    llm = create_llm_adapter("gemini", retry=False, **LIMITS, gemini=opts)
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.rate_limited
    assert result.failure().retryable


ACP_AGENT = TESTS / "fixtures" / "fake_clis" / "fake_acp_agent.py"


@pytest.fixture
def acp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("FAKE_RECORD", str(tmp_path / "received.jsonl"))
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    return {"command": [sys.executable, str(ACP_AGENT)]}


async def test_acp_tool_call_never_updated_is_closed_as_abandoned(
    acp_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "tool_abandoned")
    async with create_agent_runtime("acp", **LIMITS, acp=acp_env) as runtime:
        events = [e async for e in runtime.send("read x")]
    results = [e for e in events if e.type is EventType.tool_result]
    assert len(results) == 1
    assert results[0].is_error
    assert results[0].metadata["abandoned"] is True
    assert results[0].metadata["id"] == "read__1"
    assert events[-1].type is EventType.final


async def test_acp_max_tokens_is_length_with_a_warning_and_refusal_keeps_its_text(
    acp_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = create_llm_adapter("acp", retry=False, **LIMITS, acp=acp_env)
    monkeypatch.setenv("FAKE_SCENARIO", "max_tokens")
    result = await llm.complete([Message.user("hi")])
    assert isinstance(result, Success), result
    assert result.unwrap().finish_reason == "length"
    assert result.unwrap().warnings
    monkeypatch.setenv("FAKE_SCENARIO", "refusal")
    refused = await llm.complete([Message.user("hi")])
    assert isinstance(refused, Failure), refused
    assert refused.failure().kind is ErrorKind.content_filter
    assert not refused.failure().retryable
    assert refused.failure().details["finish_reason"] == "refusal"


async def test_runner_grace_from_on_frame_stops_a_silent_cli_without_a_timeout(
    tmp_path: Path,
) -> None:
    """The runner half of the fatal-line rule: a float from `on_frame` is a grace; silence
    for that long stops the run (no error: the caller's end state decides)."""
    from agentport.transport import Frame, ProcessRequest, run_process

    out = _write(tmp_path, "out.jsonl", [{"type": "error", "message": "boom"}])

    async def on_frame(frame: Frame) -> float:
        return 0.3

    env = {**_fake_env(), "FAKE_CLI_STDOUT": str(out), "FAKE_CLI_HANG": "1"}
    request = ProcessRequest([sys.executable, str(FAKE_CLI)], env=env, idle_timeout_s=60,
                             total_timeout_s=90, grace_s=0.5, linger_s=0.1)  # fmt: skip
    result = await run_process(request, on_frame)
    assert result.error is None, result.error
    assert result.stopped


async def test_runner_total_timeout_while_lingering_after_the_terminal_event_is_no_error(
    tmp_path: Path,
) -> None:
    """A terminal event was read; the total budget runs out during the linger: the run
    succeeded, so no `timeout(total)` replaces it."""
    from agentport.transport import Frame, ProcessRequest, run_process

    out = _write(tmp_path, "out.jsonl", [{"type": "result"}])

    async def on_frame(frame: Frame) -> bool:
        return True

    env = {**_fake_env(), "FAKE_CLI_STDOUT": str(out), "FAKE_CLI_HANG": "1"}
    request = ProcessRequest([sys.executable, str(FAKE_CLI)], env=env, total_timeout_s=2,
                             grace_s=0.5, linger_s=30)  # fmt: skip
    result = await run_process(request, on_frame)
    assert result.error is None, result.error
    assert result.stopped


def _fake_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("FAKE_CLI_")}
