"""Leaving a turn's event stream — breaking out, `aclose()` from the consuming task or from
another task, cancelling the consumer — ends that turn cleanly on every runtime (CLI, ACP,
echo) and on asyncio and trio: no exception escapes the runtime, no process is left, and a
second turn works.

Regression: `aclose()` from another task crashed `CliRuntime` with an `ExceptionGroup`
holding `BrokenResourceError` (the send failed inside the runner's task group).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from _fake_clis_util import FAKE_CLIS, live_processes_with
from _runner_util import FIXTURES, fake_executable
from agentport.core import AgentEvent, EventType
from agentport.factory import create_agent_runtime

pytestmark = pytest.mark.anyio
MODES = ["break", "aclose", "aclose_from_another_task", "cancel_the_consumer"]


def _runtime(kind: str, tmp_path: Path, mark: str) -> Any:
    if kind == "cli":
        return create_agent_runtime(
            "codex",
            codex={
                "executable": str(fake_executable(tmp_path)),
                "grace_s": 0.5,
                "env": {
                    "FAKE_CLI_MARK": mark,
                    "FAKE_CLI_DELAY": "0.05",
                    "FAKE_CLI_STDOUT": str(FIXTURES / "codex" / "tool-shell.stdout"),
                },
            },
        )
    if kind == "acp":
        agent = [sys.executable, str(FAKE_CLIS / "fake_acp_agent.py")]
        return create_agent_runtime("acp", acp={"command": agent, "grace_s": 0.5})
    return create_agent_runtime("echo")


async def _leave(events: AsyncIterator[AgentEvent], mode: str) -> None:
    if mode == "break":
        async for _ in events:
            break
    elif mode == "aclose":
        async for _ in events:
            break
        await events.aclose()  # type: ignore[attr-defined]
    elif mode == "aclose_from_another_task":
        first = anyio.Event()

        async def consume() -> None:
            async for _ in events:
                first.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await first.wait()
            await events.aclose()  # type: ignore[attr-defined]  # consume() then stops
    else:
        with anyio.CancelScope() as scope:

            async def consume_then_cancel() -> None:
                async for _ in events:
                    scope.cancel()
                    await anyio.lowlevel.checkpoint()

            await consume_then_cancel()


@pytest.mark.parametrize("kind", ["cli", "acp", "echo"])
@pytest.mark.parametrize("mode", MODES)
async def test_leaving_a_turn_ends_it_and_the_runtime_stays_usable(
    kind: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    mark = uuid.uuid4().hex
    record = tmp_path / f"acp-{mark}.jsonl"
    monkeypatch.setenv("FAKE_RECORD", str(record))
    monkeypatch.setenv("FAKE_SCENARIO", "tool")
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    async with _runtime(kind, tmp_path, mark) as runtime:
        await _leave(runtime.send("one"), mode)
        second = [event async for event in runtime.send("two")]
        assert second[-1].type is EventType.final, second[-1]
    assert live_processes_with(mark) == []
    assert live_processes_with(str(record)) == []
