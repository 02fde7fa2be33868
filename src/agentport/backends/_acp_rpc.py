"""The ACP client's connection: one agent process speaking JSON-RPC 2.0 over stdio
(`AgentConnection`), and the classification of JSON-RPC errors (`rpc_error`).

The process is spawned by this process's guardian (`agentport.transport.open_guarded`) in a
session of its own, so it dies with this process even on SIGKILL; its stderr is kept as a
bounded tail and its group torn down shielded and bounded (`close_at_eof`), like every CLI run.
Source: agentclientprotocol.com (protocol version 1); docs/backends/acp.md.

Why our own client and not the `agent-client-protocol` package: that SDK (0.12.1 checked) is
built on asyncio (`asyncio.create_subprocess_exec`, asyncio tasks and queues), and agentport
runs on anyio with every async path tested on asyncio and trio; the protocol surface a client
needs is small.
"""

from __future__ import annotations

import json
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process, TaskGroup

from ..core import ErrorKind, ProviderError, TimeoutWhich, as_quota
from ..transport import (
    LineFramer,
    LineTooLongError,
    Stop,
    cannot_start,
    close_at_eof,
    drain,
    missing_executable,
    open_guarded,
    parse_line,
    signal_group,
)
from ._classify import kind_from_status, kind_from_text

__all__ = [
    "PROTOCOL_VERSION",
    "AgentConnection",
    "OnNotify",
    "OnRequest",
    "RpcFailure",
    "rpc_error",
]

PROTOCOL_VERSION = 1
_CHUNK = 256 * 1024


def rpc_error(error: Mapping[str, Any], method: str) -> ProviderError:
    """A JSON-RPC error object -> a classified `ProviderError`."""
    code = error.get("code")
    message = str(error.get("message") or f"{method} failed")
    data = error.get("data")
    text = message + (f" {json.dumps(data)}" if data is not None else "")
    status = code if isinstance(code, int) and 400 <= code <= 599 else None
    if status is not None:
        kind = kind_from_status(status) or ErrorKind.server_error
    elif code == -32000:
        kind = ErrorKind.auth_required
    elif code == -32601:
        kind = ErrorKind.unsupported
    elif code == -32602:
        kind = ErrorKind.invalid_request
    else:
        kind = kind_from_text(text) or ErrorKind.process_failed
    failure = ProviderError(
        kind, f"{method}: {message}", status=status, details={"rpc_code": code, "data": data}
    )
    # the provider's own words often travel in `data` only (a used-up balance, a window)
    return as_quota(failure, body=data if isinstance(data, str | dict) else None)


# ---------------------------------------------------------------------- the connection


@dataclass(slots=True)
class _Waiter:
    event: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    rpc_error: dict[str, Any] | None = None
    gone: ProviderError | None = None


OnRequest = Callable[[str, Any], Awaitable[Any]]
OnNotify = Callable[[str, Any], Awaitable[None]]


