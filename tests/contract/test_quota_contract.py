"""Contract: the REAL codex / claude / gemini CLIs, configured as a user would, against a
FakeModelServer that answers with the provider's own 429 body:
OpenAI `usage_limit_reached` with `resets_at`, Anthropic `rate_limit_error` (a plain rate limit)
and its subscription-window headers, Google `RESOURCE_EXHAUSTED` with a `RetryInfo`. What the
real CLI prints is classified: an exhausted window is `quota_exhausted` with its `retry_at`,
a burst 429 stays a retryable `rate_limited`. Same setup and skips as
test_backends_contract.py (whose fixtures are reused)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import test_backends_contract as _contract
from returns.result import Failure

from agentport import create_llm_adapter
from agentport.core import ErrorKind, Message
from agentport.testing import FakeModelServer, HttpFault
from agentport.transport import group_members

pytestmark = [pytest.mark.contract, pytest.mark.anyio]

# the real CLIs' setup (bin folder, isolated HOME, agentport.toml, skips) of the contract tests
anyio_backend = _contract.anyio_backend
cli = _contract.cli
project = _contract.project
server = _contract.server

RESET_IN = 3 * 3600 + 17 * 60


def _window_fault(cli: str) -> HttpFault:
    resets_at = int(time.time()) + RESET_IN
    if cli == "codex":
        body = {"error": {"type": "usage_limit_reached", "message": "The usage limit has been "
                "reached", "plan_type": "plus", "resets_at": resets_at,
                "resets_in_seconds": RESET_IN}}  # fmt: skip
        headers = {"x-codex-primary-reset-after-seconds": str(RESET_IN),
                   "x-codex-primary-reset-at": str(resets_at)}  # fmt: skip
        return HttpFault(429, body=body, headers=headers)
    if cli == "claude":
        body = {"type": "error", "error": {"type": "rate_limit_error", "message": "This request "
                "would exceed your account's rate limit. Please try again later."}}  # fmt: skip
        headers = {"anthropic-ratelimit-unified-status": "rejected",
                   "anthropic-ratelimit-unified-reset": str(resets_at),
                   "anthropic-ratelimit-unified-representative-claim": "five_hour"}  # fmt: skip
        return HttpFault(429, body=body, headers=headers)
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded "
            "for quota metric 'Gemini 2.5 Flash Requests' and limit 'Gemini 2.5 Flash Requests "
            "per day per user per tier'. You exceeded your current quota, please check your plan "
            "and billing details.", "details": [{"@type": "type.googleapis.com/google.rpc."
            "RetryInfo", "retryDelay": f"{RESET_IN}s"}]}}  # fmt: skip
    return HttpFault(429, body=body)


def _burst_fault(cli: str) -> HttpFault:
    if cli == "claude":
        body = {"type": "error", "error": {"type": "rate_limit_error", "message": "This request "
                "would exceed your account's rate limit. Please try again later."}}  # fmt: skip
        return HttpFault(429, body=body, retry_after=0)
    return HttpFault.rate_limited(retry_after=0)


def _no_leftovers(result: Any) -> None:
    assert group_members(int(result.failure().details["pid"])) == []


async def test_an_exhausted_window_is_quota_exhausted_with_its_reset(
    cli: str, project: Path, server: FakeModelServer
) -> None:
    server.set_default(_window_fault(cli))
    before = datetime.now(UTC)
    result = await create_llm_adapter(cwd=project).complete([Message.user("Say hi")])
    assert isinstance(result, Failure), result
    error = result.failure()
    detail = f"{error!s} / stderr: {error.stderr_tail[-800:]}"
    if cli == "claude":
        # Claude Code (2.1.197) with an API key reports Anthropic's `rate_limit_error` as
        # "API Error: Request rejected (429) · ..." whatever the unified-window headers say:
        # its "You've hit your limit · resets ..." text needs a subscription login, which the
        # fake server cannot give. That text is covered by test_quota_windows.py.
        assert error.kind is ErrorKind.rate_limited, detail
        assert "rate limit" in error.message
        _no_leftovers(result)
        return
    assert error.kind is ErrorKind.quota_exhausted, detail
    assert error.backend == cli
    assert not error.retryable
    assert error.retry_at is not None, detail
    expected = before + timedelta(seconds=RESET_IN)
    assert abs((error.retry_at - expected).total_seconds()) <= 120, detail
    assert len(server.model_requests) == 1  # not retried before the reset
    _no_leftovers(result)


async def test_a_burst_429_stays_a_retryable_rate_limit(
    cli: str, project: Path, server: FakeModelServer
) -> None:
    server.set_default(_burst_fault(cli))
    result = await create_llm_adapter(cwd=project).complete([Message.user("Say hi")])
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is ErrorKind.rate_limited, f"{error!s} / {error.stderr_tail[-800:]}"
    assert error.retryable
    assert error.retry_at is None
    _no_leftovers(result)
