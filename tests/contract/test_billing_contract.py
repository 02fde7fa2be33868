"""Contract: the REAL claude / codex / gemini CLIs, configured as a user would, against a
FakeModelServer that answers with the provider's own error body for a used-up billing balance:
Anthropic's HTTP 400 `invalid_request_error` "Your credit balance is too low to access the
Anthropic API...", OpenAI's HTTP 429 `insufficient_quota`, Google's HTTP 400
`FAILED_PRECONDITION` "... Please enable billing on your project ...". What the real CLI
prints is `quota_exhausted` (not retried), and a chain `[cli, "echo"]` moves on to echo.
Same setup and skips as test_backends_contract.py (whose fixtures are reused)."""

from __future__ import annotations

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

anyio_backend = _contract.anyio_backend
cli = _contract.cli
project = _contract.project
server = _contract.server


def _billing_fault(cli: str) -> HttpFault:
    if cli == "claude":
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": "Your "
                "credit balance is too low to access the Anthropic API. Please go to Plans & "
                "Billing to upgrade or purchase credits."},
                "request_id": "req_011CbrFTcXhtiMzr3s6EocF7"}  # fmt: skip
        return HttpFault(400, body=body)
    if cli == "codex":
        body = {"error": {"message": "You exceeded your current quota, please check your plan "
                "and billing details. For more information on this error, read the docs: "
                "https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "type": "insufficient_quota", "param": None,
                "code": "insufficient_quota"}}  # fmt: skip
        return HttpFault(429, body=body)
    body = {"error": {"code": 400, "message": "Gemini API free tier is not available in your "
            "country. Please enable billing on your project in Google AI Studio.",
            "status": "FAILED_PRECONDITION"}}  # fmt: skip
    return HttpFault(400, body=body)


def _no_leftovers(result: Any) -> None:
    pid = result.failure().details.get("pid")
    if pid is not None:
        assert group_members(int(pid)) == []


async def test_a_used_up_balance_is_quota_exhausted_not_retried(
    cli: str, project: Path, server: FakeModelServer
) -> None:
    server.set_default(_billing_fault(cli))
    result = await create_llm_adapter(cwd=project).complete([Message.user("Say hi")])
    assert isinstance(result, Failure), result
    error = result.failure()
    detail = f"{error!s} / stderr: {error.stderr_tail[-800:]}"
    assert error.kind is ErrorKind.quota_exhausted, detail
    assert error.backend == cli
    assert not error.retryable
    assert error.retry_at is None, detail  # a balance states no reset
    assert error.window == "billing", detail
    _no_leftovers(result)


async def test_a_chain_moves_on_from_a_used_up_balance(
    cli: str, project: Path, server: FakeModelServer
) -> None:
    server.set_default(_billing_fault(cli))
    toml = project / "agentport.toml"
    toml.write_text(
        toml.read_text().replace(f'backend = "{cli}"', f'backend = ["{cli}", "echo"]', 1)
    )
    result = await create_llm_adapter(cwd=project).complete([Message.user("Say hi")])
    response = result.unwrap()
    assert response.backend == "echo"
    (skipped,) = [s for s in response.skipped if s.backend == cli]
    assert skipped.kind is ErrorKind.quota_exhausted, skipped
