"""The host dies, the children die: a CLI started by the runner, and
the processes it started, do not outlive the Python process that ran it, even when that
process is SIGKILLed mid-call. Also: the guardian is invisible on the normal paths (exit
codes and signals are relayed as the CLI's own)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _helpers import TESTS
from _more_clis_util import MARKER_ENV, live_processes, new_marker, wait_no_live_processes
from _runner_util import fake_argv, fake_env
from agentport.core import ErrorKind
from agentport.transport import Frame, ProcessRequest, group_members, run_process

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

_HOST = """
import json, sys, anyio
from agentport.transport import ProcessRequest, run_process

argv, env, backend = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]

async def main():
    async def on_frame(frame):
        print("running", flush=True)
        return False

    await run_process(
        ProcessRequest(argv, env=env, startup_timeout_s=120, idle_timeout_s=120), on_frame
    )

anyio.run(main, backend=backend)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("anyio_backend_name", ["asyncio", "trio"])
@pytest.mark.parametrize("grandchild", ["1", "setsid"], ids=["in-group", "left-the-group"])
def test_sigkill_of_the_host_mid_call_leaves_no_process(
    tmp_path: Path, grandchild: str, anyio_backend_name: str
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"type": "init"}\n')
    pidfile = tmp_path / "grandchild.pid"
    marker = new_marker()
    env = fake_env(stdout=str(out), hang="1", child=grandchild, pidfile=str(pidfile))
    env[MARKER_ENV] = marker
    host = subprocess.Popen(
        [sys.executable, "-c", _HOST, json.dumps(fake_argv()), json.dumps(env), anyio_backend_name],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert host.stdout is not None
        assert host.stdout.readline().strip() == "running"
        deadline = time.monotonic() + 10
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline, "the fake CLI never started its grandchild"
            time.sleep(0.02)
        orphan = int(pidfile.read_text())
        assert _alive(orphan)
        assert live_processes(marker)  # the CLI runs
    finally:
        host.kill()  # SIGKILL: no finally, no atexit, no teardown in the host
        host.wait()
    assert wait_no_live_processes(marker, within_s=5.0) == []
    deadline = time.monotonic() + 5
    while _alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(orphan), "a grandchild outlived the host"


@pytest.mark.anyio
async def test_exit_by_signal_is_relayed_as_the_clis_own(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]

    async def on_frame(frame: Frame) -> bool:
        return False

    result = await run_process(ProcessRequest(argv), on_frame)
    assert result.error is None
    assert result.exit_code == -signal.SIGTERM
    assert result.pid is not None
    assert group_members(result.pid) == []


@pytest.mark.anyio
async def test_a_file_that_is_not_executable_fails_before_spawning(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho hi\n")

    async def on_frame(frame: Frame) -> bool:
        return False

    for argv0, kind in [
        (str(script), ErrorKind.process_failed),
        (str(tmp_path / "missing"), ErrorKind.not_installed),
    ]:
        result = await run_process(ProcessRequest([argv0]), on_frame)
        assert result.error is not None
        assert result.error.kind is kind, result.error
        assert result.pid is None


@pytest.mark.anyio
async def test_the_cli_sees_default_signal_dispositions_and_no_extra_descriptors() -> None:
    # Python ignores SIGPIPE; a CLI started from Python must not inherit that, nor the pipe
    # through which the guardian watches this process
    argv = ["sh", "-c", "grep SigIgn /proc/self/status; ls /proc/self/fd"]
    lines: list[str] = []

    async def on_frame(frame: Frame) -> bool:
        lines.append(frame.text.strip())
        return False

    result = await run_process(ProcessRequest(argv), on_frame)
    assert result.exit_code == 0
    ignored = int(lines[0].split()[1], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        assert not ignored & (1 << (sig - 1)), sig
    assert sorted(int(fd) for fd in lines[1:]) == [0, 1, 2, 3]  # 3: ls's own directory


_ACP_HOST = """
import sys, anyio
from agentport import Message, create_llm_adapter

async def main():
    llm = create_llm_adapter("acp", retry=False, acp={"command": [sys.executable, sys.argv[1]]})
    print("running", flush=True)
    await llm.complete([Message.user("hang")])

anyio.run(main, backend=sys.argv[2])
"""


@pytest.mark.parametrize("anyio_backend_name", ["asyncio", "trio"])
def test_sigkill_of_the_host_mid_acp_call_leaves_no_agent_process(
    tmp_path: Path, anyio_backend_name: str
) -> None:
    """The ACP client spawns its agent outside `run_process`; it goes under the same
    guardian, so the agent and what it started die with the host."""
    agent = TESTS / "fixtures" / "fake_clis" / "fake_acp_agent.py"
    marker = new_marker()
    record = tmp_path / "received.jsonl"
    env = {
        **dict(__import__("os").environ),
        MARKER_ENV: marker,
        "FAKE_SCENARIO": "hang",
        "FAKE_RECORD": str(record),
        "AGENTPORT_INHERIT_ENV": f"FAKE_*,{MARKER_ENV}",
        "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
    }
    host = subprocess.Popen(
        [sys.executable, "-c", _ACP_HOST, str(agent), anyio_backend_name],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert host.stdout is not None
        assert host.stdout.readline().strip() == "running"
        deadline = time.monotonic() + 30
        while '"session/prompt"' not in (record.read_text() if record.exists() else ""):
            assert time.monotonic() < deadline, "the fake agent never got the prompt"
            time.sleep(0.05)
        # the agent's `sleep 300` child starts right after the prompt: wait for it to show
        while not any(_cmdline(pid) == b"sleep\x00300\x00" for pid in live_processes(marker)):
            assert time.monotonic() < deadline, "the fake agent's child never started"
            time.sleep(0.05)
        assert len(live_processes(marker)) >= 3  # host, agent and its child (and more)
    finally:
        host.kill()
        host.wait()
    assert wait_no_live_processes(marker, within_s=5.0) == []


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
