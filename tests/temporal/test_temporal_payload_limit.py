"""An answer too large for a Temporal payload is a typed failure value (never retried),
not an untyped "Activity task failed" after every retry: the `complete` activity run the
way a worker runs it (temporalio's ActivityEnvironment), on every backend kind it can
reach here (echo answers with the prompt it got)."""

from __future__ import annotations

import pytest

pytest.importorskip("temporalio", reason="needs the temporal extra: pip install -e '.[temporal]'")

from temporalio.testing import ActivityEnvironment

from agentport.core import ErrorKind, Message
from agentport.temporal import _activities
from agentport.temporal._data import CompleteInput, CompleteOutput


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # temporalio's ActivityEnvironment runs on asyncio


@pytest.mark.anyio
@pytest.mark.parametrize("size", [10, 3_000_000])
async def test_the_complete_activity_keeps_its_result_under_the_payload_limit(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    data = CompleteInput(backend="echo", messages=[Message.user("x" * size).to_dict()])
    out: CompleteOutput = await ActivityEnvironment().run(_activities.complete, data)
    if size < _activities.MAX_RESULT_BYTES:
        assert out.ok is not None
        return
    assert out.ok is None
    assert out.error is not None
    assert out.error["kind"] == ErrorKind.bad_output.value
    assert out.error["retryable"] is False
    assert "Temporal payload" in out.error["message"]
    result = out.to_result()
    assert result.failure().kind is ErrorKind.bad_output
