"""The one subprocess runner every CLI backend uses.

`run_process(request, on_frame)` spawns `request.argv` (a list, never a shell) in a new
process group, feeds stdin (or gives none: `DEVNULL`), frames stdout as NDJSON and awaits
`on_frame` for each line, drains stderr concurrently into a bounded tail, and always ends by
killing whatever is left of the group (SIGTERM, `grace_s`, SIGKILL) in a shielded teardown in
which every await is bounded. It returns a `ProcessResult`; expected failures (the CLI is not
installed, a timeout, an over-long line or command line) are in `ProcessResult.error`.
Cancellation propagates, after the teardown.

Timeouts, in seconds: `startup` (no first stdout byte), `idle` (no stdout between two chunks;
time spent in `on_frame` is not counted), `total` (wall clock). Source: DESIGN.md (runner),
library-anchors.md §4b (anyio practice) and §2 #8-#12; cli-contracts.md "What every adapter
must do" (close stdin, enforce your own timeout).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from ..core import ErrorKind, ProviderError, TimeoutWhich
from ._env import check_argv, child_env
from ._framer import DEFAULT_MAX_LINE_BYTES, Frame, LineFramer, LineTooLongError, parse_line

__all__ = ["OnFrame", "ProcessRequest", "ProcessResult", "group_members", "run_process"]

_CHUNK = 256 * 1024
_NOISE_CHARS = 2000
_DRAIN_S = 0.5
_POLL_S = 0.02

OnFrame = Callable[[Frame], Awaitable[bool | None]]
"""Called for each stdout line; return True to stop reading (a terminal event was seen): the
process then gets `linger_s` to exit on its own before the group is stopped."""


@dataclass(frozen=True, slots=True)
class ProcessRequest:
    """What to run.

    Attributes:
        argv: program and arguments (never a shell string).
        env: the child's whole environment; None = `child_env(os.environ)`.
        cwd: working directory; None = a fresh empty temporary directory, removed afterwards.
        stdin: bytes written to stdin, which is then closed; None = no stdin (`DEVNULL`).
        startup_timeout_s / idle_timeout_s / total_timeout_s: see the module docstring.
        grace_s: seconds between SIGTERM and SIGKILL, and for the exit after stdout's EOF.
        linger_s: seconds a process may keep running after its terminal event before it is
            stopped (codex 0.171 lingers about 5 s after `turn.completed`).
        max_line_bytes: longest stdout line accepted (default 64 MiB).
        stderr_tail_bytes: how much of the end of stderr is kept.
        noise_lines: how many non-JSON stdout lines are kept for diagnostics.
        stdout_to_file: give the child a private file as stdout and follow it (polling every
            20 ms) instead of a pipe. Node/Bun CLIs that exit with writes still queued lose
            the end of a large output on a pipe (claude 2.1.197 and gemini 0.61.0 cut an
            8 MiB answer short and exit 0); a regular file is written synchronously.
    """

    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: Path | None = None
    stdin: bytes | None = None
    startup_timeout_s: float = 120.0
    idle_timeout_s: float = 300.0
    total_timeout_s: float = 1800.0
    grace_s: float = 3.0
    linger_s: float = 1.0
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    stderr_tail_bytes: int = 64 * 1024
    noise_lines: int = 50
    stdout_to_file: bool = False


@dataclass(slots=True)
class ProcessResult:
    """How a run ended.

    Attributes:
        exit_code: the leader's exit status (negative: killed by that signal), None if never run.
        error: a runner-level failure (not_installed, timeout, bad_output, invalid_request).
        stderr_tail: the last `stderr_tail_bytes` of stderr, decoded.
        noise: the last non-JSON stdout lines (each cut at 2000 characters).
        noise_count: how many non-JSON stdout lines there were.
        json_lines: how many JSON lines were handed to `on_frame`.
        stopped: `on_frame` asked to stop at a terminal event.
        pid: the leader's pid (= its process group id).
        duration_s: wall-clock seconds.
    """

    exit_code: int | None = None
    error: ProviderError | None = None
    stderr_tail: str = ""
    noise: tuple[str, ...] = ()
    noise_count: int = 0
    json_lines: int = 0
    stopped: bool = False
    pid: int | None = None
    duration_s: float = 0.0
    _noise: deque[str] = field(default_factory=deque, repr=False)


def _tempdir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix=prefix)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids in process group *pgid* (Linux `/proc`; elsewhere `killpg(0)`)."""
    try:
        os.killpg(pgid, 0)  # cheap: most groups are already gone
    except (ProcessLookupError, PermissionError):
        return []
    proc = Path("/proc")
    if not proc.is_dir():
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # fields after the parenthesised command: state ppid pgrp ...
        rest = stat[stat.rfind(")") + 2 :].split()
        if len(rest) > 2 and rest[0] not in ("Z", "X") and int(rest[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _wait_gone(process: Process, pgid: int, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        await process.wait()
        while group_members(pgid):  # noqa: ASYNC110 - polling /proc; there is no event
            await anyio.sleep(0.02)
        return True
    return False


async def _teardown(process: Process, grace_s: float) -> None:
    """Kill what is left of the group: SIGTERM, `grace_s`, SIGKILL. Shielded; every await bounded.

    The pgid is the leader's pid, recorded at spawn; it cannot be recycled while any member of
    the group is alive, and we only signal while members remain.
    """
    pgid = process.pid
    with anyio.CancelScope(shield=True):
        if process.returncode is None or group_members(pgid):
            _signal_group(pgid, signal.SIGTERM)
            if not await _wait_gone(process, pgid, grace_s):
                _signal_group(pgid, signal.SIGKILL)
                await _wait_gone(process, pgid, max(grace_s, 1.0))
        with anyio.move_on_after(max(grace_s, 1.0)):
            await process.aclose()


async def _drain(
    stream: ByteReceiveStream, tail: deque[bytes], keep: int, done: anyio.Event
) -> None:
    size = 0
    try:
        async for chunk in stream:
            tail.append(chunk)
            size += len(chunk)
            while size - len(tail[0]) >= keep:
                size -= len(tail.popleft())
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        done.set()


async def _feed(stream: ByteSendStream, data: bytes) -> None:
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the child closed its stdin early; its exit status tells the rest
    finally:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.aclose()


class _FileTail:
    """A byte stream over a growing file: `receive` polls for new data and ends (EndOfStream)
    once the writer has exited and everything written was read."""

    def __init__(self, path: Path, watch: _ExitWatch) -> None:
        self._fh = path.open("rb")
        self._watch = watch

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        while True:
            exited = self._watch.exited  # read BEFORE the data: nothing can follow it
            data = self._fh.read(max_bytes)
            if data:
                return data
            if exited:
                raise anyio.EndOfStream
            await anyio.sleep(_POLL_S)

    def close(self) -> None:
        self._fh.close()


class _ExitWatch:
    """Set when the leader exits: a grandchild may still hold stdout open, so reading then
    stops after `_DRAIN_S` without data instead of waiting for an EOF that never comes."""

    def __init__(self, follows_file: bool = False) -> None:
        self.exited = False
        self.follows_file = follows_file
        self.scope: anyio.CancelScope | None = None

    async def watch(self, process: Process) -> None:
        await process.wait()
        self.exited = True
        if self.scope is not None and not self.follows_file:
            self.scope.deadline = min(self.scope.deadline, anyio.current_time() + _DRAIN_S)


async def _pump(
    stdout: ByteReceiveStream | _FileTail,
    request: ProcessRequest,
    on_frame: OnFrame,
    result: ProcessResult,
    watch: _ExitWatch,
) -> ProviderError | None:
    framer = LineFramer(request.max_line_bytes)
    first = True

    async def handle(lines: list[bytes | bytearray]) -> bool:
        for line in lines:
            frame = parse_line(line)
            if frame is None:
                continue
            if frame.is_json:
                result.json_lines += 1
            else:
                result.noise_count += 1
                result._noise.append(frame.text[:_NOISE_CHARS])
                if len(result._noise) > request.noise_lines:
                    result._noise.popleft()
            if await on_frame(frame):
                result.stopped = True
                return True
        return False

    try:
        while True:
            which: TimeoutWhich = "startup" if first else "idle"
            limit = request.startup_timeout_s if first else request.idle_timeout_s
            if watch.exited and not watch.follows_file:
                limit = min(limit, _DRAIN_S)
            chunk = b""
            with anyio.move_on_after(limit) as scope:
                watch.scope = scope
                with suppress(anyio.EndOfStream):
                    chunk = await stdout.receive(_CHUNK)
            watch.scope = None
            if scope.cancelled_caught and not (watch.exited and not watch.follows_file):
                return ProviderError(ErrorKind.timeout, f"no output for {limit:g}s", timeout=which)
            if not chunk:  # EOF, or the leader is gone and its orphans keep the pipe open
                await handle(framer.close())
                return None
            first = False
            if await handle(framer.feed(chunk)):
                return None
    except LineTooLongError as exc:
        return ProviderError(ErrorKind.bad_output, str(exc), retryable=False)


async def run_process(request: ProcessRequest, on_frame: OnFrame) -> ProcessResult:
    """Run *request* to completion; see the module docstring. Never raises for expected
    failures (they are in `result.error`); cancellation propagates after the teardown."""
    started = time.monotonic()
    result = ProcessResult()
    bad = check_argv(request.argv)
    if bad is not None:
        result.error = bad
        return result
    env = dict(request.env) if request.env is not None else child_env(os.environ)
    with ExitStack() as scratch:
        # temporary folders only when needed: each costs a rmdir on the way out
        cwd = request.cwd or Path(scratch.enter_context(_tempdir("agentport-cwd-")))
        out_path = Path()
        stdout_target: Any = subprocess.PIPE
        if request.stdout_to_file:
            out_path = Path(scratch.enter_context(_tempdir("agentport-out-"))) / "stdout"
            stdout_target = out_path.open("wb")
        try:
            process = await anyio.open_process(
                list(request.argv),
                stdin=subprocess.PIPE if request.stdin is not None else subprocess.DEVNULL,
                stdout=stdout_target,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=sys.platform != "win32",
            )
        except FileNotFoundError as exc:
            result.error = ProviderError(
                ErrorKind.not_installed, f"cannot start {request.argv[0]!r}: {exc.strerror}"
            )
            return result
        except OSError as exc:
            result.error = ProviderError(
                ErrorKind.process_failed,
                f"cannot start {request.argv[0]!r}: {exc.strerror or exc}",
                retryable=False,
            )
            return result
        finally:
            if request.stdout_to_file:
                stdout_target.close()  # the child holds its own descriptor
        result.pid = process.pid
        tail: deque[bytes] = deque()
        watch = _ExitWatch(follows_file=request.stdout_to_file)
        reader: ByteReceiveStream | _FileTail | None = process.stdout
        if request.stdout_to_file:
            reader = _FileTail(out_path, watch)
        try:
            assert reader is not None
            assert process.stderr is not None
            async with anyio.create_task_group() as tg:
                stderr_done = anyio.Event()
                tg.start_soon(_drain, process.stderr, tail, request.stderr_tail_bytes, stderr_done)
                if request.stdin is not None and process.stdin is not None:
                    tg.start_soon(_feed, process.stdin, request.stdin)
                tg.start_soon(watch.watch, process)
                with anyio.move_on_after(request.total_timeout_s) as total:
                    result.error = await _pump(reader, request, on_frame, result, watch)
                    if result.error is None:
                        # stdout is at EOF, or a terminal event arrived: the exit follows
                        wait = request.linger_s if result.stopped else request.grace_s
                        with anyio.move_on_after(wait):
                            await process.wait()
                if total.cancelled_caught:
                    result.error = ProviderError(
                        ErrorKind.timeout,
                        f"still running after {request.total_timeout_s:g}s",
                        timeout="total",
                    )
                await _teardown(process, request.grace_s)
                with anyio.move_on_after(0.5):
                    await stderr_done.wait()
                tg.cancel_scope.cancel()
        finally:
            await _teardown(process, request.grace_s)
            if isinstance(reader, _FileTail):
                reader.close()
            result.exit_code = process.returncode
            data = b"".join(tail)[-request.stderr_tail_bytes :]
            result.stderr_tail = data.decode("utf-8", errors="replace")
            result.noise = tuple(result._noise)
            result.duration_s = time.monotonic() - started
    return result
