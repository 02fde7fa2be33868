"""How the serving guardian starts a CLI (`_guardian._start`), called in this process: by
`posix_spawnp` (no Python code in the child), in the request's cwd, with the request's PATH,
stdio and environment, in a session of its own with default signal dispositions; `fork` where
`POSIX_SPAWN_SETSID` is missing. Either way the same process, the same errors, no descriptor
left open and the guardian's own cwd back at `/`."""

from __future__ import annotations

import errno
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX guardian")

REPORT = (
    'echo "cwd=$(pwd)"; echo "x=$X"; echo "sid=$(ps -o sid= -p $$ | tr -d " ")"; '
    'echo "pid=$$"; read line; echo "in=$line"'
)


def _run(req: dict[str, Any], stdin: bytes = b"") -> tuple[bytes, dict[str, str]]:
    """`_start` *req* with pipes for stdio: (its status lines, its stdout as `k=v`)."""
    from agentport.transport import _guardian

    status_r, status_w = os.pipe()
    pipes = [os.pipe() for _ in range(3)]
    stdio = [pipes[0][0], pipes[1][1], pipes[2][1]]
    children: dict[int, int] = {}
    _guardian._start(req, status_w, stdio, children)
    for fd in stdio:  # handed over: closed by `_start`
        with pytest.raises(OSError, match="Bad file descriptor"):
            os.fstat(fd)
    os.write(pipes[0][1], stdin)
    os.close(pipes[0][1])
    out = b"".join(iter(lambda: os.read(pipes[1][0], 65536), b""))
    for fd in (pipes[1][0], pipes[2][0]):
        os.close(fd)
    for pid in list(children):
        os.waitpid(pid, 0)
        os.close(children.pop(pid))
    status = os.read(status_r, 64)
    os.close(status_r)
    seen = dict(line.split("=", 1) for line in out.decode().splitlines() if "=" in line)
    return status, seen


@pytest.fixture(params=["posix_spawn", "fork"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    monkeypatch.chdir(tmp_path)  # `_start` leaves the process at /: restored afterwards
    if request.param == "fork":

        def no_setsid(*args: object, **kw: object) -> int:
            raise NotImplementedError("setsid")

        monkeypatch.setattr(os, "posix_spawnp", no_setsid)
    return str(request.param)


def test_a_cli_starts_in_its_cwd_with_its_env_stdio_and_session(way: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = {"PATH": os.environ["PATH"], "X": "ünï"}
    status, seen = _run({"argv": ["sh", "-c", REPORT], "env": env, "cwd": str(work)}, b"hi\n")
    assert status.startswith(b"pid ")
    assert seen["cwd"] == str(work)
    assert seen["x"] == "ünï"
    assert seen["in"] == "hi"
    assert seen["sid"] == seen["pid"]  # a session of its own: the group dies as one
    assert os.getcwd() == "/"  # the guardian never pins a user's folder


def test_default_signal_dispositions_and_an_empty_mask(way: str, tmp_path: Path) -> None:
    """SIGTERM ignored and SIGINT blocked in the guardian: neither reaches the CLI."""
    probe = 'grep -E "^Sig(Ign|Blk):" /proc/$$/status | tr -d "\\t" | tr ":" "="'
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    try:
        req = {"argv": ["sh", "-c", probe], "env": {"PATH": os.environ["PATH"]}, "cwd": "/"}
        _, seen = _run(req)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        signal.signal(signal.SIGTERM, old)
    assert not int(seen["SigIgn"], 16) & (1 << (signal.SIGTERM - 1))
    assert int(seen["SigBlk"], 16) == 0


def test_the_cli_is_looked_up_on_the_requests_path(
    way: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "only-here"
    tool.write_text("#!/bin/sh\necho found=yes\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the guardian's own PATH lacks it
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    status, seen = _run({"argv": ["only-here"], "env": env, "cwd": str(tmp_path)})
    assert status.startswith(b"pid ")
    assert seen["found"] == "yes"
    # without PATH in the request: the default search path, not the guardian's own
    status, _ = _run({"argv": ["only-here"], "env": {}, "cwd": str(tmp_path)})
    assert status == b"err %d\n" % errno.ENOENT
    assert os.environ["PATH"] == "/usr/bin:/bin"


@pytest.mark.parametrize(
    ("argv", "cwd", "code"),
    [
        (["no-such-cli-anywhere"], "/", errno.ENOENT),
        (["sh", "-c", "true"], "/no/such/folder", errno.ENOENT),
        (["./data.txt"], ".", errno.EACCES),  # not executable
    ],
)
def test_a_start_that_fails_reports_its_errno_and_leaks_nothing(
    way: str, argv: list[Any], cwd: str, code: int, tmp_path: Path
) -> None:
    (tmp_path / "data.txt").write_text("not a program\n")  # mode 0644: no one may run it
    cwd = str(tmp_path) if cwd == "." else cwd
    before = sorted(os.listdir("/proc/self/fd"))
    status, _ = _run({"argv": argv, "env": {"PATH": os.environ["PATH"]}, "cwd": cwd})
    assert status == b"err %d\n" % code
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert os.getcwd() == "/"


def test_a_request_of_a_kind_the_host_never_sends_is_einval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for req in (
        {"argv": ["sh", 7], "env": {}, "cwd": "/"},
        {"argv": ["sh"], "env": [], "cwd": "/"},
    ):
        status, _ = _run(req)
        assert status == b"err %d\n" % errno.EINVAL
        assert os.getcwd() == "/"


@pytest.mark.anyio
async def test_a_relative_cwd_is_the_callers_cwd_at_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `anyio.open_process` does: relative to the host's cwd when the call starts (the
    guardian started earlier, elsewhere, and sits at `/` between starts)."""
    from agentport.transport import Frame, ProcessRequest, run_process

    for name in ("a", "b"):
        (tmp_path / name / "inner").mkdir(parents=True)
    seen: list[str] = []

    async def on_frame(frame: Frame) -> bool:
        seen.append(frame.text.strip())
        return False

    for name in ("a", "b"):
        monkeypatch.chdir(tmp_path / name)
        result = await run_process(ProcessRequest(["pwd"], cwd=Path("inner")), on_frame)
        assert result.error is None, result.error
    assert seen == [str(tmp_path / "a" / "inner"), str(tmp_path / "b" / "inner")]
