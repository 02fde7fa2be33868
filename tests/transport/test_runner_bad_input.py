"""Bad input from a CLI's stdout/stderr never escapes `complete()` as an exception and never
hangs past the deadline: a malformed line, a
non-UTF-8 byte, an unknown or mis-shaped event, a line over the limit, a stream cut mid-line,
JSON nested 200 000 deep, a million events. Each is a kept raw (noise) line, or a typed
failure. Driven through the factory with a fake CLI replaying each backend's real transcript.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from _runner_util import FIXTURES
from agentport import create_llm_adapter
from agentport.core import CompletionConfig, ErrorKind, Message, ProviderError, ToolPolicy
from agentport.transport import Frame, ProcessRequest, group_members, run_process

pytestmark = pytest.mark.anyio

OK = {
    "codex": "ok-json",
    "claude": "ok-stream-json",
    "gemini": "ok-stream-json",
    "opencode": "ok-json",
    "pi": "ok-json",
    "qwen": "ok-stream-json",
    "copilot": "ok-json",
}
DEADLINE_S = 20.0
_DELTA = b'{"type":"message","timestamp":"t","role":"assistant","content":"x","delta":true}\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runner's trio path is covered by test_runner_*.py


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


async def _complete(
    tmp: Path, cli: str, stdout: bytes, max_events: str | None = None
) -> tuple[Any, float]:
    out = tmp / "stdout.bin"
    out.write_bytes(stdout)
    # `cat`: the fake CLI's line-by-line replay is too slow for a million lines
    exe = tmp / "cat-cli"
    exe.write_text(f"#!/bin/sh\ncat >/dev/null\nexec cat {out}\n")
    exe.chmod(0o755)
    options: dict[str, Any] = {"executable": str(exe), "grace_s": 1.0}
    if max_events is not None:
        options["max_events"] = int(max_events)
    llm = create_llm_adapter(cli, retry=False, **{cli: options})
    started = time.monotonic()
    result = await llm.complete(
        [Message.user("Say hi")],
        # the transcripts come from runs with the CLIs' own tools; this is about their output
        CompletionConfig(total_timeout_s=DEADLINE_S, tools=ToolPolicy.cli_defaults()),
    )
    elapsed = time.monotonic() - started
    assert isinstance(result, Success | Failure)
    if isinstance(result, Failure):
        assert isinstance(result.failure(), ProviderError)
        pid = result.failure().details.get("pid")
    else:
        pid = result.unwrap().raw.extra.get("pid")
    assert pid is None or group_members(int(pid)) == []
    return result, elapsed


def _transcript(cli: str) -> bytes:
    return (FIXTURES / cli / f"{OK[cli]}.stdout").read_bytes()


def _mis_shaped(transcript: bytes) -> bytes:
    """Each event of the transcript again with every field replaced by a value of the wrong
    type (numbers for objects, objects for strings, ...), keeping the event type."""
    out = []
    wrong: list[Any] = [12345, "text", None, [], {}, [1, "x"], {"a": [1]}, True, -1.5]
    for line in transcript.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        for i, bad in enumerate(wrong):
            mutated = {k: (v if k == "type" else bad) for k, v in event.items()}
            for key, value in event.items():  # one level down too
                if isinstance(value, dict) and key != "type":
                    mutated[key] = {k: wrong[(i + 1) % len(wrong)] for k in value}
            out.append(json.dumps(mutated).encode())
    return b"\n".join(out) + b"\n"


@pytest.mark.parametrize("cli", sorted(OK))
async def test_garbage_lines_before_a_good_answer_are_kept_as_noise(
    tmp_path: Path, cli: str
) -> None:
    clean, _ = await _complete(tmp_path, cli, _transcript(cli))
    assert isinstance(clean, Success), clean
    garbage = (
        b'{"type": "result", "unterminated\n'  # malformed JSON
        b"\xff\xfe\x80 not utf-8 \xc3\x28\n"  # invalid UTF-8
        b'{"type": "agentport.unknown.event", "payload": {"x": [1, 2]}}\n'
        b"[1, 2, 3]\n"
        b'"just a string"\n'
        b"\n\n\r\n"
    )
    result, elapsed = await _complete(tmp_path, cli, garbage + _transcript(cli))
    assert isinstance(result, Success), result
    assert result.unwrap().content == clean.unwrap().content
    assert result.unwrap().raw.extra["noise_lines"] >= 2
    assert elapsed < DEADLINE_S + 5


@pytest.mark.parametrize("cli", sorted(OK))
async def test_mis_shaped_events_end_in_a_value_never_an_exception(
    tmp_path: Path, cli: str
) -> None:
    result, elapsed = await _complete(tmp_path, cli, _mis_shaped(_transcript(cli)))
    if isinstance(result, Failure):
        assert isinstance(result.failure().kind, ErrorKind)
    assert elapsed < DEADLINE_S + 5


@pytest.mark.parametrize("cli", sorted(OK))
async def test_stream_cut_mid_line_is_a_value(tmp_path: Path, cli: str) -> None:
    transcript = _transcript(cli).rstrip(b"\n")
    cut = transcript[: len(transcript) - max(5, len(transcript.rsplit(b"\n", 1)[-1]) // 2)]
    result, elapsed = await _complete(tmp_path, cli, cut)
    if isinstance(result, Failure):
        assert isinstance(result.failure().kind, ErrorKind)
    assert elapsed < DEADLINE_S + 5


@pytest.mark.parametrize("cli", ["claude", "codex"])  # a followed file, and a pipe
async def test_a_100_mb_line_is_bad_output_not_memory_or_a_hang(tmp_path: Path, cli: str) -> None:
    big = b'{"type": "x", "text": "' + b"y" * (100 * 1024 * 1024) + b'"}\n'
    result, elapsed = await _complete(tmp_path, cli, big + _transcript(cli))
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.bad_output
    assert "exceeded" in result.failure().message
    assert elapsed < DEADLINE_S + 5


@pytest.mark.parametrize("cli", sorted(OK))
async def test_json_nested_200000_deep_is_bad_output(tmp_path: Path, cli: str) -> None:
    bomb = b'{"type": "message", "a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n"
    result, _ = await _complete(tmp_path, cli, bomb + _transcript(cli))
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.bad_output
    assert "deeper than" in result.failure().message


async def test_a_million_events_end_in_a_typed_failure_within_the_deadline(
    tmp_path: Path,
) -> None:
    # with the defaults, whichever bound comes first: max_events (200 000) or the deadline
    result, elapsed = await _complete(tmp_path, "gemini", _DELTA * 1_000_000)
    assert isinstance(result, Failure), result
    assert result.failure().kind in (ErrorKind.bad_output, ErrorKind.timeout)
    assert elapsed < DEADLINE_S + 5


async def test_events_past_max_events_are_bad_output(tmp_path: Path) -> None:
    result, _ = await _complete(tmp_path, "gemini", _DELTA * 5000, max_events="1000")
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.bad_output
    assert "more than 1000 events" in result.failure().message


async def test_a_decoder_that_raises_becomes_bad_output(tmp_path: Path) -> None:
    async def on_frame(frame: Frame) -> bool:
        raise TypeError("unexpected shape")

    out = tmp_path / "out"
    out.write_text('{"type": "x"}\n')
    argv = ["sh", "-c", f"cat {out}; sleep 30"]
    result = await run_process(ProcessRequest(argv, grace_s=1.0), on_frame)
    assert result.error is not None
    assert result.error.kind is ErrorKind.bad_output
    assert "TypeError: unexpected shape" in result.error.message
    assert result.pid is not None
    assert group_members(result.pid) == []
