"""Exhausted usage windows are `quota_exhausted` with `retry_at`, never retried before it; a
plain burst 429 stays `rate_limited`.

Every format of shared/reference/quota-messages.md is checked twice: by the pure parser at a
fixed instant, and through each verified CLI's real HTTP 429 transcript (tests/fixtures/cli)
whose provider message is replaced by the format (built: the CLIs print the provider's message
where the stub's "rate limit exceeded" text stands), decoded and judged exactly as the generic
adapter does (decoder, end-state table, retry notices, then `as_quota`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, tzinfo
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _runner_util import FIXTURES
from agentport.backends import RunOutcome, claude, codex, copilot, gemini, opencode, pi, qwen
from agentport.backends._endstate import RunWatch, settle
from agentport.backends._retry_notice import notice_error
from agentport.core import (
    MAX_WINDOW,
    ErrorKind,
    ProviderError,
    as_quota,
    parse_quota,
    quota_from_body,
)
from agentport.core._quota import CLOCK_TOLERANCE

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
NY = ZoneInfo("America/New_York")


# ---- the pure parser, at a fixed instant ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "retry_at", "window"),
    [
        # Claude Code
        ("You've hit your session limit · resets 4:20am (Europe/Warsaw)",
         datetime(2026, 7, 2, 4, 20, tzinfo=ZoneInfo("Europe/Warsaw")), "session"),
        ("You've hit your limit · resets 4:50am (Europe/Rome)",
         datetime(2026, 7, 2, 4, 50, tzinfo=ZoneInfo("Europe/Rome")), None),
        ("Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
         datetime(2026, 7, 1, 9, 0, tzinfo=ZoneInfo("America/Chicago")), None),
        ("Claude AI usage limit reached|1782950400",
         datetime.fromtimestamp(1782950400, UTC), None),
        ("You've hit your weekly limit · resets Jul 3rd, 2026 2:00 PM (UTC)",
         datetime(2026, 7, 3, 14, 0, tzinfo=UTC), "weekly"),
        # Codex
        ("You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or "
         "try again in 2 days 17 hours 14 minutes.", NOW + timedelta(days=2, hours=17, minutes=14),
         None),
        ("You've hit your usage limit. Upgrade to Pro or try again in 5 days 22 hours 11 minutes.",
         NOW + timedelta(days=5, hours=22, minutes=11), None),
        ("You've hit your usage limit. To get more access now, send a request to your admin or "
         "try again at 2:57 PM.", datetime(2026, 7, 1, 14, 57, tzinfo=NY), None),
        ("You've hit your usage limit. Try again at Jul 10th, 2026 2:57 PM.",
         datetime(2026, 7, 10, 14, 57, tzinfo=NY), None),
        ("You've hit your usage limit. Para obtener más acceso ahora, or try again at 10 de jul. "
         "de 2026, 11:52.", datetime(2026, 7, 10, 11, 52, tzinfo=NY), None),
        ("ERROR: Quota exceeded. Check your plan and billing details.", None, "billing"),
        # Gemini
        ("Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro "
         "Requests per day per user per tier'", None, "daily"),
        ("You exceeded your current quota, please check your plan and billing details.", None,
         "billing"),  # OpenAI's insufficient_quota sentence: a balance
        ("[API Error: Quota exceeded for quota metric 'Gemini 2.5 Flash Requests' and limit "
         "'Gemini 2.5 Flash Requests per day per user per tier'. You exceeded your current "
         "quota, please check your plan and billing details.\nSuggested retry after 11820s.]",
         NOW + timedelta(seconds=11820), "daily"),
        ("You exceeded your current quota ... retryDelayMs: 11820000,",
         NOW + timedelta(seconds=11820), None),
    ],
)  # fmt: skip
def test_every_reference_format_gives_its_reset(
    text: str, retry_at: datetime | None, window: str | None
) -> None:
    found = parse_quota(text, now=NOW, local_tz=NY)
    assert found is not None
    assert found.retry_at == (retry_at.astimezone(UTC) if retry_at else None)
    assert found.window == window
    if found.retry_at is not None:
        assert found.retry_at.tzinfo is not None
        assert found.said
        assert found.said in text


@pytest.mark.parametrize(
    "text",
    [
        "exceeded retry limit, last status: 429 Too Many Requests",
        "This request would exceed your account's rate limit. Please try again later.",
        "Resource has been exhausted (e.g. check quota).",
        "API Error: Request rejected (429) · stub: rate limit exceeded, please retry later",
        "Quota exceeded for quota metric 'Requests' and limit 'Requests per minute per user'",
        "turn limit reached: error_max_turns",
        "Reached max turns (3): limit reached",
    ],
)
def test_unknown_or_burst_wording_is_not_a_window(text: str) -> None:
    assert parse_quota(text, now=NOW) is None


@pytest.mark.parametrize(
    "text",
    [
        "Claude AI usage limit reached|1000000000",  # 2001: in the past
        "You've hit your usage limit. Try again in 400 days.",  # years ahead: not believed
        "You've hit your usage limit. Try again at Jan 2nd, 2031 2:57 PM.",
    ],
)
def test_a_reset_in_the_past_or_far_ahead_is_not_believed(text: str) -> None:
    found = parse_quota(text, now=NOW, local_tz=NY)
    assert found is not None
    assert found.retry_at is None


def test_provider_bodies_openai_usage_limit_google_retryinfo_and_codex_headers() -> None:
    openai = {"error": {"type": "usage_limit_reached", "message": "The usage limit has been "
              "reached", "plan_type": "plus", "resets_at": 1782950400,
              "resets_in_seconds": 13872}}  # fmt: skip
    found = quota_from_body(json.dumps(openai), now=NOW)
    assert found is not None
    assert found.retry_at == datetime.fromtimestamp(1782950400, UTC)
    only_seconds = {"error": {"type": "usage_limit_reached", "resets_in_seconds": 600}}
    found = quota_from_body(only_seconds, now=NOW)
    assert found is not None
    assert found.retry_at == NOW + timedelta(seconds=600)
    google = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "You exceeded "
              "your current quota, please check your plan and billing details.",
              "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                           "retryDelay": "36s"}]}}  # fmt: skip
    found = quota_from_body(json.dumps(google), now=NOW)
    assert found is not None
    assert found.retry_at == NOW + timedelta(seconds=36)
    # Gemini CLI nests the body as a string in `message`, after a prefix, before a trace
    nested = "_ApiError: " + json.dumps({"error": {"message": json.dumps(google)}}) + "\n  at x"
    found = quota_from_body(nested, now=NOW)
    assert found is not None
    assert found.retry_at == NOW + timedelta(seconds=36)
    headers = {"X-Codex-Secondary-Reset-After-Seconds": "7200"}
    found = quota_from_body({"error": {"message": "Too many"}}, headers, now=NOW)
    assert found is not None
    assert found.window == "weekly"
    assert found.retry_at == NOW + timedelta(hours=2)
    burst = {"error": {"type": "rate_limit_error", "message": "This request would exceed your "
             "account's rate limit. Please try again later."}}  # fmt: skip
    assert quota_from_body(burst, now=NOW) is None  # Anthropic: a plain rate limit


def test_as_quota_keeps_a_plain_rate_limit_and_its_raw_text() -> None:
    plain = ProviderError(ErrorKind.rate_limited, "stub: rate limit exceeded", retry_after=1.0)
    assert as_quota(plain, now=NOW) is plain
    other = ProviderError(ErrorKind.server_error, "You've hit your usage limit.")
    assert as_quota(other, now=NOW) is other  # a 5xx stays a server error
    failed = ProviderError(ErrorKind.process_failed, "You've hit your limit · resets 4am (UTC)")
    assert as_quota(failed, now=NOW).kind is ErrorKind.quota_exhausted  # a CLI's unknown text
    crash = ProviderError(
        ErrorKind.process_failed, "exit code 1", stderr_tail="banner: 1000 requests per day"
    )
    assert as_quota(crash, now=NOW) is crash  # a failure's stderr banner is not its reason
    hit = ProviderError(
        ErrorKind.rate_limited, "You've hit your usage limit. Try again in 3 hours.", status=429
    )
    quota = as_quota(hit, now=NOW)
    assert quota.kind is ErrorKind.quota_exhausted
    assert not quota.retryable
    assert quota.retry_at == NOW + timedelta(hours=3)
    assert quota.retry_after == pytest.approx(3 * 3600)
    assert quota.message == hit.message
    assert quota.status == 429
    assert "resets 2026-07-01T15:00" in str(quota)


def test_a_naive_retry_at_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        ProviderError(ErrorKind.quota_exhausted, "x", retry_at=datetime(2026, 1, 1))


# ---- hypothesis: the parser's promises ------------------------------------------------------


@given(
    days=st.integers(0, 29), hours=st.integers(0, 23), minutes=st.integers(0, 59),
    verb=st.sampled_from(["try again in", "resets in", "Try again in"]),
)  # fmt: skip
def test_relative_durations_are_exact(days: int, hours: int, minutes: int, verb: str) -> None:
    parts = [f"{n} {unit}" for n, unit in ((days, "days"), (hours, "hours"), (minutes,
             "minutes")) if n]  # fmt: skip
    delta = timedelta(days=days, hours=hours, minutes=minutes)
    text = f"You've hit your usage limit. {verb} {' '.join(parts) or '0 minutes'}."
    found = parse_quota(text, now=NOW)
    assert found is not None
    assert found.retry_at == (NOW + delta if delta else None)


# a clock time with no date (its zone, midnight, DST, a minute that has begun):
# test_quota_clock_times.py


@given(st.text(max_size=300))
def test_any_text_parses_without_error_and_within_the_window(text: str) -> None:
    found = parse_quota("usage limit reached " + text, now=NOW)
    assert found is not None
    if found.retry_at is not None:
        assert NOW - timedelta(seconds=5) <= found.retry_at <= NOW + MAX_WINDOW


@given(st.text(alphabet=st.characters(blacklist_categories=("L",)), max_size=200))
def test_text_without_words_is_never_a_window(text: str) -> None:
    assert parse_quota(text, now=NOW) is None  # digits and punctuation alone say nothing


# ---- through each verified CLI's real 429 transcript ---------------------------------------

STUB = "stub: rate limit exceeded, please retry later"
CODEX_STUB = "exceeded retry limit, last status: 429 Too Many Requests"


def _future(days: int = 3) -> datetime:
    return (datetime.now(UTC) + timedelta(days=days)).replace(second=0, microsecond=0)


def _suffix(day: int) -> str:
    return "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _formats() -> list[tuple[str, str, Any]]:
    """(id, message, check(retry_at, local_tz)) for every reference format, dated from now."""
    at = _future()
    local = at.astimezone()
    es = ["ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic"]
    epoch = int((datetime.now(UTC) + timedelta(hours=2)).timestamp())

    def wall(zone: tzinfo | None, hour: int, minute: int) -> Any:
        # A clock time with no date: its next start, unless the stated minute began at most
        # CLOCK_TOLERANCE ago (then the reset is "now", not tomorrow). The suite reaches each
        # case at any wall time, so both readings are checked, never the clock's luck.
        def check(retry_at: datetime | None) -> None:
            assert retry_at is not None
            now = datetime.now(UTC)
            there = now.astimezone(zone) if zone else now.astimezone()
            began = there.replace(hour=hour, minute=minute, second=0, microsecond=0)
            if began > there:
                began -= timedelta(days=1)
            if there - began <= CLOCK_TOLERANCE + timedelta(minutes=1):
                assert began <= retry_at <= now + timedelta(minutes=1)
                return
            assert now < retry_at <= now + timedelta(days=1)
            seen = retry_at.astimezone(zone) if zone else retry_at.astimezone()
            assert (seen.hour, seen.minute) == (hour, minute)

        return check

    def exactly(expected: datetime | None, slack_s: float = 0.0) -> Any:
        def check(retry_at: datetime | None) -> None:
            if expected is None:
                assert retry_at is None
                return
            assert retry_at is not None
            assert abs((retry_at - expected).total_seconds()) <= slack_s

        return check

    def later(delta: timedelta, slack_s: float = 60.0) -> Any:
        # "try again in ..." is relative to when the message is read: the check's own now,
        # not the collection's (a long suite reaches this case minutes after collecting it)
        def check(retry_at: datetime | None) -> None:
            assert retry_at is not None
            assert abs((retry_at - (datetime.now(UTC) + delta)).total_seconds()) <= slack_s

        return check

    rel = timedelta(days=2, hours=17, minutes=14)
    return [
        ("claude-session", "You've hit your session limit · resets 4:20am (Europe/Warsaw)",
         wall(ZoneInfo("Europe/Warsaw"), 4, 20)),
        ("claude-limit", "You've hit your limit · resets 4:50am (Europe/Rome)",
         wall(ZoneInfo("Europe/Rome"), 4, 50)),
        ("claude-1x", "Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
         wall(ZoneInfo("America/Chicago"), 9, 0)),
        ("claude-epoch", f"Claude AI usage limit reached|{epoch}",
         exactly(datetime.fromtimestamp(epoch, UTC))),
        ("codex-relative", "You've hit your usage limit. Upgrade to Pro "
         "(https://openai.com/chatgpt/pricing) or try again in 2 days 17 hours 14 minutes.",
         later(rel)),
        ("codex-clock", "You've hit your usage limit. To get more access now, send a request "
         "to your admin or try again at 2:57 PM.", wall(None, 14, 57)),
        ("codex-date", f"You've hit your usage limit. Try again at {local:%b} {local.day}"
         f"{_suffix(local.day)}, {local.year} {local:%I:%M %p}.".replace(" 0", " "),
         exactly(at)),
        ("codex-localised", f"You've hit your usage limit. ... or try again at {local.day} de "
         f"{es[local.month - 1]}. de {local.year}, {local:%H:%M}.", exactly(at)),
        ("codex-billing", "ERROR: Quota exceeded. Check your plan and billing details.",
         exactly(None)),
        ("gemini-daily", "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit "
         "'Gemini 2.5 Pro Requests per day per user per tier'", exactly(None)),
    ]  # fmt: skip


_CLIS: dict[str, ModuleType] = {
    "claude": claude, "codex": codex, "gemini": gemini, "opencode": opencode, "pi": pi,
    "copilot": copilot,
}  # fmt: skip


def _transcript(cli: str, message: str) -> tuple[str, str, int | None]:
    """The CLI's real 429 run with *message* where the provider's text was."""
    base = FIXTURES / cli / "http429"
    out = base.with_suffix(".stdout").read_text(encoding="utf-8")
    err_path = base.with_suffix(".stderr")
    err = err_path.read_text(encoding="utf-8") if err_path.exists() else ""
    code = json.loads(base.with_suffix(".meta.json").read_text())["exit_code"]
    stub = CODEX_STUB if cli == "codex" else STUB
    once = json.dumps(message, ensure_ascii=False)[1:-1]  # inside one JSON string
    twice = json.dumps(once, ensure_ascii=False)[1:-1]  # inside a JSON string in a string
    out = out.replace(json.dumps(STUB)[1:-1].replace(STUB, stub), once)
    err = err.replace(f'\\"{stub}\\"', f'\\"{twice}\\"').replace(stub, once)
    return out, err, code


def judge(module: ModuleType, stdout: str, stderr: str, code: int | None) -> ProviderError:
    """What the generic CLI adapter makes of the run (CliAdapter._once, then `_fail`)."""
    spec = module.SPEC
    if spec.retry_notice is not None:
        watch_line = spec.retry_notice()
        for line in stderr.splitlines():
            stopped = watch_line(line)
            if stopped is not None:
                return as_quota(stopped.replace(stderr_tail=stderr[-4000:]))
    events, watch = [], RunWatch()
    for line in stdout.splitlines():
        if not line.strip().startswith("{"):
            continue
        event = module.decode(json.loads(line))
        if event is not None:
            events.append(event)
        if watch.feed(event) is True:
            break
    notice = next((e for e in events if e.end.retry_notice), None)
    if notice is not None:
        return as_quota(notice_error(notice, code, stderr))
    end = settle(spec, RunOutcome(code, stderr, events), watch.pending)
    assert end.error is not None, end
    return as_quota(end.error)


@pytest.mark.parametrize("cli", sorted(_CLIS))
@pytest.mark.parametrize(("fid", "message", "check"), _formats(), ids=[f[0] for f in _formats()])
def test_each_cli_classifies_every_reference_format(
    cli: str, fid: str, message: str, check: Any
) -> None:
    out, err, code = _transcript(cli, message)
    assert (
        message in out
        or json.dumps(message, ensure_ascii=False)[1:-1] in (out + err)
        or (message.split("'")[0] in err)
    )
    error = judge(_CLIS[cli], out, err, code)
    assert error.kind is ErrorKind.quota_exhausted, (cli, fid, error)
    assert not error.retryable
    check(error.retry_at)


@pytest.mark.parametrize("cli", sorted(_CLIS))
def test_each_cli_keeps_a_burst_429_a_retryable_rate_limit(cli: str) -> None:
    out, err, code = _transcript(cli, STUB if cli != "codex" else CODEX_STUB)
    error = judge(_CLIS[cli], out, err, code)
    assert error.kind is ErrorKind.rate_limited
    assert error.retryable
    assert error.retry_at is None


def test_qwen_retry_notice_with_a_google_quota_body() -> None:
    """built: qwen's `[RETRY] Attempt 1 failed with status 429. Retrying with backoff...`
    notice (its debug log, qwen.py `_RETRY_NOTICE`) followed by Google's quota body."""
    google = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "You exceeded "
              "your current quota, please check your plan and billing details.",
              "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                           "retryDelay": "120s"}]}}  # fmt: skip
    line = (
        f"[RETRY] Attempt 1 failed with status 429. Retrying with backoff... {json.dumps(google)}"
    )
    before = datetime.now(UTC)
    error = judge(qwen, "", line, None)
    assert error.kind is ErrorKind.quota_exhausted
    assert error.retry_at is not None
    assert before + timedelta(seconds=119) <= error.retry_at <= before + timedelta(seconds=125)
