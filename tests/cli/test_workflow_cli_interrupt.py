"""`agentport research` / `agentport refine` as real subprocesses against a FakeModelServer
that never answers: Ctrl-C exits 130 with one line, the configured timeouts apply, and
`research --plan` sizes its budget for the backend from configuration.

Run inside a loopback-only network namespace (`unshare -n`), like every FakeModelServer test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _deeprefine_util import write_tiny
from agentport.testing import FakeModelServer, Hang

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        srv.default = Hang()
        yield srv


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "retry.md").write_text("# Retry\n\nExponential backoff.", encoding="utf-8")
    return folder


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    config = tmp_path / "agentport-config.toml"
    config.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env |= {
        "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
        "AGENTPORT_CONFIG_FILE": str(config),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONUNBUFFERED": "1",
    }
    return env | extra


def _default_sigint() -> None:
    # A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored
    # across exec: Python would then never raise KeyboardInterrupt. A user's terminal
    # delivers Ctrl-C with the default disposition, so the child starts with that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentport", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


STOPPING = "agentport: stopping (press Ctrl-C again to quit at once)"


def _interrupt(
    proc: subprocess.Popen[str], server: FakeModelServer, sig: int = signal.SIGINT
) -> tuple[str, float]:
    try:
        server.wait_for_requests(1, timeout=30)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"signal {sig} was ignored")
    return err, time.monotonic() - sent


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_research_stopped_by_a_signal_says_so_at_once_and_names_resume(
    server: FakeModelServer, docs: Path, tmp_path: Path, sig: int, status: int
) -> None:
    """Ctrl-C and SIGTERM (a service manager, `timeout`) end a run alike: a "stopping" line at
    once, then the resume hint; the status is 128 + the signal's number."""
    env = _env(tmp_path, AGENTPORT_OPENAI_BASE_URL=server.openai_base_url)
    proc = _start(["research", "Q?", "--corpus", str(docs), "-b", "openai_compat"], env, tmp_path)
    err, elapsed = _interrupt(proc, server, sig)
    assert proc.returncode == status, err
    assert elapsed < 5
    assert "Traceback" not in err
    assert err.strip().splitlines() == [
        STOPPING,
        "agentport: interrupted; finished calls are kept: rerun with --resume to continue",
    ]


def test_refine_ctrl_c_exits_130_with_one_line(server: FakeModelServer, tmp_path: Path) -> None:
    graph = write_tiny(tmp_path / "proj")
    env = _env(tmp_path, AGENTPORT_OPENAI_BASE_URL=server.openai_base_url)
    proc = _start(
        ["refine", "How does main reach helper?", "--graph", str(graph), "-b", "openai_compat"],
        env,
        tmp_path,
    )
    pre = graph.read_bytes()
    err, elapsed = _interrupt(proc, server)
    assert proc.returncode == 130, err
    assert elapsed < 5
    assert "Traceback" not in err
    assert err.strip().splitlines() == [
        STOPPING,
        "agentport: interrupted; graph.json was not modified",
    ]
    assert graph.read_bytes() == pre


def _run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "agentport", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def test_research_honours_configured_startup_timeout(
    server: FakeModelServer, docs: Path, tmp_path: Path
) -> None:
    env = _env(
        tmp_path,
        AGENTPORT_OPENAI_BASE_URL=server.openai_base_url,
        AGENTPORT_LLM_STARTUP_TIMEOUT_S="1",
        AGENTPORT_LLM_RETRY_ATTEMPTS="1",
    )
    code, out, elapsed = _run(
        ["research", "Q?", "--corpus", str(docs), "-b", "openai_compat", "-q"], env, tmp_path
    )
    assert code == 1, out
    assert elapsed < 30
    assert "for 1s (startup_timeout_s)" in out
    assert "Traceback" not in out


def test_refine_honours_configured_startup_timeout(server: FakeModelServer, tmp_path: Path) -> None:
    graph = write_tiny(tmp_path / "proj")
    env = _env(
        tmp_path,
        AGENTPORT_OPENAI_BASE_URL=server.openai_base_url,
        AGENTPORT_LLM_STARTUP_TIMEOUT_S="1",
        AGENTPORT_LLM_RETRY_ATTEMPTS="1",
    )
    code, out, elapsed = _run(
        ["refine", "How does main reach helper?", "--graph", str(graph), "-b", "openai_compat"],
        env,
        tmp_path,
    )
    assert code == 1, out
    assert elapsed < 30
    assert "for 1s (startup_timeout_s)" in out
    assert "Traceback" not in out
