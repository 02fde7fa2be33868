"""Auxiliary processes (codex's model-catalog probe, `--version` checks) run through the one
runner: bounded by the call's own startup / idle / whole-call limits, their process group
killed (a child they started included), and killed with the host.

Regression: a hanging `codex debug models` waited its own 60 s whatever the call's limits,
and its timeout killed only codex, leaving a child it had started running for an hour.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from _fake_clis_util import live_processes_with
from agentport.catalog import get_capability
from agentport.core import CompletionConfig, ErrorKind, Message
from agentport.factory import create_llm_adapter, installed_version

ALLOW_ENV = "AGENTPORT_ALLOW_REAL_BACKENDS"


def _codex(tmp: Path, mark: str) -> Path:
    """A codex stand-in whose `debug models` starts a child that hangs, then hangs itself."""
    exe = tmp / "codex"
    exe.write_text(
        "#!/bin/sh\n"
        f"export PROBE_MARK={mark}\n"
        'if [ "$1" = debug ]; then sleep 300 & sleep 300; fi\n'
        "cat > /dev/null\n"
    )
    exe.chmod(0o755)
    return exe


def _gone(mark: str, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not live_processes_with(mark):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("config", "which", "bound_s"),
    [
        (CompletionConfig(startup_timeout_s=1), "startup", 1),
        (CompletionConfig(total_timeout_s=2), "total", 2),
    ],
)
async def test_a_hanging_catalog_probe_ends_within_the_calls_limits(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: CompletionConfig,
    which: str,
    bound_s: float,
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")
    mark = uuid.uuid4().hex
    llm = create_llm_adapter(
        "codex", retry=False, codex={"executable": str(_codex(tmp_path, mark)), "grace_s": 0.5}
    )
    started = time.monotonic()
    error = (await llm.complete([Message.user("hi")], config)).failure()
    assert time.monotonic() - started < bound_s + 3.0  # the limit plus the group's teardown
    assert error.kind is ErrorKind.timeout
    assert error.timeout == which
    assert "codex debug models" in str(error)
    assert _gone(mark), "the probe's child outlived the call"


_HOST = """
import sys, anyio
from agentport.core import Message
from agentport.factory import create_llm_adapter
llm = create_llm_adapter("codex", retry=False, codex={"executable": sys.argv[1]})
print("calling", flush=True)
anyio.run(llm.complete, [Message.user("hi")])
"""


def test_the_probe_dies_with_a_killed_host(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    env = {**os.environ, ALLOW_ENV: "1"}
    host = subprocess.Popen(
        [sys.executable, "-c", _HOST, str(_codex(tmp_path, mark))],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert host.stdout is not None
    assert host.stdout.readline().strip() == "calling"
    end = time.monotonic() + 10
    while not live_processes_with(mark) and time.monotonic() < end:
        time.sleep(0.05)
    assert live_processes_with(mark), "the probe never started"
    host.send_signal(signal.SIGKILL)
    host.wait(10)
    assert _gone(mark), "the probe outlived its host"


def test_a_hanging_version_check_is_bounded_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = uuid.uuid4().hex
    exe = tmp_path / "bin" / "codex"
    exe.parent.mkdir()
    exe.write_text(f"#!/bin/sh\nexport PROBE_MARK={mark}\nsleep 300 & sleep 300\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    assert installed_version(get_capability("codex"), timeout_s=1.0) is None
    assert time.monotonic() - started < 5.0
    assert _gone(mark)


def test_a_version_is_read_once_per_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = tmp_path / "bin" / "codex"
    exe.parent.mkdir()
    count = tmp_path / "count"
    exe.write_text(f'#!/bin/sh\necho x >> "{count}"\necho "codex-cli 9.9.9"\n')
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    assert installed_version(get_capability("codex")) == "codex-cli 9.9.9"
    assert installed_version(get_capability("codex")) == "codex-cli 9.9.9"
    assert count.read_text().count("x") == 1
