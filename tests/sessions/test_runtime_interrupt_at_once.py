"""`interrupt()` right after `send()` ends that turn (docs/sessions.md's example), on every
agent CLI runtime: the turn had been started but not yet scheduled, or was waiting for a slot
of the backend's concurrency window, so there was no running turn to end and `interrupt()`
returned False while the turn went on to run (and took the next turn's steer text). Now it is
True, the turn's stream is one `interrupted` error event, and the CLI never starts."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentport import create_agent_runtime
from agentport.catalog import CATALOG
from agentport.core import ErrorKind, EventType, SteerResult
from agentport.policies import GatedRuntime
from agentport.testing import ALLOW_ENV

pytestmark = pytest.mark.anyio

RUNTIME_CLIS = sorted(
    name
    for name, cap in CATALOG.items()
    if cap.supports_runtime and cap.executable is not None and name != "acp"
)


@pytest.fixture(autouse=True)
def _real_backends_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")  # the CLIs are stand-ins that are never started


def _never_run(tmp_path: Path, name: str) -> tuple[str, Path]:
    """A stand-in executable that leaves a mark if it is ever started."""
    mark = tmp_path / "started"
    exe = tmp_path / name
    exe.write_text(f"#!/bin/sh\ntouch '{mark}'\nsleep 60\n")
    exe.chmod(0o755)
    return str(exe), mark


@pytest.mark.parametrize("backend", RUNTIME_CLIS)
async def test_interrupt_right_after_send_ends_that_turn(tmp_path: Path, backend: str) -> None:
    exe, mark = _never_run(tmp_path, backend)
    async with create_agent_runtime(backend, **{backend: {"executable": exe}}) as rt:
        stream = rt.send("refactor the parser")
        assert rt.interrupt() is True
        assert rt.interrupt() is False  # a second call: nothing left to end
        assert rt.steer("keep the public names") is SteerResult.queued_next_turn
        with anyio.fail_after(30):
            events = [event async for event in stream]
    assert [e.type for e in events] == [EventType.error]
    assert events[0].metadata["error"].kind is ErrorKind.interrupted
    assert not mark.exists()


class _FullWindow:
    """A concurrency gate whose window never has room."""

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Any]:
        await anyio.sleep_forever()
        yield None


async def test_interrupt_ends_a_turn_waiting_for_a_slot(tmp_path: Path) -> None:
    exe, mark = _never_run(tmp_path, "claude")
    async with create_agent_runtime("claude", claude={"executable": exe}) as rt:
        assert isinstance(rt, GatedRuntime)
        rt.gate = _FullWindow()  # type: ignore[assignment]
        stream = rt.send("waits")
        await anyio.sleep(0.2)  # the turn is now waiting for a slot
        assert rt.interrupt() is True
        with anyio.fail_after(10):
            events = [event async for event in stream]
    assert [e.type for e in events] == [EventType.error]
    assert events[0].metadata["error"].kind is ErrorKind.interrupted
    assert not mark.exists()
