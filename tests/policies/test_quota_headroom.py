"""Quota headroom: the remaining share of each usage window, from the provider's own
rate-limit headers (OpenAI / OpenAI-compatible, Anthropic, the Codex backend), kept per
backend by the policy layer and shown by `agentport quota`; "unknown" where a backend never
reported any. Checked with openai_compat against `FakeModelServer` the way a user calls it,
and the header forms as the providers' docs give them.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success
from typer.testing import CliRunner

from agentport import create_llm_adapter
from agentport.cli import app
from agentport.core import Headroom, Message, headroom_from_headers
from agentport.policies import quota_status, state_dir
from agentport.testing import FakeModelServer, HttpFault, TextReply

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
OPENAI = {
    "x-ratelimit-limit-requests": "500",
    "x-ratelimit-remaining-requests": "125",
    "x-ratelimit-reset-requests": "6m0s",
    "x-ratelimit-limit-tokens": "30000",
    "x-ratelimit-remaining-tokens": "29000",
    "x-ratelimit-reset-tokens": "20ms",
}


def test_openai_headers_give_both_windows() -> None:
    requests, tokens = headroom_from_headers(OPENAI, now=NOW)
    assert requests == Headroom("requests", 0.25, 125, 500, NOW + timedelta(minutes=6))
    assert tokens.window == "tokens"
    assert tokens.remaining_share == pytest.approx(29000 / 30000)
    assert tokens.resets_at == NOW + timedelta(milliseconds=20)


def test_anthropic_and_codex_headers() -> None:
    anthropic = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "2026-12-04T12:00:30Z",
    }
    (window,) = headroom_from_headers(anthropic, now=NOW)
    assert (window.window, window.remaining_share) == ("requests", 0.0)
    assert window.resets_at == NOW + timedelta(seconds=30)
    codex = {
        "X-Codex-Primary-Used-Percent": "80",
        "X-Codex-Primary-Window-Minutes": "300",
        "X-Codex-Primary-Reset-After-Seconds": "600",
        "X-Codex-Secondary-Used-Percent": "12.5",
    }
    primary, secondary = headroom_from_headers(codex, now=NOW)
    assert primary.remaining_share == pytest.approx(0.2)
    assert (primary.window_minutes, primary.resets_at) == (300, NOW + timedelta(minutes=10))
    assert secondary.remaining_share == pytest.approx(0.875)


def test_a_codex_window_with_only_its_reset_is_kept_and_read_by_the_quota_parser() -> None:
    """A 429 of the Codex backend may carry the reset without the used percent: the window
    is reported (share unknown), and `as_quota` reads the same headers for `retry_at`."""
    from agentport.core import ErrorKind, ProviderError, as_quota

    at = int((NOW + timedelta(hours=3)).timestamp())
    headers = {"x-codex-secondary-reset-at": str(at)}
    (window,) = headroom_from_headers(headers, now=NOW)
    assert (window.window, window.remaining_share) == ("secondary", None)
    assert window.resets_at == NOW + timedelta(hours=3)
    error = ProviderError(kind=ErrorKind.rate_limited, message="usage limit", backend="codex")
    quota = as_quota(error, headers=headers, now=NOW)
    assert (quota.kind, quota.window) == (ErrorKind.quota_exhausted, "weekly")
    assert quota.retry_at == NOW + timedelta(hours=3)


def test_nothing_is_guessed() -> None:
    assert headroom_from_headers({"content-type": "application/json"}, now=NOW) == ()
    (only,) = headroom_from_headers({"x-ratelimit-remaining-requests": "3"}, now=NOW)
    assert (only.remaining, only.limit, only.remaining_share) == (3, None, None)
    (bad,) = headroom_from_headers(
        {"x-ratelimit-limit-requests": "ten", "x-ratelimit-remaining-requests": "1",
         "x-ratelimit-reset-requests": "soon"}, now=NOW,
    )  # fmt: skip
    assert (bad.limit, bad.remaining_share, bad.resets_at) == (None, None, None)


@given(
    limit=st.integers(min_value=0, max_value=10**9),
    remaining=st.integers(min_value=-10, max_value=10**9 + 10),
    used=st.floats(min_value=-50, max_value=250, allow_nan=False),
)
def test_a_share_is_always_between_none_and_one(limit: int, remaining: int, used: float) -> None:
    headers = {
        "x-ratelimit-limit-tokens": str(limit),
        "x-ratelimit-remaining-tokens": str(remaining),
        "x-codex-primary-used-percent": str(used),
    }
    for window in headroom_from_headers(headers, now=NOW):
        share = window.remaining_share
        assert share is None or 0.0 <= share <= 1.0
        assert Headroom.from_dict(window.as_dict()) == window


# ---------------------------------------------------------------- through the policy layer


@pytest.mark.anyio
async def test_a_call_records_what_its_response_reported(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    assert quota_status("openai_compat").windows == ()  # unknown before any call
    server.reply(TextReply("hi", headers=OPENAI))
    options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123"}
    llm = create_llm_adapter(
        "openai_compat", cwd=tmp_path, model="m", retry_attempts=1, openai_compat=options
    )
    response = (await llm.complete([Message.user("hi")])).unwrap()
    assert [w["window"] for w in response.raw.extra["headroom"]] == ["requests", "tokens"]
    status = quota_status("openai_compat")
    assert status.lowest_share == pytest.approx(0.25)
    assert status.seen_at is not None

    # a 429 reports its windows too; the later report replaces the earlier one
    low = {**OPENAI, "x-ratelimit-remaining-requests": "0"}
    server.reply(HttpFault(429, "slow down", headers=low))
    error = (await llm.complete([Message.user("hi")], None)).failure()
    assert error.details["headroom"][0]["remaining"] == 0
    assert quota_status("openai_compat").lowest_share == 0.0


@pytest.mark.anyio
async def test_recording_headroom_costs_no_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows come with every HTTP call: the snapshot is replaced atomically but never
    fsynced (two fsyncs a call would be the policy layer's largest cost)."""
    from agentport.core import CompletionResponse
    from agentport.core._headroom import with_headroom
    from agentport.policies._headroom import note_headroom

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    result = with_headroom(
        Success(CompletionResponse(content="x", model="m")),
        headroom_from_headers(OPENAI, now=NOW),
    )
    await note_headroom(tmp_path, "openai_compat", result)
    assert synced == []
    assert quota_status("openai_compat", folder=tmp_path, now=NOW).lowest_share == 0.25


