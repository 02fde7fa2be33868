"""A prompt the CLI did not read whole is never a success: a CLI that reads a prefix of its
stdin, closes it and answers (gemini-cli and qwen-code cut stdin at 8 MiB that way) fails
the call with `invalid_request` naming the bytes taken of the total, on every backend that
sends the prompt on stdin; a prompt over a CLI's known stdin limit is refused before the
CLI starts. Driven through the factory with a fake CLI replaying each backend's real
transcript after reading a prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from _fake_clis_util import install_fake
from _runner_util import FIXTURES
from agentport import create_llm_adapter
from agentport.backends import gemini, qwen
from agentport.core import CompletionConfig, ErrorKind, Message, ToolPolicy
from agentport.transport import Frame, ProcessRequest, run_process

pytestmark = pytest.mark.anyio

#: every transcript-replayed CLI backend (each sends the prompt on stdin) and a success
OK = {
    "codex": "ok-json",
    "claude": "ok-stream-json",
    "gemini": "ok-stream-json",
    "opencode": "ok-json",
    "pi": "ok-json",
    "qwen": "ok-stream-json",
    "copilot": "ok-json",
}
PROMPT = "x" * (1 << 20)
CONFIG = CompletionConfig(total_timeout_s=30, tools=ToolPolicy.cli_defaults())


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


def _cli(tmp: Path, cli: str, read: str) -> tuple[Path, Path]:
    """A CLI that reads stdin with *read* (a shell command), records how many bytes it got,
    closes stdin and prints *cli*'s recorded successful stdout."""
    got = tmp / "got"
    exe = tmp / "cut-cli"
    transcript = FIXTURES / cli / f"{OK[cli]}.stdout"
    exe.write_text(f"#!/bin/sh\n{read} | wc -c > {got}\nexec 0<&-\nexec cat {transcript}\n")
    exe.chmod(0o755)
    return exe, got


async def _complete(exe: Path, cli: str, prompt: str = PROMPT) -> Any:
    llm = create_llm_adapter(cli, retry=False, **{cli: {"executable": str(exe), "grace_s": 1.0}})
    return await llm.complete([Message.user(prompt)], CONFIG)


@pytest.mark.parametrize("cli", sorted(OK))
async def test_a_cli_that_read_a_prefix_of_the_prompt_fails_naming_the_bytes(
    cli: str, tmp_path: Path
) -> None:
    exe, got = _cli(tmp_path, cli, "head -c 65536")
    result = await _complete(exe, cli)
    assert int(got.read_text()) == 65536  # the CLI did read a prefix, then answered
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is ErrorKind.invalid_request
    assert not error.retryable
    assert f"of {len(PROMPT)} bytes of the prompt" in str(error)


@pytest.mark.parametrize("cli", sorted(OK))
async def test_the_same_cli_reading_the_whole_prompt_succeeds(cli: str, tmp_path: Path) -> None:
    exe, got = _cli(tmp_path, cli, "cat")
    result = await _complete(exe, cli)
    assert int(got.read_text()) >= len(PROMPT)
    assert isinstance(result, Success), result


@pytest.mark.parametrize(
    ("backend", "executable"), [("goose", "goose"), ("kiro", "kiro-cli")], ids=["goose", "kiro"]
)
async def test_the_fake_clis_that_read_stdin_fail_the_same_way(
    backend: str, executable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, executable)
    monkeypatch.setenv("FAKE_STDIN_PREFIX", "65536")
    options: dict[str, Any] = {"api_key": "k"} | (
        {"prompt_via": "stdin"} if backend == "kiro" else {}
    )
    llm = create_llm_adapter(backend, retry=False, **{backend: options})
    result = await llm.complete([Message.user(PROMPT)])
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.invalid_request


@pytest.mark.parametrize("module", [gemini, qwen], ids=["gemini", "qwen"])
async def test_a_prompt_over_the_clis_stdin_limit_is_refused_before_it_starts(
    module: Any, tmp_path: Path
) -> None:
    limit = module.SPEC.stdin_limit_bytes
    assert limit == 8 << 20  # readStdin of gemini-cli 0.61.0 and qwen-code 0.24.4
    cli = module.SPEC.name
    exe, got = _cli(tmp_path, cli, "cat")
    result = await _complete(exe, cli, "y" * (limit + 1))
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.kind is ErrorKind.invalid_request
    assert error.request_sent is False
    assert f"at most {limit} bytes" in str(error)
    assert not got.exists()  # never started


async def test_the_runner_counts_what_the_pipe_took() -> None:
    data = b"z" * (5 << 20)

    async def on_frame(frame: Frame) -> bool:
        return False

    cut = await run_process(
        ProcessRequest(["sh", "-c", "head -c 65536 >/dev/null; exec 0<&-; echo '{}'"], stdin=data),
        on_frame,
    )
    assert cut.error is None
    assert cut.stdin_size == len(data)
    assert 65536 <= cut.stdin_written <= 3 * 65536  # what it read, plus the pipe's buffer
    assert f"of {len(data)} bytes" in str(cut.stdin_short())
    whole = await run_process(ProcessRequest(["sh", "-c", "cat >/dev/null"], stdin=data), on_frame)
    assert (whole.stdin_written, whole.stdin_short()) == (len(data), None)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    size=st.integers(256 << 10, 2 << 20),
    read=st.floats(0.0, 1.0),
)
def test_a_cut_is_seen_whenever_more_than_the_pipe_buffer_was_left(size: int, read: float) -> None:
    """Whatever the prompt's size and the prefix the CLI reads: reading all of it is never a
    cut; leaving more than the pipe's buffer (and one write) unread always is."""
    taken = int(size * read)

    async def on_frame(frame: Frame) -> bool:
        return False

    async def run() -> Any:
        script = f"head -c {taken} >/dev/null; exec 0<&-; echo '{{}}'"
        return await run_process(ProcessRequest(["sh", "-c", script], stdin=b"p" * size), on_frame)

    result = anyio.run(run)
    assert result.error is None
    if size - taken > 2 * 65536:
        assert result.stdin_short() is not None
        assert result.stdin_written < size
    if taken == size:
        assert result.stdin_short() is None
    assert result.stdin_written >= taken - 65536  # what it read went through the pipe
