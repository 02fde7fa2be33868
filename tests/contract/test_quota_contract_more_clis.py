"""Contract: the REAL qwen / opencode / pi / copilot CLIs (OpenAI-compatible providers) against
a FakeModelServer answering OpenAI's own exhausted-window 429 body, `usage_limit_reached` with
`resets_at`. Same setup and skips as test_more_clis_contract.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import test_more_clis_contract as _more
from returns.result import Failure

from agentport.core import ErrorKind
from agentport.testing import FakeModelServer, HttpFault

pytestmark = [pytest.mark.contract, pytest.mark.anyio]

anyio_backend = _more.anyio_backend
mp = _more.mp
homes = _more.homes
backend = _more.backend

RESET_IN = 2 * 3600


async def test_openai_usage_limit_body_is_an_exhausted_window(
    backend: _more.Backend, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    resets_at = int(time.time()) + RESET_IN
    body = {"error": {"type": "usage_limit_reached", "message": "The usage limit has been "
            "reached", "plan_type": "plus", "resets_at": resets_at,
            "resets_in_seconds": RESET_IN}}  # fmt: skip
    home = homes[backend.name] / "quota"
    home.mkdir(exist_ok=True)
    with FakeModelServer() as server:
        server.default = HttpFault(429, body=body)
        result, _ = await _more._run(
            backend, server, home, mp, backend.fault_budget_s,
            startup_timeout_s=backend.fault_budget_s, idle_timeout_s=backend.fault_budget_s,
        )  # fmt: skip
    assert isinstance(result, Failure), result
    error = result.failure()
    detail = f"{error!s} / stderr: {error.stderr_tail[-600:]}"
    assert error.kind is ErrorKind.quota_exhausted, detail
    assert not error.retryable
