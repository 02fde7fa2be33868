"""The host's one guardian (`transport/_spawner.py`, `_guardian.py --serve`): every CLI a host
process starts is the guardian's child, not the host's; the guardian is replaced when it dies
and after a `fork`; requests from several threads and of any size pass; no descriptor is left
behind. (Host death itself: tests/transport/test_runner_host_death.py.)"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from pathlib import Path

import anyio
import pytest

from agentport.transport import Frame, ProcessRequest, group_members, open_guarded, run_process

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX guardian")


async def _lines(argv: list[str], **kw: object) -> tuple[list[str], int | None]:
    lines: list[str] = []

    async def on_frame(frame: Frame) -> bool:
        lines.append(frame.text.strip())
        return False

    result = await run_process(ProcessRequest(argv, **kw), on_frame)  # type: ignore[arg-type]
    assert result.error is None, result.error
    return lines, result.exit_code


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


async def _parents() -> tuple[int, int]:
    """(the CLI's parent: its call reaper, the reaper's parent: the guardian)."""
    probe = "echo $PPID; cut -d ' ' -f 4 /proc/$PPID/stat"
    lines, code = await _lines(["sh", "-c", probe])
    assert code == 0
    return int(lines[0]), int(lines[1])


async def _parent() -> int:
    """The host's guardian."""
    return (await _parents())[1]


@pytest.mark.anyio
async def test_every_cli_of_a_host_is_a_grandchild_of_its_one_guardian() -> None:
    """Each call has a reaper of its own (a fork of the guardian), below the one guardian."""
    found = [await _parents() for _ in range(3)]
    reapers = {reaper for reaper, _ in found}
    parents = {guardian for _, guardian in found}
    assert len(parents) == 1
    assert len(reapers) == 3
    guardian = parents.pop()
    assert guardian != os.getpid()
    assert guardian not in reapers
    assert "_guardian.py --serve" in _cmdline(guardian)
    assert os.getppid() != guardian


@pytest.mark.anyio
async def test_a_killed_guardian_is_replaced_and_its_running_call_still_ends() -> None:
    guardian = await _parent()
    done: list[int | None] = []

    async def slow() -> None:
        _, code = await _lines(["sh", "-c", "echo started; sleep 0.5; echo done"])
        done.append(code)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.2)
            os.kill(guardian, signal.SIGKILL)
    assert len(done) == 1  # it ended; its exit status died with the guardian
    again = await _parent()
    assert again != guardian
    assert "_guardian.py --serve" in _cmdline(again)


class _RefusesOnce:
    """The guardian's socket, whose next `sendmsg` fails as a full kernel buffer would."""

    def __init__(self, sock: object) -> None:
        self.sock = sock
        self.refused = False

    def sendmsg(self, *args: object) -> int:
        if not self.refused:
            self.refused = True
            raise OSError(errno.ENOBUFS, os.strerror(errno.ENOBUFS))
        return self.sock.sendmsg(*args)  # type: ignore[attr-defined, no-any-return]

    def __getattr__(self, name: str) -> object:
        return getattr(self.sock, name)


@pytest.mark.anyio
async def test_a_send_refused_by_a_live_guardian_fails_only_that_start() -> None:
    from agentport.transport._spawner import _HostGuardian

    guardian = await _parent()
    done: list[tuple[list[str], int | None]] = []

    async def slow() -> None:
        done.append(await _lines(["sh", "-c", "echo started; sleep 0.5; echo done"]))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.2)
            real = _HostGuardian.sock
            _HostGuardian.sock = _RefusesOnce(real)  # type: ignore[assignment]
            try:
                refused = await run_process(ProcessRequest(["true"]), _ignore)
            finally:
                _HostGuardian.sock = real
    assert refused.error is not None  # this start failed ...
    assert done == [(["started", "done"], 0)]  # ... the running call did not
    assert await _parent() == guardian  # and the guardian is the same


async def _ignore(frame: Frame) -> bool:
    return False


def test_a_forked_child_starts_a_guardian_of_its_own() -> None:
    guardian = anyio.run(_parent)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(write, str(anyio.run(_parent)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        theirs = fh.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert theirs.isdigit()
    assert int(theirs) not in (guardian, 0)
    assert anyio.run(_parent) == guardian  # the parent's guardian is untouched


def test_event_loops_on_several_threads_start_their_clis_through_it() -> None:
    outputs: list[list[str]] = []
    errors: list[BaseException] = []

    def loop(n: int) -> None:
        try:
            for i in range(5):
                lines, code = anyio.run(_lines, ["sh", "-c", f"echo {n}-{i}"])
                assert code == 0
                outputs.append(lines)
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sorted(line for lines in outputs for line in lines) == sorted(
        f"{n}-{i}" for n in range(4) for i in range(5)
    )


@pytest.mark.anyio
async def test_a_request_larger_than_a_socket_buffer_passes_whole() -> None:
    env = {**os.environ, **{f"BIG_{i}": str(i) * 100_000 for i in range(10)}}
    arg = "x" * 90_000
    lines, code = await _lines(
        ["sh", "-c", 'printf "%s" "$1" | wc -c; env | grep -c "^BIG_"', "sh", arg], env=env
    )
    assert code == 0
    assert lines == ["90000", "10"]


@pytest.mark.anyio
async def test_no_descriptor_is_left_open_in_the_host() -> None:
    await _parent()  # the guardian's own socket is opened once

    def count() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = count()
    for _ in range(10):
        await _lines(["sh", "-c", "echo out; echo err >&2"], stdin=b"in")
        await _lines(["true"], stdout_to_file=True)
    assert count() == before


@pytest.mark.anyio
async def test_open_guarded_raises_like_open_process(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho hi\n")
    env = dict(os.environ)
    with pytest.raises(FileNotFoundError):
        await open_guarded([str(tmp_path / "missing")], cwd=tmp_path, env=env)
    with pytest.raises(PermissionError):
        await open_guarded([str(script)], cwd=tmp_path, env=env)
    process = await open_guarded(["sh", "-c", "read x; echo $x"], cwd=tmp_path, env=env)
    assert process.stdin is not None
    assert process.stdout is not None
    await process.stdin.send(b"hello\n")
    assert (await process.stdout.receive()).strip() == b"hello"
    assert await process.wait() == 0
    await process.aclose()
    assert group_members(process.pid) == []


def test_a_fork_the_guardian_cannot_make_reports_the_errno_and_leaks_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentport.transport import _guardian

    made: list[int] = []
    real_pipe = os.pipe

    def pipe() -> tuple[int, int]:
        fds = real_pipe()
        made.extend(fds)
        return fds

    def no_fork() -> int:
        raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))

    status_r, status_w = os.pipe()
    ends = [os.pipe() for _ in range(3)]
    stdio = [r for r, _ in ends]
    monkeypatch.setattr(os, "pipe", pipe)
    monkeypatch.setattr(os, "fork", no_fork)
    _guardian._fork_start({"argv": ["true"]}, status_w, stdio, {})  # without POSIX_SPAWN_SETSID
    monkeypatch.undo()
    assert os.read(status_r, 64) == b"err %d\n" % errno.EAGAIN
    # the status pipe's and the CLI's descriptors are closed, and so is the pipe it made
    assert made != []
    for fd in [status_w, *stdio, *made]:
        with pytest.raises(OSError, match="Bad file descriptor"):
            os.fstat(fd)
    for fd in [status_r, *(w for _, w in ends)]:
        os.close(fd)
