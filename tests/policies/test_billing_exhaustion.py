"""A used-up billing balance is `quota_exhausted` (not retried, `window="billing"`) on every
backend and transport, whatever status the provider answered it with (Anthropic: 400
`invalid_request_error`; OpenRouter, DeepSeek, Copilot: 402; xAI: 403; OpenAI: 429), so a
failover chain moves on to its next member.

The wording is the providers' and CLIs' own (public error bodies and issue reports; the one
table is `agentport.core._billing.BILLING_WORDS`). Checked: the table itself; each verified
CLI's real error transcript with the provider's message and status put in; the HTTP
classifier of openai_compat and, end to end, a chain `["openai_compat", "echo"]` against
FakeModelServer; LiteLLM's exceptions; an ACP agent's JSON-RPC error. The real CLIs answering
the provider's real error body: tests/contract/test_billing_contract.py.
"""

from __future__ import annotations

import json
import re

import anyio
import pytest
import test_quota_windows as _windows

from agentport import create_llm_adapter
from agentport.backends._acp_rpc import rpc_error
from agentport.backends.openai_compat import classify_http
from agentport.core import ErrorKind, Message, ProviderError, as_quota
from agentport.core._billing import BILLING_WORDS, billing_said
from agentport.testing import FakeModelServer, HttpFault

# (id, HTTP status the provider uses, the provider's message)
CASES: list[tuple[str, int, str]] = [
    ("anthropic-credit", 400, "Your credit balance is too low to access the Anthropic API. "
     "Please go to Plans & Billing to upgrade or purchase credits."),
    ("claude-code-credit", 400, "Credit balance is too low"),
    ("anthropic-spend-limit", 400, "You have reached your specified API usage limits. You will "
     "regain access on 2026-08-01 at 00:00 UTC."),
    ("openai-insufficient-quota", 429, "You exceeded your current quota, please check your plan "
     "and billing details. For more information on this error, read the docs: "
     "https://platform.openai.com/docs/guides/error-codes/api-errors."),
    ("openai-billing-not-active", 429, "Your account is not active, please check your billing "
     "details on our website."),
    ("codex-cli", 429, "Quota exceeded. Check your plan and billing details."),
    ("gemini-enable-billing", 400, "Gemini API free tier is not available in your country. "
     "Please enable billing on your project in Google AI Studio."),
    ("gemini-no-billing-account", 400, "User location is not supported for the API use without "
     "a billing account linked."),
    ("openrouter-credits", 402, "Insufficient credits. Add more using "
     "https://openrouter.ai/settings/credits"),
    ("openrouter-afford", 402, "This request requires more credits, or fewer max_tokens. You "
     "requested up to 16384 tokens, but can only afford 3919."),
    ("deepseek", 402, "Insufficient Balance"),
    ("xai", 403, "Your team 16f2 has either used all available credits or reached its monthly "
     "spending limit. To continue making API requests, please purchase more credits or raise "
     "your spending limit."),
    ("copilot", 402, "You have no quota"),
]  # fmt: skip
IDS = [case[0] for case in CASES]


def _exhausted(error: ProviderError, context: object) -> None:
    assert error.kind is ErrorKind.quota_exhausted, (context, error, error.stderr_tail[-400:])
    assert not error.retryable, context
    assert error.retry_at is None, context  # a balance states no reset: a chain decides
    assert error.window == "billing", context


def test_every_row_of_the_table_is_seen_and_each_case_is_one_of_them() -> None:
    providers = {who for who, _ in BILLING_WORDS}
    assert {"anthropic", "openai", "google", "openrouter", "codex", "copilot"} <= providers
    for fid, _, message in CASES:
        assert billing_said(message), fid
    for words in ("rate limit exceeded", "Resource has been exhausted (e.g. check quota).",
                  "invalid api key", "temperature must be <= 2"):  # fmt: skip
        assert billing_said(words) is None


# ---- every verified CLI, through its real error transcript ----------------------------------


def _with_status(text: str, status: int) -> str:
    return re.sub(r"(?<![\d.])429(?![\d.])", str(status), text)