def test_a_window_that_has_reset_is_no_longer_reported(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    (folder / "headroom").mkdir(parents=True)
    past = Headroom("requests", 0.0, 0, 10, NOW - timedelta(seconds=1))
    future = Headroom("tokens", 0.5, 5, 10, NOW + timedelta(seconds=60))
    data = {"seen_at": NOW.isoformat(), "windows": [past.as_dict(), future.as_dict()]}
    (folder / "headroom" / "codex.json").write_text(json.dumps(data), encoding="utf-8")
    assert quota_status("codex", folder=folder, now=NOW).windows == (future,)
    (folder / "headroom" / "codex.json").write_text("{broken", encoding="utf-8")
    assert quota_status("codex", folder=folder, now=NOW).windows == ()  # unreadable: unknown


def test_the_quota_command_shows_unknown_and_known_windows(tmp_path: Path) -> None:
    folder = state_dir() / "headroom"
    folder.mkdir(parents=True, exist_ok=True)
    soon = datetime.now(UTC) + timedelta(minutes=5)
    data = {
        "seen_at": datetime.now(UTC).isoformat(),
        "windows": [Headroom("primary", 0.4, resets_at=soon, window_minutes=300).as_dict()],
    }
    (folder / "codex.json").write_text(json.dumps(data), encoding="utf-8")
    runner = CliRunner()
    shown = runner.invoke(app, ["quota", "--json"])
    assert shown.exit_code == 0, shown.output
    rows = {r["backend"]: r for r in json.loads(shown.stdout)}
    assert rows["codex"]["left"] == pytest.approx(0.4)
    assert rows["claude"]["window"] is None  # never reported: unknown
    table = runner.invoke(app, ["quota", "codex"])
    assert "40%" in table.stdout
    bad = runner.invoke(app, ["quota", "nope"])
    assert bad.exit_code == 2
    assert "unknown backend 'nope'" in bad.output


@pytest.mark.anyio
async def test_a_chain_passes_over_a_member_under_min_headroom(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    nearly_out = {**OPENAI, "x-ratelimit-remaining-requests": "20"}  # 4% of 500 left
    server.set_default(TextReply("from the endpoint", headers=nearly_out))
    options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123"}

    def chain(min_headroom: float | None) -> Any:
        return create_llm_adapter(
            ["openai_compat", "echo"], cwd=tmp_path, model="m", min_headroom=min_headroom,
            openai_compat=options,
        )  # fmt: skip

    first = (await chain(0.1).complete([Message.user("hi")])).unwrap()
    assert first.backend == "openai_compat"  # nothing known yet: called
    second = (await chain(0.1).complete([Message.user("hi")])).unwrap()
    assert second.backend == "echo"
    (skipped,) = second.skipped
    assert (skipped.backend, skipped.called) == ("openai_compat", False)
    assert "4% left, under min_headroom 10%" in skipped.reason
    assert len(server.model_requests) == 1
    unset = (await chain(None).complete([Message.user("hi")])).unwrap()
    assert unset.backend == "openai_compat"  # without the setting nothing is passed over
