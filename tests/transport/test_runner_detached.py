"""A process that left the CLI's group ends with the call: a `setsid` child and a daemon's
double fork (what a tool's dev server or a `detached` Node child is) are gone when
`complete()` returns, on success, on timeout and on cancel, for every backend the fakes
stand for (they share the runner) and for the ACP agent, cold and warm. The guardian's call
reaper (a child subreaper per call, `transport/_guardian.py`) ends them; docs/runner.md."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import anyio
import pytest
from returns.result import Failure, Success

from _fake_clis_util import FAKE_CLIS, install_fake, live_processes_with
from agentport.core import CompletionConfig, ErrorKind, Message
from agentport.factory import create_llm_adapter
from agentport.transport import Frame, ProcessRequest, guard_argv, run_process

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux"),
]

#: backend -> its fake's executable (each reads the prompt and answers like its CLI)
FAKES = {"goose": "goose", "kiro": "kiro-cli", "hermes": "hermes", "agy": "agy"}
HANG = CompletionConfig(startup_timeout_s=30, idle_timeout_s=30, total_timeout_s=3)


@pytest.fixture
def marker(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"agentport-detached-{uuid.uuid4().hex}"
    monkeypatch.setenv("FAKE_DETACH", value)
    return value


def _detached(marker: str) -> list[int]:
    """The live processes with *marker* in their argv: the detached ones alone."""
    return [pid for pid in live_processes_with(marker) if marker in _cmd(pid)]


async def _detached_alive(marker: str) -> None:
    """Wait until both detached processes run (the test would prove nothing before)."""
    with anyio.fail_after(20):
        while len(_detached(marker)) < 2:  # noqa: ASYNC110 - polling /proc
            await anyio.sleep(0.05)


def _adapter(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    if backend == "acp":
        monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
        monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
        command = [sys.executable, str(FAKE_CLIS / "fake_acp_agent.py")]
        return create_llm_adapter("acp", retry=False, acp={"command": command, "grace_s": 0.5})
    install_fake(tmp_path, monkeypatch, FAKES[backend])
    options: dict[str, object] = {"grace_s": 0.5}
    if backend == "kiro":
        options["api_key"] = "kk"
    return create_llm_adapter(backend, retry=False, **{backend: options})


BACKENDS = [*FAKES, "acp"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_detached_processes_end_with_a_successful_call(
    backend: str, marker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(backend, tmp_path, monkeypatch)
    result = await adapter.complete([Message.user("hi")])  # type: ignore[attr-defined]
    assert isinstance(result, Success), result
    assert [_cmd(pid) for pid in live_processes_with(marker)] == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_detached_processes_end_with_a_call_that_timed_out(
    backend: str, marker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = _adapter(backend, tmp_path, monkeypatch)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_detached_alive, marker)
        result = await adapter.complete([Message.user("hi")], HANG)  # type: ignore[attr-defined]
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.timeout
    assert [_cmd(pid) for pid in live_processes_with(marker)] == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_detached_processes_end_with_a_cancelled_call(
    backend: str, marker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = _adapter(backend, tmp_path, monkeypatch)

    async def call() -> None:
        await adapter.complete([Message.user("hi")], HANG)  # type: ignore[attr-defined]

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await _detached_alive(marker)
        tg.cancel_scope.cancel()
    assert [_cmd(pid) for pid in live_processes_with(marker)] == []


async def test_a_warm_acp_agents_detached_processes_end_with_its_pool(
    marker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm agent lives across calls, and so may what it started; they end with it."""
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    command = [sys.executable, str(FAKE_CLIS / "fake_acp_agent.py")]
    adapter = create_llm_adapter("acp", retry=False, acp={"command": command}, warm=1)
    for _ in range(2):
        assert isinstance(await adapter.complete([Message.user("hi")]), Success)
    await _detached_alive(marker)  # the agent is warm: what it started runs on
    await adapter.aclose()  # type: ignore[attr-defined]
    assert [_cmd(pid) for pid in live_processes_with(marker)] == []


SCRIPT = """
setsid sleep 1000 &
sh -c 'setsid sleep 1000 & exit 0' </dev/null >/dev/null 2>&1
echo '{"ok": true}'
"""


async def test_the_runner_ends_detached_grandchildren_that_ignore_sigterm(marker: str) -> None:
    """Straight through `run_process`: SIGTERM ignored, so the reaper's SIGKILL after
    `grace_s` ends them, and the run still returns within its bounds."""
    script = f"trap '' TERM; export MARK={marker}\n" + SCRIPT
    lines: list[object] = []

    async def on_frame(frame: Frame) -> bool:
        lines.append(frame.value)
        return False

    with anyio.fail_after(10):
        result = await run_process(ProcessRequest(["sh", "-c", script], grace_s=0.3), on_frame)
    assert result.error is None
    assert result.exit_code == 0
    assert lines == [{"ok": True}]
    assert [_cmd(pid) for pid in live_processes_with(marker)] == []


def test_guard_argvs_one_process_mode_ends_them_too(marker: str) -> None:
    """The embedded model's worker runs under `guard_argv`: what it leaves ends with it."""
    import os
    import subprocess

    argv, fds = guard_argv(["sh", "-c", f"export MARK={marker}\n" + SCRIPT])
    env = {**os.environ, "MARK": marker}
    done = subprocess.run(
        argv, pass_fds=fds, start_new_session=True, capture_output=True, env=env, timeout=20
    )
    assert done.returncode == 0
    assert [_cmd(pid) for pid in live_processes_with(marker)] == []


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return f"{pid} gone"