@pytest.mark.parametrize("cli", sorted(_windows._CLIS))
@pytest.mark.parametrize(("fid", "status", "message"), CASES, ids=IDS)
def test_each_cli_reads_every_billing_wording_as_quota_exhausted(
    cli: str, fid: str, status: int, message: str
) -> None:
    out, err, code = _windows._transcript(cli, message)
    out, err = _with_status(out, status), _with_status(err, status)
    assert json.dumps(message)[1:-1] in out + err or message in out + err
    _exhausted(_windows.judge(_windows._CLIS[cli], out, err, code), (cli, fid))


# ---- HTTP (openai_compat): the classifier, and a chain end to end ---------------------------


@pytest.mark.parametrize(("fid", "status", "message"), CASES, ids=IDS)
@pytest.mark.parametrize(
    "shape",
    [
        lambda m: {"error": {"message": m, "type": "invalid_request_error"}},  # Anthropic-like
        lambda m: {"error": {"message": m, "code": 402}},  # OpenRouter
        lambda m: {"error": {"code": 400, "message": m, "status": "FAILED_PRECONDITION"}},
    ],
    ids=["anthropic-body", "openrouter-body", "google-body"],
)
def test_http_reads_every_billing_wording_as_quota_exhausted(
    fid: str, status: int, message: str, shape: object
) -> None:
    body = json.dumps(shape(message))  # type: ignore[operator]
    _exhausted(classify_http(status, body, {}, "openai_compat"), fid)


def test_http_402_with_any_words_is_a_used_up_balance() -> None:
    _exhausted(classify_http(402, '{"error": {"message": "Payment Required"}}'), "402")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fid", "status", "message"), CASES[:3] + CASES[8:9], ids=IDS[:3] + IDS[8:9]
)
async def test_a_chain_moves_on_from_a_used_up_balance(
    fid: str, status: int, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer() as server:
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        server.set_default(HttpFault(status, body=body))
        chain = create_llm_adapter(
            ["openai_compat", "echo"],
            openai_compat={"base_url": server.openai_base_url, "api_key": "k"},
        )
        with anyio.fail_after(30):
            response = (await chain.complete([Message.user("hi")])).unwrap()
        assert response.backend == "echo", fid
        assert len(server.model_requests) == 1  # not retried: a balance does not come back
    (skipped,) = [s for s in response.skipped if s.backend == "openai_compat"]
    assert skipped.kind is ErrorKind.quota_exhausted


# ---- LiteLLM and ACP ------------------------------------------------------------------------


@pytest.mark.parametrize(("fid", "status", "message"), CASES, ids=IDS)
def test_litellm_reads_every_billing_wording_as_quota_exhausted(
    fid: str, status: int, message: str
) -> None:
    litellm = pytest.importorskip("litellm")
    import httpx

    from agentport.backends.litellm import classify_exception

    by_status = {400: litellm.BadRequestError, 429: litellm.RateLimitError}
    if status == 402:
        exc: Exception = litellm.BadRequestError(message, model="m", llm_provider="openrouter")
        exc.status_code = 402  # type: ignore[attr-defined]
    elif status == 403:
        response = httpx.Response(403, request=httpx.Request("POST", "http://127.0.0.1/v1"))
        exc = litellm.PermissionDeniedError(message, "xai", "m", response)
    else:
        exc = by_status[status](message, model="m", llm_provider="anthropic")
    error = classify_exception(exc)
    assert error is not None
    _exhausted(error, fid)


@pytest.mark.parametrize(("fid", "status", "message"), CASES, ids=IDS)
def test_an_acp_agent_error_with_billing_words_is_quota_exhausted(
    fid: str, status: int, message: str
) -> None:
    # agents answer a failed turn with JSON-RPC -32603 and the provider's text, or its status
    for error in (
        rpc_error({"code": -32603, "message": "Internal error", "data": message}, "session/prompt"),
        rpc_error({"code": status, "message": message}, "session/prompt"),
    ):
        _exhausted(as_quota(error), fid)
