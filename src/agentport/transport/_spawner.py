"""Starting a CLI so that it dies with this process: `open_guarded` and `guard_argv`.

On POSIX every process agentport starts runs below a guardian (`_guardian.py`), which
SIGKILLs it, its group and every descendant it can find when this process dies, even by
SIGKILL; and each call's own reaper (a fork of the guardian, a child subreaper) ends every
process the CLI started, in its group or not, when the CLI exits (docs/runner.md has the
mechanism and its limits).

- `open_guarded(argv, ...)`: the way the runner and the ACP client start a CLI. One guardian
  per host process (started on first use, again after a `fork` or if it died) starts every
  CLI: the request and the CLI's pipes go to it over a Unix socket (SCM_RIGHTS), and it
  reports the pid and, later, the exit status on a pipe of that process. A call costs no
  extra interpreter start (a guardian per call did: adapter / raw spawn 1.52, against 1.05).
- `guard_argv(argv)`: for a process started synchronously (the local model's worker): *argv*
  wrapped in a guardian of its own, which relays the exit status.

Where there is no guardian (Windows, a frozen app) both start the process as it is.
"""

from __future__ import annotations

import array
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from ..core import ErrorKind, ProviderError

__all__ = ["guard_argv", "open_guarded"]

_GUARDIAN = Path(__file__).with_name("_guardian.py")


def _guardable() -> bool:
    frozen = getattr(sys, "frozen", False)  # PyInstaller & co: sys.executable is the app
    return sys.platform != "win32" and bool(sys.executable) and not frozen


class _DeathPipe:
    """One pipe per process: the per-process guardians hold its read end, only this process
    its write end (close-on-exec, closed again in a forked child), so its EOF means this
    process is gone."""

    fds: tuple[int, int] | None = None

    @classmethod
    def read_end(cls) -> int:
        if cls.fds is None:
            cls.fds = os.pipe()
        return cls.fds[0]

    @classmethod
    def forget(cls) -> None:  # in a forked child: the parent's pipe is not ours
        if cls.fds is not None:
            for fd in cls.fds:
                with suppress(OSError):
                    os.close(fd)
            cls.fds = None


def guard_argv(argv: Sequence[str]) -> tuple[list[str], tuple[int, ...]]:
    """*argv* wrapped in a guardian of its own, and the fds the spawn must pass (`pass_fds`):
    spawned with `start_new_session`, the process group then dies with this process, even on
    SIGKILL. POSIX only; elsewhere (and in frozen apps) *argv* unchanged and no fds. Check
    `missing_executable` first, since the guardian itself always starts."""
    argv = list(argv)
    if not _guardable():
        return argv, ()
    fd = _DeathPipe.read_end()
    guardian = [sys.executable, "-I", "-S", str(_GUARDIAN), str(fd), str(os.getpid()), "--"]
    return guardian + argv, (fd,)


class _HostGuardian:
    """This process's one serving guardian: its socket, under a lock (one request at a time;
    several event loops may spawn from several threads)."""

    lock = threading.Lock()
    owner: int | None = None
    sock: socket.socket | None = None
    proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def send(cls, body: bytes, fds: Sequence[int]) -> None:
        """Hand one request to the guardian (started if need be). Raises OSError."""
        head = [len(body).to_bytes(8, "big")]
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
        with cls.lock:
            for attempt in (1, 2):
                sock = cls._connected()
                try:
                    sock.sendmsg(head, rights)
                except OSError as exc:
                    peer_gone = isinstance(exc, BrokenPipeError | ConnectionResetError)
                    if not peer_gone and cls.proc is not None and cls.proc.poll() is None:
                        raise  # a live guardian got nothing: this start fails, others run on
                    cls._drop()  # it died (killed by someone): start another, once
                    if attempt == 2:
                        raise
                    continue
                try:
                    sock.sendall(body)
                except OSError:  # half a request: the stream is lost, and so is the guardian
                    cls._drop()
                    raise
                return

    @classmethod
    def _connected(cls) -> socket.socket:
        proc = cls.proc
        if cls.owner == os.getpid() and cls.sock is not None and proc and proc.poll() is None:
            return cls.sock
        cls._drop()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs:
            fd = theirs.fileno()
            cls.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_GUARDIAN), "--serve", str(fd), str(os.getpid())],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},  # it needs none; each request carries the CLI's own
                start_new_session=True,  # Ctrl-C in a terminal reaches this process, not it
            )
        cls.sock, cls.owner = mine, os.getpid()
        return mine

    @classmethod
    def _drop(cls) -> None:
        if cls.sock is not None:
            cls.sock.close()
        if cls.proc is not None and cls.owner == os.getpid():
            cls.proc.poll()  # reap it if it is gone
        cls.sock = cls.proc = cls.owner = None

    @classmethod
    def forget(cls) -> None:  # in a forked child: the parent's guardian is not ours
        if cls.sock is not None:
            with suppress(OSError):
                cls.sock.close()
        cls.sock = cls.proc = cls.owner = None
        cls.lock = threading.Lock()


