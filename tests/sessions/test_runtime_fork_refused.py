"""`fork()` on every agent CLI runtime: a backend that can fork needs a session first
(`ValueError`); one that cannot (catalog fork IGNORED) refuses on the fork's first turn with
`unsupported`, before its CLI starts, also when it keeps no session at all (pi: `fork()` used
to raise "run a turn first" after a turn had run)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentport import create_agent_runtime
from agentport.catalog import CATALOG
from agentport.core import ErrorKind, EventType, Param, ParamSupport
from agentport.testing import ALLOW_ENV

pytestmark = pytest.mark.anyio

RUNTIME_CLIS = sorted(
    name
    for name, cap in CATALOG.items()
    if cap.supports_runtime and cap.executable is not None and name != "acp"
)


@pytest.mark.parametrize("backend", RUNTIME_CLIS)
async def test_fork_without_a_session(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")  # the CLI is a stand-in that is never started
    mark = tmp_path / "started"
    exe = tmp_path / backend
    exe.write_text(f"#!/bin/sh\ntouch '{mark}'\nsleep 60\n")
    exe.chmod(0o755)
    async with create_agent_runtime(backend, **{backend: {"executable": str(exe)}}) as rt:
        if CATALOG[backend].support(Param.fork) is not ParamSupport.IGNORED:
            with pytest.raises(ValueError, match="needs a session"):
                rt.fork()
            return
        async with rt.fork() as forked:
            with anyio.fail_after(30):
                events = [event async for event in forked.send("go on")]
    assert [e.type for e in events] == [EventType.error]
    assert events[0].metadata["error"].kind is ErrorKind.unsupported
    assert not mark.exists()
