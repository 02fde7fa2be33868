"""A wait a backend asks for is a finite number of seconds, `0 <= s <= MAX_WAIT_S`, or absent:
on every path that parses one (an HTTP `Retry-After` / `retry-after-ms` header of
openai_compat and LiteLLM, a provider's body, a CLI's text, the headroom headers, a
serialised error) and on `ProviderError.retry_after` itself. NaN, infinity, `1e400`, a
negative number and garbage are absent, never an exception (`anyio.sleep(nan)` raised out of
`complete()`), never `retry_after=nan` on a Failure. Properties over header strings.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentport import create_llm_adapter
from agentport.backends.openai_compat import classify_http, parse_retry_after
from agentport.core import ErrorKind, Message, ProviderError, as_quota, headroom_from_headers
from agentport.core._wait import MAX_WAIT_S, parse_wait, wait_from_headers, wait_seconds
from agentport.policies import RetryPolicy
from agentport.testing import FakeModelServer, HttpFault

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
HOSTILE = ["NaN", "nan", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e3", "-5",
           "-0.5", "0x10", "", " ", "soon", "12abc", "9" * 400, "1_000", "+5", "5.", ".5",
           "\u0664\u0662",  # Arabic-Indic digits: float() takes them, RFC 9110 does not
           "Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT",
           "Wed, 21 Oct 2015 07:28:00", "Wed, 32 Oct 2015 07:28:00 GMT"]  # fmt: skip
VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=40),
    st.floats().map(str),
    st.integers().map(str),
    st.floats(0, 1e7).map(lambda f: f"{f:.3f}"),
)


def _ok(seconds: Any) -> None:
    assert seconds is None or (
        isinstance(seconds, float) and math.isfinite(seconds) and 0 <= seconds <= MAX_WAIT_S
    ), seconds


# ---- the one parser --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0), (" 3 ", 3.0), ("1.5", 1.5), ("0", 0.0),
        ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),  # an HTTP-date, 10 s after `now`
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # a date already past: now
        ("NaN", None), ("inf", None), ("1e400", None), ("-5", None), ("garbage", None),
        (str(int(MAX_WAIT_S) + 1), None),  # longer than any window: garbled, not believed
        ("Wed, 21 Oct 2015 07:28:10", None),  # no zone: not an HTTP-date
        ("\u0664\u0662", None),  # Arabic-Indic digits: float() reads 42, RFC 9110 DIGIT is ASCII
    ],
)  # fmt: skip
def test_retry_after_values_per_rfc_9110(value: str, expected: float | None) -> None:
    assert parse_wait(value, now=1445412480) == expected  # 2015-10-21 07:28:00 GMT


@given(VALUES, VALUES)
def test_every_header_value_is_a_finite_bounded_wait_or_absent(retry: str, ms: str) -> None:
    _ok(parse_wait(retry))
    _ok(wait_from_headers({"Retry-After": retry}))
    _ok(wait_from_headers({"retry-after-ms": ms, "Retry-After": retry}))
    _ok(wait_seconds(retry))


@given(st.one_of(st.floats(), st.integers(-(10**400), 10**400), st.booleans(), st.none()))
def test_provider_error_retry_after_is_checked_on_construction_and_copy(value: Any) -> None:
    error = ProviderError(ErrorKind.rate_limited, "x", retry_after=value)
    _ok(error.retry_after)
    _ok(error.replace(retry_after=value).retry_after)
    _ok(RetryPolicy().delay(0, error))  # the sleep the retry policy would take
    assert math.isfinite(RetryPolicy().delay(0, error))


# ---- every path that parses a wait -----------------------------------------------------------


@given(VALUES, VALUES, st.sampled_from([429, 503, 529]))
def test_http_classifier(retry: str, ms: str, status: int) -> None:
    for headers in ({"Retry-After": retry}, {"retry-after-ms": ms}):
        error = classify_http(status, '{"error": {"message": "slow down"}}', headers)
        _ok(error.retry_after)
        _ok(parse_retry_after(headers))


@given(VALUES)
def test_litellm_exception_headers(retry: str) -> None:
    litellm = pytest.importorskip("litellm")
    import httpx

    from agentport.backends.litellm import classify_exception

    raw = [(b"retry-after", retry.encode("utf-8", "surrogatepass"))]  # bytes, as received
    response = httpx.Response(429, headers=raw,
                              request=httpx.Request("POST", "http://127.0.0.1/v1"))  # fmt: skip
    exc = litellm.RateLimitError("slow down", llm_provider="openai", model="m", response=response)
    error = classify_exception(exc)
    assert error is not None
    _ok(error.retry_after)


@given(VALUES, st.sampled_from(["seconds", "s", "minutes", "hours", "days"]))
def test_cli_text(amount: str, unit: str) -> None:
    for text in (
        f"You've hit your usage limit. Try again in {amount} {unit}.",
        f"You exceeded your current quota per day. retryDelayMs: {amount}",
        f"Claude AI usage limit reached|{amount}",
    ):
        error = as_quota(ProviderError(ErrorKind.rate_limited, text), now=NOW)
        _ok(error.retry_after)
        if error.retry_at is not None:
            assert NOW - timedelta(seconds=5) <= error.retry_at <= NOW + timedelta(days=31)


@given(VALUES)
def test_provider_bodies(value: str) -> None:
    # JSON allows NaN / Infinity as Python writes them; a body is a provider's, not ours
    bare = re.fullmatch(r"-?(?:NaN|Infinity|\d+(?:\.\d+)?(?:e\d+)?)", value)
    number = value if bare else json.dumps(value)
    raw = f'{{"error": {{"type": "usage_limit_reached", "resets_in_seconds": {number}}}}}'
    error = ProviderError(ErrorKind.rate_limited, "limit")
    _ok(as_quota(error, body=raw, now=NOW).retry_after)
    google = {"error": {"status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded per day",
              "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                           "retryDelay": f"{value}s"}]}}  # fmt: skip
    _ok(as_quota(error, body=google, now=NOW).retry_after)


@given(VALUES)
def test_headroom_headers(value: str) -> None:
    headers = {"x-ratelimit-limit-requests": value, "x-ratelimit-remaining-requests": value,
               "x-ratelimit-reset-requests": value, "x-codex-primary-used-percent": value,
               "x-codex-primary-reset-after-seconds": value}  # fmt: skip
    for window in headroom_from_headers(headers, now=NOW):
        assert window.remaining_share is None or 0.0 <= window.remaining_share <= 1.0
        if window.resets_at is not None:
            assert NOW <= window.resets_at <= NOW + timedelta(days=31)


@given(st.one_of(st.floats(), st.sampled_from([1e400, -1.0, float("nan")])))
def test_an_error_read_back_from_temporal(value: float) -> None:
    pytest.importorskip("temporalio")
    from agentport.temporal._data import error_from_dict, retry_decision

    error = error_from_dict({"kind": "rate_limited", "message": "x", "retry_after": value})
    _ok(error.retry_after)
    retry, delay = retry_decision(error, NOW)
    assert retry
    assert delay is None or math.isfinite(delay.total_seconds())


# ---- end to end: a server that sends `Retry-After: NaN` --------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("value", ["NaN", "inf", "1e400", "-5", "soon"])
async def test_complete_survives_a_garbage_retry_after(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer() as server:
        fault = HttpFault(429, "slow down", headers={"Retry-After": value, "retry-after-ms": value})
        server.script(fault, "hello after the wait")
        options = {"base_url": server.openai_base_url, "api_key": "k"}
        with anyio.fail_after(20):  # retried after the policy's own back-off, not a garbled wait
            llm = create_llm_adapter(
                "openai_compat", openai_compat=options, retry_base_delay_s=0.05
            )
            assert (await llm.complete([Message.user("hi")])).unwrap().content
        server.script(fault)
        once = create_llm_adapter("openai_compat", retry=False, openai_compat=options)
        error = (await once.complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.rate_limited
    assert error.retry_after is None  # not nan