def _forget_after_fork() -> None:
    _DeathPipe.forget()
    _HostGuardian.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


class _Fd:
    """A pipe end, non-blocking, that anyio waits on (asyncio or trio)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd

    def fd(self) -> int:
        if self._fd is None:
            raise anyio.ClosedResourceError
        return self._fd

    def close(self, notify: bool = True) -> None:
        """Close it; *notify* wakes a task waiting on it (needs the event loop)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            if notify:
                anyio.notify_closing(fd)
            os.close(fd)

    async def aclose(self) -> None:
        self.close()


class _FdReceive(_Fd, ByteReceiveStream):
    """The read end of a pipe as an anyio byte stream."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            try:
                data = os.read(self.fd(), max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.fd())
                continue
            if not data:
                raise anyio.EndOfStream
            return data


class _FdSend(_Fd, ByteSendStream):
    """The write end of a pipe as an anyio byte stream."""

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                view = view[os.write(self.fd(), view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.fd())
            except (BrokenPipeError, ConnectionResetError):
                raise anyio.BrokenResourceError from None


class GuardedProcess(Process):
    """A CLI started by the host's guardian: the `anyio.abc.Process` interface, with its exit
    status read from the guardian's status pipe (it is the guardian's child, not ours)."""

    def __init__(
        self, status: int, stdin: int | None, stdout: int | None, stderr: int | None
    ) -> None:
        self._status = _FdReceive(status)
        self._buffer = b""
        self._pid = 0
        self._returncode: int | None = None
        self._reading: anyio.Event | None = None
        self._stdin = _FdSend(stdin) if stdin is not None else None
        self._stdout = _FdReceive(stdout) if stdout is not None else None
        self._stderr = _FdReceive(stderr) if stderr is not None else None

    async def _line(self) -> bytes:
        """The guardian's next status line; b"" once it closed the pipe without one."""
        while b"\n" not in self._buffer:
            try:
                self._buffer += await self._status.receive(256)
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return b""
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    async def started(self, argv0: str) -> None:
        """Wait for the pid; raise OSError (FileNotFoundError, ...) if the exec failed."""
        word, _, value = (await self._line()).partition(b" ")
        if word == b"pid":
            self._pid = int(value)
            return
        self.close()
        number = int(value) if word == b"err" and value.isdigit() else 0
        raise OSError(number, os.strerror(number) if number else "the guardian failed", argv0)

    async def wait(self) -> int:
        while self._returncode is None:
            if self._reading is not None:  # another task reads the status: wait for it
                await self._reading.wait()
                continue
            self._reading = anyio.Event()
            try:
                line = await self._line()
                word, _, value = line.partition(b" ")
                if word == b"exit":
                    self._returncode = os.waitstatus_to_exitcode(int(value))
                else:  # the guardian is gone (killed): the group is, or is about to be
                    while _group_alive(self._pid):  # noqa: ASYNC110 - nothing to wait on
                        await anyio.sleep(0.05)
                    self._returncode = -signal.SIGKILL
            finally:
                reading, self._reading = self._reading, None
                reading.set()
        return self._returncode

    def close(self, notify: bool = True) -> None:
        for name in ("_stdin", "_stdout", "_stderr", "_status"):
            stream = getattr(self, name, None)
            if stream is not None:
                stream.close(notify)

    def __del__(self) -> None:  # dropped unclosed: an agent of an event loop that is gone
        with suppress(OSError):
            self.close(notify=False)

    async def aclose(self) -> None:
        for stream in (self._stdin, self._stdout, self._stderr):
            if stream is not None:
                stream.close()
        with anyio.CancelScope(shield=True):
            await self.wait()
        self._status.close()

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, sig: int) -> None:
        if self._returncode is None:
            with suppress(ProcessLookupError):
                os.kill(self._pid, sig)

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def returncode(self) -> int | None:
        return self._returncode

    @property
    def stdin(self) -> ByteSendStream | None:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return self._stderr


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def open_guarded(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bool = True,
    stdout: Any = None,
    guard: bool = True,
    grace_s: float = 3.0,
) -> Process:
    """Start *argv* (a list, never a shell) in a session of its own (pid = pgid), its stderr a
    pipe; *stdin* a pipe (True) or /dev/null; *stdout* a pipe (None) or the file (an object
    with `fileno()`) it writes to. On POSIX under the host's guardian, so it dies with this
    process even on SIGKILL (`guard=False`: started directly, in a session of its own).
    When it exits, every process it started that is still running (in its group or not) gets
    SIGTERM, and SIGKILL after *grace_s* seconds, before `wait()` returns (Linux).
    Raises OSError (FileNotFoundError for a missing program) like `anyio.open_process`; call
    it shielded (a start cancelled half-way is a process no one tracks)."""
    if not guard or not _guardable():
        return await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=sys.platform != "win32",
        )
    given = stdout.fileno() if stdout is not None else -1
    mine: list[int] = []  # status, stdin, stdout, stderr: this process's ends (-1: none)
    theirs: list[int] = []  # the ends the CLI gets, in the guardian's order
    try:
        for wanted, we_write in ((True, False), (stdin, True), (given < 0, False), (True, False)):
            read, write = os.pipe() if wanted else (-1, -1)
            mine.append(write if we_write else read)
            if wanted:
                theirs.append(read if we_write else write)
            elif we_write is False:  # stdout to the caller's file
                theirs.append(given)
        # absolute: a relative cwd means this process's cwd now, not the guardian's
        where = os.path.abspath(cwd)  # noqa: ASYNC240 - a getcwd, no file I/O
        body = json.dumps(
            {"argv": list(argv), "env": dict(env), "cwd": where, "stdin": stdin, "grace": grace_s}
        )
        _HostGuardian.send(body.encode(), theirs)
    except BaseException:
        for fd in mine:
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        for fd in theirs:
            if fd != given:
                os.close(fd)
    status, to_stdin, from_stdout, from_stderr = (fd if fd >= 0 else None for fd in mine)
    assert status is not None
    assert from_stderr is not None
    process = GuardedProcess(status, to_stdin, from_stdout, from_stderr)
    await process.started(argv[0])
    return process


def cannot_start(argv0: str, reason: str | OSError) -> ProviderError:
    """The failure of a process that did not start: *reason* is `missing_executable`'s answer
    or the spawn's OSError. A missing program is `not_installed`, anything else (permission
    denied, too many processes) `process_failed`; never retryable."""
    if isinstance(reason, OSError):
        missing, why = isinstance(reason, FileNotFoundError), reason.strerror or str(reason)
    else:
        missing, why = "Permission" not in reason, reason
    kind = ErrorKind.not_installed if missing else ErrorKind.process_failed
    return ProviderError(kind, f"cannot start {argv0!r}: {why}", retryable=False)


def missing_executable(argv0: str, env: Mapping[str, str]) -> str | None:
    """Why *argv0* cannot be started (checked before the guardian runs), or None."""
    if os.sep in argv0:
        if not os.path.exists(argv0):
            return "No such file or directory"
        return None if os.access(argv0, os.X_OK) else "Permission denied"
    return None if shutil.which(argv0, path=env.get("PATH", os.defpath)) else "not found on PATH"
