"""`ProcessRequest.stdin_more`: a CLI that speaks a protocol on stdin (codex's `app-server`) gets
its next command after a frame it printed, and its stdin stays open until the run is decided,
then closes so that the CLI exits by itself (an rpc mode exits at EOF)."""

from __future__ import annotations

import sys
import time

import anyio
import pytest

from agentport.transport import Frame, ProcessRequest, run_process

pytestmark = pytest.mark.anyio

# echoes each command as a frame; at stdin's EOF prints a marker and exits 0 (as rpc modes do)
ECHO = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    print(json.dumps({'got': json.loads(line)}), flush=True)\n"
    "print(json.dumps({'eof': True}), flush=True)\n"
)


async def test_the_next_command_follows_a_frame_and_stdin_closes_at_the_decision() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](4)
    seen: list[object] = []

    async def on_frame(frame: Frame) -> bool:
        seen.append(frame.value)
        got = frame.value.get("got") if isinstance(frame.value, dict) else None
        if got == {"n": 1}:
            send.send_nowait(b'{"n": 2}\n')  # the reply to the first frame
        return got == {"n": 2}  # the run is decided here: stdin must close now

    started = time.monotonic()
    with send, receive:
        request = ProcessRequest(
            [sys.executable, "-c", ECHO], stdin=b'{"n": 1}\n', stdin_more=receive,
            linger_s=10.0, grace_s=5.0, total_timeout_s=30,
        )  # fmt: skip
        result = await run_process(request, on_frame)
    assert result.error is None, result.error
    assert seen[:2] == [{"got": {"n": 1}}, {"got": {"n": 2}}]
    assert result.exit_code == 0  # it exited at EOF by itself: not SIGTERM'd after linger_s
    assert time.monotonic() - started < 5


async def test_without_stdin_more_stdin_closes_after_the_bytes() -> None:
    seen: list[object] = []

    async def on_frame(frame: Frame) -> bool:
        seen.append(frame.value)
        return False

    request = ProcessRequest([sys.executable, "-c", ECHO], stdin=b'{"n": 1}\n', total_timeout_s=30)
    result = await run_process(request, on_frame)
    assert result.exit_code == 0
    assert seen == [{"got": {"n": 1}}, {"eof": True}]
