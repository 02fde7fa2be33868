"""The one subprocess runner every CLI backend uses.

`run_process(request, on_frame)` spawns `request.argv` (a list, never a shell) in a new
process group, feeds stdin (or gives none: `DEVNULL`), frames stdout as NDJSON and awaits
`on_frame` for each line, drains stderr concurrently into a bounded tail, and always ends by
killing whatever is left of the group (SIGTERM, `grace_s`, SIGKILL) in a shielded teardown in
which every await is bounded. It returns a `ProcessResult`; expected failures (the CLI is not
installed, a timeout, an over-long, too deeply nested or undecodable line, too many events, a
failure named by `on_stderr_line`) are in `ProcessResult.error`. Cancellation propagates,
after the teardown.

On POSIX the CLI is started by this process's guardian (`_spawner.py`, `_guardian.py`: a
stdlib-only Python program above every CLI): when this process dies, even by SIGKILL, the
guardian kills the CLI's group and every descendant it can find; when the CLI exits, its call
reaper ends whatever it left running, in its group or not, before the exit is reported.
docs/runner.md has the mechanism and its limits.

Timeouts, in seconds: `startup` (no first stdout byte), `idle` (no stdout between two chunks;
time spent in `on_frame` is not counted), `total` (wall clock). Why each exists: a CLI that
cannot start must fail in milliseconds, not hang (anthropics/claude-agent-sdk-typescript#255);
a failed start must leave no process behind (anthropics/claude-code#18666); `codex exec` waits
for stdin EOF from a non-TTY parent (openai/codex#20919), so stdin is always closed or fed; a
run can stall silently after its first event (openai/codex#28476), hence `idle` apart from
`total`; and an error event may never be followed by an exit (openai/codex#41984), so every
CLI gets agentport's own deadline. Teardown follows anyio's practice: shielded, every await
in it bounded.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream

from ..core import Deadline, ErrorKind, ProviderError, TimeoutWhich
from ._env import check_argv, child_env
from ._framer import (
    DEFAULT_MAX_LINE_BYTES,
    MAX_JSON_DEPTH,
    Frame,
    LineFramer,
    LineTooLongError,
    NestingTooDeepError,
    parse_line,
)
from ._notices import OnStderrLine, Stop, drain, follow_logs
from ._rundir import private_tempdir
from ._spawner import cannot_start, missing_executable, open_guarded

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "OnFrame",
    "OnStderrLine",
    "ProcessRequest",
    "ProcessResult",
    "group_members",
    "run_capture",
    "run_capture_sync",
    "run_process",
]

_CHUNK = 256 * 1024
_STDIN_CHUNK = 64 * 1024  # a pipe's buffer (Linux): `stdin_written` is this precise
_NOISE_CHARS = 2000
_DRAIN_S = 0.5
_POLL_S = 0.02
DEFAULT_MAX_EVENTS = 200_000
# What a decoder may raise on a line of an unexpected shape: a value, never an exception out
# of complete(). (anyio's stream errors and cancellation pass through.)
_DECODE_ERRORS = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    RecursionError,
    ArithmeticError,
)

OnFrame = Callable[[Frame], Awaitable[bool | float | None]]
"""Called for each stdout line; return True to stop reading (a terminal event was seen): the
process then gets `linger_s` to exit on its own before the group is stopped. Return a float
(seconds) to stop the same way unless more stdout arrives within that grace (a fatal error
line: the CLI may still recover); False/None to go on."""


@dataclass(frozen=True, slots=True)
class ProcessRequest:
    """What to run.

    Attributes:
        argv: program and arguments (never a shell string).
        env: the child's whole environment; None = `child_env(os.environ)`.
        cwd: working directory; None = a fresh empty temporary directory, removed afterwards.
        stdin: bytes written to stdin, which is then closed; None = no stdin (`DEVNULL`).
        stdin_more: for a CLI that speaks a protocol on stdin (gjc's `--mode rpc`): more
            bytes to write after `stdin`, as they arrive on this stream; stdin then stays open
            until stdout ends or the run is decided, and is closed at that point (an RPC-mode
            CLI exits at EOF, and at EOF before its answer it drops the turn).
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
        on_stderr_line: see `OnStderrLine`; None = stderr is only kept as a tail.
        notice_grace_s: seconds between an `on_stderr_line` error and the end of the run, in
            which stdout may still decide (a final event right after the notice).
        max_events: most JSON lines handed to `on_frame`; one more is `bad_output` (a CLI
            printing events without end must not grow the caller's memory without end).
        max_json_depth: deepest JSON nesting accepted on a line; deeper is `bad_output`.
        guard: start the CLI under the guardian (POSIX), so it dies with this process.
        log_dir: a folder the CLI writes log files into: every line appended to any file in
            it also goes to `on_stderr_line` (polled every 0.25 s; qwen writes its retry
            notices only to its debug log).
        deadline: the call's `Deadline` (its plan's), which the whole run ends by; None =
            `total_timeout_s` from the start of the run.
    """

    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: Path | None = None
    stdin: bytes | None = None
    stdin_more: MemoryObjectReceiveStream[bytes] | None = None
    startup_timeout_s: float = 120.0
    idle_timeout_s: float = 300.0
    total_timeout_s: float = 1800.0
    grace_s: float = 3.0
    linger_s: float = 1.0
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    stderr_tail_bytes: int = 64 * 1024
    noise_lines: int = 50
    stdout_to_file: bool = False
    on_stderr_line: OnStderrLine | None = None
    max_events: int = DEFAULT_MAX_EVENTS
    max_json_depth: int = MAX_JSON_DEPTH
    guard: bool = True
    log_dir: Path | None = None
    notice_grace_s: float = 1.0
    deadline: Deadline | None = None

    def ends(self, now: float | None = None) -> Deadline:
        """When the whole run must end: `deadline`, else `total_timeout_s` from *now*."""
        return self.deadline or Deadline.after(self.total_timeout_s, "total", now)


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
        stdin_size: bytes of `ProcessRequest.stdin` (0 without stdin).
        stdin_written: how many of them the CLI's stdin pipe took: fewer than `stdin_size`
            means the CLI closed its stdin, or exited, before reading the whole prompt
            (`stdin_short`). The pipe buffers up to 64 KiB (Linux), so this is an upper bound
            of what the CLI read, and a CLI that stops early within the last 64 KiB is not
            seen here.
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
    stdin_size: int = 0
    stdin_written: int = 0
    _noise: deque[str] = field(default_factory=deque, repr=False)

    def stdin_short(self) -> str | None:
        """A sentence naming the bytes read of the total when the CLI did not take its whole
        stdin, else None."""
        if self.stdin_written >= self.stdin_size:
            return None
        return (
            f"the CLI's stdin took only {self.stdin_written} of {self.stdin_size} bytes of "
            "the prompt (it closed its stdin or exited before reading the rest)"
        )


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


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _wait_gone(process: Process, pgid: int, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        await process.wait()
        while group_members(pgid):  # noqa: ASYNC110 - polling /proc; there is no event
            await anyio.sleep(0.02)
        return True
    return False


async def _teardown(process: Process, grace_s: float, close: bool = True) -> None:
    """Kill what is left of the group: SIGTERM, `grace_s`, SIGKILL, then (*close*) close the
    process's pipes. Shielded; every await bounded.

    The pgid is the leader's pid, recorded at spawn; it cannot be recycled while any member of
    the group is alive, and we only signal while members remain.
    """
    pgid = process.pid
    with anyio.CancelScope(shield=True):
        if process.returncode is None or group_members(pgid):
            signal_group(pgid, signal.SIGTERM)
            if not await _wait_gone(process, pgid, grace_s):
                signal_group(pgid, signal.SIGKILL)
                await _wait_gone(process, pgid, max(grace_s, 1.0))
        if close:
            with anyio.move_on_after(max(grace_s, 1.0)):
                await process.aclose()


async def close_at_eof(process: Process, grace_s: float) -> None:
    """Close a long-lived process: its stdin first (a CLI reading requests exits at EOF), up
    to min(`grace_s`, 1) seconds for it to exit, then `_teardown`. Shielded; every await
    bounded."""
    with anyio.CancelScope(shield=True):
        if process.stdin is not None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdin.aclose()
        with anyio.move_on_after(min(grace_s, 1.0)):
            await process.wait()
        await _teardown(process, grace_s)


def total_timeout(seconds: float) -> ProviderError:
    """The failure of a run still going when its whole-call budget of *seconds* ran out."""
    return ProviderError(ErrorKind.timeout, f"still running after {seconds:g}s", timeout="total")


async def _feed(
    stream: ByteSendStream,
    data: bytes,
    result: ProcessResult,
    more: MemoryObjectReceiveStream[bytes] | None = None,
    until: anyio.CancelScope | None = None,
) -> None:
    """Write *data* (counted in `result.stdin_written`, chunk by chunk), then *more*."""
    try:
        for start in range(0, len(data), _STDIN_CHUNK):
            chunk = data[start : start + _STDIN_CHUNK]
            await stream.send(chunk)
            result.stdin_written += len(chunk)
        if more is not None and until is not None:
            with until:  # cancelled when stdout ends or the run is decided
                async for chunk in more:
                    await stream.send(chunk)
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
    grace: float | None = None  # the last on_frame's grace (a pending fatal error)

    async def handle(lines: list[bytes | bytearray]) -> bool:
        nonlocal grace
        for line in lines:
            frame = parse_line(line, request.max_json_depth)
            if frame is None:
                continue
            if frame.is_json:
                result.json_lines += 1
                if result.json_lines > request.max_events:
                    raise _TooManyEvents(request.max_events)
            else:
                result.noise_count += 1
                result._noise.append(frame.text[:_NOISE_CHARS])
                if len(result._noise) > request.noise_lines:
                    result._noise.popleft()
            try:
                stop = await on_frame(frame)
            except _DECODE_ERRORS as exc:
                raise _Undecodable(result.json_lines + result.noise_count, exc) from exc
            if stop is True:
                result.stopped = True
                return True
            grace = float(stop) if isinstance(stop, float) else None
        return False

    try:
        while True:
            which: TimeoutWhich = "startup" if first else "idle"
            limit = request.startup_timeout_s if first else request.idle_timeout_s
            if watch.exited and not watch.follows_file:
                limit = min(limit, _DRAIN_S)
            waiting = grace is not None and grace <= limit
            if grace is not None:
                limit = min(limit, grace)
            chunk = b""
            with anyio.move_on_after(limit) as scope:
                watch.scope = scope
                with suppress(anyio.EndOfStream):
                    chunk = await stdout.receive(_CHUNK)
            watch.scope = None
            if scope.cancelled_caught and waiting:
                result.stopped = True  # silence after a fatal error line: that error decides
                return None
            if scope.cancelled_caught and not (watch.exited and not watch.follows_file):
                return ProviderError(ErrorKind.timeout, f"no output for {limit:g}s", timeout=which)
            if not chunk:  # EOF, or the leader is gone and its orphans keep the pipe open
                await handle(framer.close())
                return None
            first = False
            if await handle(framer.feed(chunk)):
                return None
            # a stream that always has data ready never yields on asyncio: without this, a
            # CLI flooding stdout would keep the total deadline from firing
            await anyio.lowlevel.checkpoint()
    except (LineTooLongError, NestingTooDeepError, _TooManyEvents, _Undecodable) as exc:
        return ProviderError(ErrorKind.bad_output, str(exc), retryable=False)


class _TooManyEvents(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the CLI printed more than {limit} events (max_events)")


class _Undecodable(Exception):
    def __init__(self, number: int, exc: BaseException) -> None:
        super().__init__(
            f"output line {number} could not be decoded ({type(exc).__name__}: {exc})"[:500]
        )


async def run_process(request: ProcessRequest, on_frame: OnFrame) -> ProcessResult:
    """Run *request* to completion; see the module docstring. Never raises for expected
    failures (they are in `result.error`); cancellation propagates after the teardown."""
    started = time.monotonic()
    ends = request.ends(started)
    result = ProcessResult()
    bad = check_argv(request.argv)
    if bad is not None:
        result.error = bad
        return result
    env = dict(request.env) if request.env is not None else child_env(os.environ)
    with ExitStack() as scratch:
        # temporary folders only when needed: each costs a rmdir on the way out
        cwd = request.cwd or scratch.enter_context(private_tempdir("agentport-cwd-"))
        out_path = Path()
        stdout_target: Any = None  # a pipe
        if request.stdout_to_file:
            out_path = scratch.enter_context(private_tempdir("agentport-out-")) / "stdout"
            stdout_target = out_path.open("wb")
        started_process = await _spawn(request, cwd, env, stdout_target)
        if isinstance(started_process, ProviderError):
            result.error = started_process
            return result
        process = started_process
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
                stop = Stop(request.on_stderr_line, request.notice_grace_s)
                tg.start_soon(
                    drain, process.stderr, tail, request.stderr_tail_bytes, stderr_done, stop
                )
                feeding = anyio.CancelScope()
                if request.stdin is not None and process.stdin is not None:
                    more = request.stdin_more
                    result.stdin_size = len(request.stdin)
                    tg.start_soon(_feed, process.stdin, request.stdin, result, more, feeding)
                tg.start_soon(watch.watch, process)
                if request.log_dir is not None and stop.hook is not None:
                    tg.start_soon(follow_logs, request.log_dir, stop)
                with anyio.CancelScope() as stop.scope:
                    with anyio.move_on_after(ends.remaining()) as total:
                        result.error = await _pump(reader, request, on_frame, result, watch)
                        stop.closed = True  # stdout ended or was decided: stderr cannot undo it
                        feeding.cancel()  # a held stdin closes: an RPC-mode CLI exits at EOF
                        if result.error is None:
                            # stdout is at EOF, or a terminal event arrived: the exit follows
                            wait = request.linger_s if result.stopped else request.grace_s
                            with anyio.move_on_after(wait):
                                await process.wait()
                decided, stop.closed = stop.closed, True
                if stop.error is not None and not decided:
                    result.error = stop.error
                elif total.cancelled_caught and not result.stopped:  # not while lingering
                    result.error = total_timeout(request.total_timeout_s)
                await _teardown(process, request.grace_s, close=False)
                with anyio.move_on_after(0.5):  # the group is gone: stderr is at EOF, or an
                    await stderr_done.wait()  # orphan outside the group still holds it
                tg.cancel_scope.cancel()
        finally:
            await _settle(result, process, request, reader, tail, started)
    return result


async def _spawn(
    request: ProcessRequest, cwd: Path, env: dict[str, str], stdout_target: Any
) -> Process | ProviderError:
    """The request's process group started (its guardian first), or why it could not
    start. Closes *stdout_target* (a file the child then holds) either way."""
    try:
        if request.guard and (why := missing_executable(request.argv[0], env)) is not None:
            return cannot_start(request.argv[0], why)
        # shielded: cancelled half-way, asyncio kills the pid it forked and drops the
        # handle, so the group (the CLI under its guardian) would run on untracked; a
        # cancellation is taken after the spawn, where the teardown below owns the group
        with anyio.CancelScope(shield=True):
            process = await open_guarded(
                request.argv,
                cwd=cwd,
                env=env,
                stdin=request.stdin is not None,
                stdout=stdout_target,
                guard=request.guard,
                grace_s=request.grace_s,
            )
        return process
    except OSError as exc:
        return cannot_start(request.argv[0], exc)
    finally:
        if request.stdout_to_file:
            stdout_target.close()  # the child holds its own descriptor


async def _settle(
    result: ProcessResult, process: Process, request: ProcessRequest,
    reader: ByteReceiveStream | _FileTail | None, tail: deque[bytes], started: float,
) -> None:  # fmt: skip
    """The teardown every run ends with (the process group gone), and what the result
    keeps of the process: exit code, stderr tail, noise, duration."""
    await _teardown(process, request.grace_s)
    if isinstance(reader, _FileTail):
        reader.close()
    result.exit_code = process.returncode
    data = b"".join(tail)[-request.stderr_tail_bytes :]
    result.stderr_tail = data.decode("utf-8", errors="replace")
    result.noise = tuple(result._noise)
    result.duration_s = time.monotonic() - started


async def run_capture(
    request: ProcessRequest, max_bytes: int = 64 << 20
) -> tuple[ProcessResult, str]:
    """Run *request* like `run_process` (guardian, group kill, the request's startup / idle /
    total timeouts) and return its stdout as text: the auxiliary commands agentport runs
    (`--version`, `codex debug models`) go through the one runner too. A JSON line comes back
    re-serialised, blank lines are dropped; more than *max_bytes* of output is `bad_output`.
    Never raises for expected failures (`result.error`)."""
    parts: list[str] = []
    size = 0

    async def on_frame(frame: Frame) -> bool:
        nonlocal size
        text = json.dumps(frame.value, ensure_ascii=False) if frame.is_json else frame.text
        size += len(text) + 1
        if size > max_bytes:
            return True
        parts.append(text)
        return False

    result = await run_process(request, on_frame)
    if size > max_bytes and result.error is None:
        result.error = ProviderError(
            ErrorKind.bad_output, f"printed more than {max_bytes} bytes", retryable=False
        )
    return result, "\n".join(parts)


def run_capture_sync(
    request: ProcessRequest, max_bytes: int = 64 << 20
) -> tuple[ProcessResult, str]:
    """`run_capture` for synchronous callers (`agentport backends`, `doctor`): run in a fresh
    event loop on a helper thread, so it works whether or not this thread runs a loop."""
    out: list[tuple[ProcessResult, str]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(anyio.run(run_capture, request, max_bytes))
        except BaseException as exc:  # handed to the caller's thread
            errors.append(exc)

    helper = threading.Thread(target=run, name="agentport-capture", daemon=True)
    helper.start()
    helper.join()
    if errors:
        raise errors[0]
    return out[0]
