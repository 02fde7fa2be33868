"""A long-lived CLI that serves one turn after another: `LiveProcess`.

Some CLIs read one request per stdin line and answer it on stdout without exiting (claude's
`--input-format stream-json`, pi's `--mode rpc`). `LiveProcess.start` spawns one under the
host's guardian (`open_guarded`: it dies with this process, even on SIGKILL);
`turn(data, request, on_frame)` writes *data* to its stdin and reads its stdout through the
runner's own reader (the NDJSON framer, `on_frame`, the request's startup / idle / total
timeouts, its line, depth and event limits) until `on_frame` says the turn ended, and returns
a `ProcessResult` like `run_process` does (`exit_code` None while the process lives). stderr
is read during turns into a bounded tail. A turn that fails (timeout, bad output, the process
gone) leaves the process unfit: `alive()` is False and the caller closes it (`aclose`: stdin
closed, the group torn down like every run). `warm_processes` pools keep these between calls
(docs/warm.md).
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Mapping, Sequence
from contextlib import ExitStack, suppress
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream

from ._notices import Stop, drain
from ._runner import (
    OnFrame,
    ProcessRequest,
    ProcessResult,
    _ExitWatch,
    _pump,
    _teardown,
    close_at_eof,
    signal_group,
    total_timeout,
)
from ._spawner import open_guarded

__all__ = ["LiveProcess"]

_GRACE_S = 3.0  # SIGTERM to SIGKILL when a process is closed, as a run's default `grace_s`


class LiveProcess:
    """One started CLI serving turns; `uses` counts the turns it served (for `WarmPool`).

    Attributes:
        home: what to close with the process (its own working folder), or None.
        workdir: the folder of its own it works in, which the caller empties between calls,
            or None (it works in a folder of the caller's).
    """

    def __init__(self, process: Process, home: ExitStack | None = None) -> None:
        self.process = process
        self.home = home
        self.workdir: Path | None = None
        self.uses = 0
        self._fit = True
        self._tail: deque[bytes] = deque()

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        home: ExitStack | None = None,
        hello: bytes = b"",
    ) -> LiveProcess:
        """Spawn *argv* with stdin, stdout and stderr as pipes and write *hello* (a protocol's
        opening; its answers are read with the first turn). Raises OSError like
        `anyio.open_process` (the caller checks `missing_executable` first)."""
        with anyio.CancelScope(shield=True):  # a spawn cancelled half-way is a lost group
            live = cls(await open_guarded(argv, cwd=cwd, env=env), home)
            await live._send(hello)  # a few hundred bytes into an empty pipe: never blocks
        return live

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr_tail(self) -> str:
        return b"".join(self._tail).decode("utf-8", errors="replace")

    def alive(self) -> bool:
        return self._fit and self.process.returncode is None

    def kill(self) -> None:
        """SIGKILL its group now (no await: for a process of an event loop that is gone)."""
        signal_group(self.process.pid, signal.SIGKILL)
        if self.home is not None:
            self.home.close()

    async def aclose(self) -> None:
        """Close stdin (a CLI reading turns exits at EOF), then tear the group down: shielded,
        bounded by the run's usual grace. A process a turn left unfit (timed out, printed what
        it must not) gets no time to finish: its group is torn down at once."""
        if self._fit:
            await close_at_eof(self.process, _GRACE_S)
        else:
            await _teardown(self.process, _GRACE_S)
        if self.home is not None:
            self.home.close()

    async def _send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        # gone already: the reading sees its stdout end
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self.process.stdin.send(data)

    async def _feed(self, more: MemoryObjectReceiveStream[bytes]) -> None:
        async for chunk in more:
            await self._send(chunk)

    async def turn(self, data: bytes, request: ProcessRequest, on_frame: OnFrame) -> ProcessResult:
        """Write *data* (then what `request.stdin_more` brings, while the turn lasts), read
        until `on_frame` returns True (the turn's terminal event). Only `request`'s reading
        limits and timeouts apply (its argv, env, cwd and stdin were the start's);
        `on_stderr_line` is not watched. Never raises for expected failures."""
        started = time.monotonic()
        result = ProcessResult(pid=self.process.pid)
        self._tail.clear()
        watch = _ExitWatch()
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        drained = anyio.Event()
        async with anyio.create_task_group() as tg:
            keep = request.stderr_tail_bytes
            tg.start_soon(drain, self.process.stderr, self._tail, keep, drained, Stop(None))
            tg.start_soon(watch.watch, self.process)
            with anyio.move_on_after(request.ends().remaining()) as total:
                await self._send(data)
                if request.stdin_more is not None:  # replies to what it prints
                    tg.start_soon(self._feed, request.stdin_more)
                result.error = await _pump(self.process.stdout, request, on_frame, result, watch)
            if total.cancelled_caught and not result.stopped:
                result.error = total_timeout(request.total_timeout_s)
            if not result.stopped:  # it ended, timed out or printed what it must not
                self._fit = False
                if result.error is None:  # its stdout ended: its exit status follows
                    with anyio.move_on_after(request.grace_s):
                        await self.process.wait()
                    with anyio.move_on_after(0.5):  # and all it wrote to stderr
                        await drained.wait()
            tg.cancel_scope.cancel()
        result.exit_code = self.process.returncode
        result.stderr_tail = self.stderr_tail()
        result.noise = tuple(result._noise)
        result.duration_s = time.monotonic() - started
        return result
