"""`steer()` on an agent CLI runtime that is not open (never entered, or closed) raises
`RuntimeError`, as `send()` does: a queued text no turn will ever take is lost in silence
otherwise (it answered `queued_next_turn`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentport import create_agent_runtime
from agentport.catalog import CATALOG
from agentport.testing import ALLOW_ENV

pytestmark = pytest.mark.anyio

RUNTIME_CLIS = sorted(
    name
    for name, cap in CATALOG.items()
    if cap.supports_runtime and cap.executable is not None and name != "acp"
)


@pytest.mark.parametrize("backend", RUNTIME_CLIS)
async def test_steer_outside_the_runtime_raises(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")  # the CLI is a stand-in that is never started
    exe = tmp_path / backend
    exe.write_text("#!/bin/sh\nexit 1\n")
    exe.chmod(0o755)
    rt = create_agent_runtime(backend, **{backend: {"executable": str(exe)}})
    with pytest.raises(RuntimeError, match="async with"):
        rt.steer("before")
    async with rt:
        assert rt.steer("inside") is not None  # open: queued or applied, never an error
    with pytest.raises(RuntimeError, match="async with"):
        rt.steer("after")