class AgentConnection:
    """One agent process and its JSON-RPC connection. `start(tg)` spawns it and runs the
    reader and the stderr drain in *tg*; `aclose()` closes stdin, then tears the process group
    down (shielded, bounded). Requests raise `ProviderError` (timeouts, agent gone, RPC errors).
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        *,
        grace_s: float,
        max_line_bytes: int,
        on_request: OnRequest,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.grace_s = grace_s
        self.max_line_bytes = max_line_bytes
        self.on_request = on_request
        self.on_notify: OnNotify | None = None
        self.process: Process | None = None
        self.last_activity = time.monotonic()
        self.reads = 0  # stdout chunks read, and whether one is being dispatched: the late
        self.dispatching = False  # updates' drain (`Session._drain_late`) watches both
        self.noise = 0
        self.answering = 0  # requests of the agent's being answered (an approval hook asked)
        self._ids = 0
        self._pending: dict[int, _Waiter] = {}
        self._gone: ProviderError | None = None
        self._tail: deque[bytes] = deque()
        self._drained: anyio.Event | None = None  # set when the attach's stderr ended
        self._lock = anyio.Lock()
        self._framer = LineFramer(max_line_bytes)  # kept: a warm agent is read by many calls

    @property
    def stderr_tail(self) -> str:
        return b"".join(self._tail)[-8000:].decode("utf-8", errors="replace")

    async def start(self, tg: TaskGroup) -> None:
        why = missing_executable(self.argv[0], self.env)
        if why is not None:
            raise cannot_start(self.argv[0], why)
        try:
            # shielded, as in the runner: a spawn cancelled half-way leaves an untracked group
            with anyio.CancelScope(shield=True):
                self.process = await open_guarded(
                    self.argv, cwd=self.cwd, env=self.env, grace_s=self.grace_s
                )
        except OSError as exc:
            raise cannot_start(self.argv[0], exc) from None
        self.attach(tg)

    def attach(self, tg: TaskGroup) -> None:
        """Read the agent's stdout and stderr in *tg* (the reading stops with *tg*; a warm
        agent is attached to each call that takes it)."""
        self._drained = anyio.Event()
        tg.start_soon(self._read)
        tg.start_soon(self._drain, self._drained)

    def alive(self) -> bool:
        """Started, not seen gone, and not exited."""
        return self.process is not None and self._gone is None and self.process.returncode is None

    def kill(self) -> None:
        """SIGKILL the agent's process group now (no await: for an agent of a loop that is
        gone)."""
        if self.process is not None:
            signal_group(self.process.pid, signal.SIGKILL)

    async def aclose(self) -> None:
        process = self.process
        if process is None:
            return
        await close_at_eof(process, self.grace_s)  # a polite agent exits at stdin's EOF

    def _fail_all(self, error: ProviderError) -> None:
        self._gone = error
        for waiter in self._pending.values():
            waiter.gone = error
            waiter.event.set()
        self._pending.clear()

    async def _drain(self, done: anyio.Event) -> None:
        assert self.process is not None
        assert self.process.stderr is not None
        await drain(self.process.stderr, self._tail, 64 * 1024, done, Stop(None))

    async def _read(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        framer = self._framer
        try:
            while True:
                try:
                    chunk = await self.process.stdout.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                self.last_activity = time.monotonic()
                self.reads += 1
                self.dispatching = True
                for line in framer.feed(chunk):
                    await self._dispatch(line)
                self.dispatching = False
        except LineTooLongError as exc:
            self._fail_all(ProviderError(ErrorKind.bad_output, str(exc), retryable=False))
            return
        with anyio.move_on_after(self.grace_s):
            await self.process.wait()
        if self._drained is not None:
            with anyio.move_on_after(0.5):  # all it wrote to stderr before it died
                await self._drained.wait()
        code = self.process.returncode
        tail = self.stderr_tail
        lines = [ln.strip() for ln in tail.strip().splitlines() if ln.strip()]
        self._fail_all(
            ProviderError(
                ErrorKind.process_failed,
                f"the ACP agent exited (code {code})" + (f": {lines[-1]}" if lines else ""),
                exit_code=code,
                stderr_tail=tail[-4000:],
                retryable=False,
            )
        )

    async def _dispatch(self, line: bytes | bytearray) -> None:
        frame = parse_line(line)
        if frame is None:
            return
        msg = frame.value
        if not frame.is_json or not isinstance(msg, dict):
            self.noise += 1  # an agent that logs to stdout; the protocol lines still count
            return
        method = msg.get("method")
        if method is None and "id" in msg:
            waiter = self._pending.pop(msg["id"], None) if isinstance(msg["id"], int) else None
            if waiter is not None:
                if isinstance(msg.get("error"), dict):
                    waiter.rpc_error = msg["error"]
                else:
                    waiter.result = msg.get("result")
                waiter.event.set()
        elif "id" in msg:
            await self._answer(msg["id"], str(method), msg.get("params"))
        elif self.on_notify is not None:
            await self.on_notify(str(method), msg.get("params"))

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        self.answering += 1
        try:
            reply["result"] = await self.on_request(method, params)
        except RpcFailure as exc:
            reply["error"] = {"code": exc.code, "message": exc.message}
        finally:
            self.answering -= 1
            # the agent waits on our answer (a hook deciding): not its silence
            self.last_activity = time.monotonic()
        with suppress(ProviderError):
            await self._send(reply)

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process is not None
        assert self.process.stdin is not None
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")
        async with self._lock:
            try:
                await self.process.stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise self._gone or ProviderError(
                    ErrorKind.process_failed, "the ACP agent closed its stdin", retryable=False
                ) from None

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(
        self, method: str, params: Any, *, limit_s: float, which: TimeoutWhich = "idle"
    ) -> Any:
        """Send a request and wait for its answer; *limit_s* is the longest silence (no line
        from the agent) tolerated while waiting."""
        if self._gone is not None:
            raise self._gone
        self._ids += 1
        request_id = self._ids
        waiter = _Waiter()
        self._pending[request_id] = waiter
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        self.last_activity = time.monotonic()
        while not waiter.event.is_set():
            remaining = limit_s - (time.monotonic() - self.last_activity)
            if remaining <= 0 and self.answering:
                remaining = 0.05  # an answer of ours is being decided: look again soon
            elif remaining <= 0:
                self._pending.pop(request_id, None)
                raise ProviderError(
                    ErrorKind.timeout,
                    f"{method}: no message from the ACP agent for {limit_s:g}s",
                    timeout=which,
                )
            with anyio.move_on_after(remaining):
                await waiter.event.wait()
        if waiter.gone is not None:
            raise waiter.gone
        if waiter.rpc_error is not None:
            raise rpc_error(waiter.rpc_error, method)
        return waiter.result


class RpcFailure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
