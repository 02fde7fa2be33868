"""stderr (and log files) line by line, for `ProcessRequest.on_stderr_line`: a CLI's retry
notice ends the run. Internal to the runner."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream

from ..core import ProviderError

__all__ = ["OnStderrLine", "Stop", "drain", "follow_logs"]

_STDERR_LINE_BYTES = 64 * 1024
_LOG_POLL_S = 0.25
_LOG_READ_BYTES = 1024 * 1024

OnStderrLine = Callable[[str], ProviderError | None]
"""Called with each decoded stderr line (without the newline; a line over 64 KiB is cut) while
the run is live; return a `ProviderError` to end the run now with that error (a CLI's retry
notice: agentport owns retries), else None."""


def _read_from(path: str, offset: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(_LOG_READ_BYTES)


class _Splitter:
    """Bytes in chunks -> whole lines (a line over 64 KiB is cut there)."""

    def __init__(self) -> None:
        self._partial = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        self._partial += chunk
        *lines, rest = self._partial.split(b"\n")
        if len(rest) > _STDERR_LINE_BYTES:
            lines.append(rest[:_STDERR_LINE_BYTES])
            rest = bytearray()
        self._partial = bytearray(rest)
        return [bytes(line[:_STDERR_LINE_BYTES]) for line in lines]

    def close(self) -> list[bytes]:
        line, self._partial = bytes(self._partial), bytearray()
        return [line[:_STDERR_LINE_BYTES]] if line else []


class Stop:
    """How `on_stderr_line` ends a live run: the first error it returns, and the scope the run
    reads stdout in (ended `grace_s` later, unless stdout decides first). Lines after that
    scope closed are not looked at."""

    def __init__(self, hook: OnStderrLine | None, grace_s: float = 0.0) -> None:
        self.hook = hook
        self.grace_s = grace_s
        self.error: ProviderError | None = None
        self.scope: anyio.CancelScope | None = None
        self.closed = False

    @property
    def listening(self) -> bool:
        return self.hook is not None and not self.closed and self.error is None

    def lines(self, raw: list[bytes]) -> None:
        for line in raw:
            if not self.listening:
                return
            assert self.hook is not None
            error = self.hook(line.decode("utf-8", errors="replace").rstrip("\r"))
            if error is not None:
                # the end comes after `grace_s`, so a final event the CLI prints right
                # after its notice (with the HTTP status the notice lacks) still decides
                self.error = error
                if self.scope is not None:
                    self.scope.deadline = min(
                        self.scope.deadline, anyio.current_time() + self.grace_s
                    )


async def drain(
    stream: ByteReceiveStream, tail: deque[bytes], keep: int, done: anyio.Event, stop: Stop
) -> None:
    size = 0
    lines = _Splitter()
    try:
        async for chunk in stream:
            tail.append(chunk)
            size += len(chunk)
            while size - len(tail[0]) >= keep:
                size -= len(tail.popleft())
            if stop.listening:
                stop.lines(lines.feed(chunk))
        stop.lines(lines.close())
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        done.set()


async def follow_logs(folder: Path, stop: Stop) -> None:
    """Hand every line appended to any file in *folder* to `stop` (a CLI that reports its
    retries only in a log file: qwen). Polled every 0.25 s, at most 1 MiB per file per poll."""
    offsets: dict[str, int] = {}
    splitters: dict[str, _Splitter] = {}
    while stop.listening:
        await anyio.sleep(_LOG_POLL_S)
        with suppress(OSError):
            for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                if not entry.is_file():
                    continue
                data = _read_from(entry.path, offsets.get(entry.name, 0))
                offsets[entry.name] = offsets.get(entry.name, 0) + len(data)
                if data:
                    stop.lines(splitters.setdefault(entry.name, _Splitter()).feed(data))
