"""No retry multiplication: a CLI's own retry notice ends the run with
the failure it announces, so agentport's retry policy is the only one. The runner's
`on_stderr_line` hook, then each backend's notice through `complete()` with a fake CLI that
replays the real CLI's output up to its first retry notice and then hangs: without the notice
rule these runs would end in a timeout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from _runner_util import FIXTURES, fake_argv, fake_env, fake_executable
from agentport import create_llm_adapter
from agentport.backends import CliCall, claude, codex, pi
from agentport.core import CompletionConfig, ErrorKind, Message, ProviderError, ToolPolicy
from agentport.transport import Frame, ProcessRequest, group_members, run_process

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


async def _ignore(frame: Frame) -> bool:
    return False


async def test_stderr_hook_ends_a_live_run_with_its_error(tmp_path: Path) -> None:
    err = tmp_path / "err"
    err.write_text("banner\nstill starting\nRETRY in 2s: status 503\nmore\n")
    seen: list[str] = []

    def hook(line: str) -> ProviderError | None:
        seen.append(line)
        if line.startswith("RETRY"):
            return ProviderError(ErrorKind.server_error, line, status=503)
        return None

    env = fake_env(stderr=str(err), hang="1", child="1")
    result = await run_process(
        ProcessRequest(fake_argv(), env=env, grace_s=1.0, on_stderr_line=hook), _ignore
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.server_error
    assert result.error.status == 503
    assert seen[:3] == ["banner", "still starting", "RETRY in 2s: status 503"]
    assert "more" not in seen  # the first error decides; later lines are not looked at
    assert result.pid is not None
    assert group_members(result.pid) == []


async def test_stderr_after_stdout_decided_does_not_undo_the_outcome(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text('{"type": "done"}\n')
    script = f"cat {out}; sleep 0.3; echo 'RETRY late' >&2; sleep 30"

    async def stop(frame: Frame) -> bool:
        return True

    def hook(line: str) -> ProviderError | None:
        return ProviderError(ErrorKind.server_error, line)

    result = await run_process(
        ProcessRequest(["sh", "-c", script], linger_s=1.0, grace_s=1.0, on_stderr_line=hook), stop
    )
    assert result.stopped
    assert result.error is None


async def test_a_final_event_right_after_the_notice_decides(tmp_path: Path) -> None:
    # opencode logs "stream error" (no status), then prints its final error event with the
    # status and exits: within `notice_grace_s`, stdout decides
    out = tmp_path / "out"
    out.write_text('{"type": "error", "status": 401}\n')
    script = f"echo 'NOTICE' >&2; sleep 0.2; cat {out}; sleep 30"
    frames: list[object] = []

    async def stop(frame: Frame) -> bool:
        frames.append(frame.value)
        return True

    def hook(line: str) -> ProviderError | None:
        return ProviderError(ErrorKind.network, line) if line == "NOTICE" else None

    request = ProcessRequest(
        ["sh", "-c", script], grace_s=1.0, on_stderr_line=hook, notice_grace_s=5.0
    )
    result = await run_process(request, stop)
    assert frames == [{"type": "error", "status": 401}]
    assert result.stopped
    assert result.error is None


async def test_stderr_lines_split_across_chunks_are_whole(tmp_path: Path) -> None:
    script = (
        "printf 'Attem' >&2; sleep 0.2; printf 'pt 1 failed\\nnext' >&2; sleep 0.2; "
        "echo x >&2; sleep 0.5"  # alive after it: lines after stdout's end are not read
    )
    seen: list[str] = []

    def hook(line: str) -> None:
        seen.append(line)

    await run_process(ProcessRequest(["sh", "-c", script], on_stderr_line=hook), _ignore)
    assert seen == ["Attempt 1 failed", "nextx"]


def _prefix(cli: str, case: str, until: str) -> str:
    """The recorded stdout of *case* up to and including the first line containing *until*."""
    lines = []
    for line in (FIXTURES / cli / f"{case}.stdout").read_text().splitlines(keepends=True):
        lines.append(line)
        if until in line:
            return "".join(lines)
    raise AssertionError(f"{until!r} not in {cli}/{case}")


async def _complete(tmp: Path, cli: str, stdout: str, stderr: str = "") -> ProviderError:
    (tmp / "out").write_text(stdout)
    (tmp / "err").write_text(stderr)
    env = {
        "FAKE_CLI_STDOUT": str(tmp / "out"),
        "FAKE_CLI_STDERR": str(tmp / "err"),
        "FAKE_CLI_STDIN": "read",
        "FAKE_CLI_HANG": "1",  # the CLI would now wait and retry
    }
    options: dict[str, Any] = {"executable": str(fake_executable(tmp)), "env": env, "grace_s": 1.0}
    llm = create_llm_adapter(cli, retry=False, **{cli: options})
    config = CompletionConfig(total_timeout_s=60, tools=ToolPolicy.cli_defaults())
    result = await llm.complete([Message.user("hi")], config)
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is not ErrorKind.timeout, error  # the notice ended it, not the deadline
    assert group_members(int(error.details["pid"])) == []
    return error


@pytest.mark.parametrize(
    ("line", "kind", "status"),
    [
        (
            "Attempt 1 failed with status 500. Retrying with backoff... _ApiError: "
            '{"error":{"code":500,"message":"stub: internal server error","status":"INTERNAL"}}',
            ErrorKind.server_error,
            500,
        ),
        (
            "Attempt 1 failed with status 429. Retrying with backoff... _ApiError: "
            '{"error":{"code":429,"message":"stub: rate limit","status":"RESOURCE_EXHAUSTED"}}',
            ErrorKind.rate_limited,
            429,
        ),
        (
            "Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed "
            "sending request",
            ErrorKind.network,
            None,
        ),
    ],
)
async def test_gemini_first_attempt_failed_line_on_stderr_ends_the_run(
    tmp_path: Path, line: str, kind: ErrorKind, status: int | None
) -> None:
    init = _prefix("gemini", "ok-stream-json", '"type":"init"')
    error = await _complete(tmp_path, "gemini", init, stderr=f"[STARTUP] noise\n{line}\n")
    assert error.kind is kind
    assert error.status == status
    assert "Attempt 1 failed" in error.message


@pytest.mark.parametrize(
    ("case", "kind", "status"),
    [
        ("http500", ErrorKind.server_error, 500),
        ("close", ErrorKind.network, None),
        ("midstream", ErrorKind.network, None),
    ],
)
async def test_pi_first_auto_retry_ends_the_run(
    tmp_path: Path, case: str, kind: ErrorKind, status: int | None
) -> None:
    error = await _complete(tmp_path, "pi", _prefix("pi", case, "auto_retry_start"))
    assert (error.kind, error.status) == (kind, status)


@pytest.mark.parametrize(
    ("case", "kind", "status"),
    [
        ("http500", ErrorKind.server_error, 500),
        ("http429", ErrorKind.rate_limited, 429),
        ("http401", ErrorKind.auth_required, 401),
        ("close", ErrorKind.network, None),
    ],
)
async def test_copilot_first_failed_model_call_ends_the_run(
    tmp_path: Path, case: str, kind: ErrorKind, status: int | None
) -> None:
    error = await _complete(tmp_path, "copilot", _prefix("copilot", case, "model.call_failure"))
    assert (error.kind, error.status) == (kind, status)
    assert "retry" in error.message


def test_per_run_settings_turn_the_clis_own_retries_off(tmp_path: Path) -> None:
    """claude, codex, pi and hermes: agentport's defaults set the CLI's retries to 0 in the
    run's own environment / flags / private files (never the user's)."""

    def call(options: dict[str, Any]) -> CliCall:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        return CliCall(
            executable="x",
            prompt="hi",
            system_prompt=None,
            config=CompletionConfig(tools=ToolPolicy.cli_defaults()),
            schema=None,
            options=options,
            run_dir=tmp_path,
            cwd=work,
        )

    assert claude.build(call({})).env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert claude.build(call({"max_retries": 2})).env["CLAUDE_CODE_MAX_RETRIES"] == "2"
    argv = " ".join(codex.build(call({"base_url": "http://127.0.0.1:1/v1"})).argv)
    assert "request_max_retries = 0" in argv
    assert "stream_max_retries = 0" in argv
    pi.build(call({"base_url": "http://127.0.0.1:1/v1"}))
    settings = json.loads((tmp_path / "pi-agent" / "settings.json").read_text())
    assert settings["retry"]["maxRetries"] == 0
    assert settings["retry"]["provider"]["maxRetries"] == 0


async def test_opencode_stream_error_log_line_ends_the_run(tmp_path: Path) -> None:
    line = (
        'timestamp=2026-12-01T15:06:43.001Z level=ERROR run=4d52cab3 message="stream error" '
        "providerID=agentport modelID=m session.id=ses_1 small=false agent=build mode=primary "
        'error.error="AI_APICallError: fake: internal server error"'
    )
    error = await _complete(tmp_path, "opencode", "", stderr=f"INFO noise\n{line}\n")
    assert error.kind is ErrorKind.server_error
    assert error.message.endswith("AI_APICallError: fake: internal server error")


async def test_qwen_retry_line_in_its_debug_log_ends_the_run(tmp_path: Path) -> None:
    # qwen prints nothing while its backoff loop runs; its debug log (in the run's private
    # QWEN_RUNTIME_DIR) has the notice
    init = _prefix("qwen", "ok-stream-json", '"subtype":"init"')
    (tmp_path / "init").write_text(init)
    exe = tmp_path / "fake-qwen"
    exe.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        f"cat {tmp_path / 'init'}\n"
        'mkdir -p "$QWEN_RUNTIME_DIR/debug"\n'
        'log="$QWEN_RUNTIME_DIR/debug/session.txt"\n'
        'echo "2026-12-01T15:03:12.029Z [DEBUG] starting" >> "$log"\n'
        "sleep 0.5\n"
        'echo "2026-12-01T15:03:12.529Z [ERROR] [RETRY] Attempt 1 failed with status 500.'
        ' Retrying with backoff... Error: 500 fake: internal server error" >> "$log"\n'
        "exec sleep 60\n"
    )
    exe.chmod(0o755)
    llm = create_llm_adapter("qwen", retry=False, qwen={"executable": str(exe), "grace_s": 1.0})
    config = CompletionConfig(total_timeout_s=60, tools=ToolPolicy.cli_defaults())
    result = await llm.complete([Message.user("hi")], config)
    assert isinstance(result, Failure), result
    error = result.failure()
    assert (error.kind, error.status) == (ErrorKind.server_error, 500)
    assert group_members(int(error.details["pid"])) == []
