"""Exhausted usage windows: when does the limit reset? Pure parsing of the CLIs' own words.

An exhausted window (a 5-hour session, a weekly or daily quota) is `ErrorKind.quota_exhausted`,
distinct from a short burst `rate_limited`: retrying before the reset only burns attempts.
`parse_quota(text, now=...)` reads the forms users reported in 2025-2026 (e.g.
anthropics/claude-code#15064, #52575; openai/codex#3124, #16847, #28089;
google-gemini/gemini-cli#10925):

- Claude Code: `You've hit your session limit · resets 4:20am (Europe/Warsaw)`, `Your limit
  will reset at 9am (America/Chicago).`, `Claude AI usage limit reached|1766502000` (epoch);
- Codex: `... or try again in 2 days 17 hours 14 minutes.`, `Try again at 2:57 PM.` (the
  machine's local time), `Try again at Jul 10th, 2026 2:57 PM.`, localised `try again at 10 de
  jul. de 2026, 11:52.`, `Quota exceeded. Check your plan and billing details.` (no reset);
- Gemini: `You exceeded your current quota ...` / `... per day ...` with `RESOURCE_EXHAUSTED`;
  the CLI adds `Suggested retry after 11820s.` and `retryDelayMs: 11820000` from a `RetryInfo`.

`quota_from_body(body, headers, now=...)` reads the providers' JSON bodies: OpenAI/Codex
`usage_limit_reached` (`resets_at` epoch, `resets_in_seconds`, `X-Codex-*-Reset-*` headers),
Google `RESOURCE_EXHAUSTED` with a `google.rpc.RetryInfo` `retryDelay`. Anthropic's
`rate_limit_error` is a plain rate limit (None here).

A used-up billing balance (prepaid credits, a spending cap, billing not set up: the words of
`core._billing.BILLING_WORDS`, or HTTP 402) is an exhausted window too, `window="billing"`,
with no reset unless the message states one, whatever status the provider used (Anthropic
answers it with a 400 `invalid_request_error`).

Never a guess: a reset the message does not state stays None; a reset in the past or more
than `MAX_WINDOW` ahead is not believed (None, with the raw text kept by the caller).
`as_quota(error, now=...)` turns a `rate_limited` (or unclassified `process_failed` /
`bad_output`) `ProviderError` whose text says so into `quota_exhausted`; unknown wording
stays `rate_limited`. No I/O (time zones come from the standard `zoneinfo` database).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ._billing import billing_said
from ._errors import ErrorKind, ProviderError
from ._headroom import headroom_from_headers
from ._wait import MAX_WAIT_S, wait_seconds

__all__ = [
    "CLOCK_TOLERANCE",
    "MAX_WINDOW",
    "QuotaWindow",
    "as_quota",
    "parse_quota",
    "quota_from_body",
]

MAX_WINDOW = timedelta(seconds=MAX_WAIT_S)
"""The longest window believed (31 days, `core._wait.MAX_WAIT_S`): a reset further ahead (or
in the past) is treated as unknown."""


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """An exhausted usage window.

    Attributes:
        retry_at: when the window resets (aware, UTC), or None when the message does not say.
        window: which window, when the message says: "session" (Claude's 5-hour window),
            "weekly", "daily", "primary"/"secondary" (Codex headers), else None.
        said: the fragment of the message the reset was read from ("" when none).
    """

    retry_at: datetime | None
    window: str | None = None
    said: str = ""


_EXHAUSTED = re.compile(
    r"usage limit|session limit|weekly limit|hit your (?:\w+ )?limit"
    r"|quota exceeded|exceeded your (?:current )?quota|usage_limit_reached|insufficient_quota"
    r"|per day|daily (?:limit|quota)|limit will reset",
    re.I,
)
_SHORT = re.compile(r"per minute|per second|requests per min|\brpm\b|\btpm\b", re.I)
_WINDOW = (
    (re.compile(r"weekly|per week|week", re.I), "weekly"),
    (re.compile(r"per day|daily|\bday\b", re.I), "daily"),
    (re.compile(r"session limit|5.hour", re.I), "session"),
)
_EPOCH = re.compile(r"limit reached\|(\d{9,11})\b", re.I)
_UNIT_S = {"d": 86400, "h": 3600, "m": 60, "s": 1, "w": 604800}
_PART = re.compile(
    r"(\d+(?:\.\d+)?)\s*(weeks?|w|days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b",
    re.I,
)
_RELATIVE = re.compile(
    r"(?:try again|retry|resets?|renews?|available again)\s+(?:in|after)\s+"
    r"((?:\d+(?:\.\d+)?\s*[a-z]+\b[\s,]*(?:and\s+)?)+)",
    re.I,
)
_DELAY_MS = re.compile(r"retryDelayMs[\"']?\s*[:=]\s*(\d{1,12})\b")
_MONTHS = {
    # English, Spanish, Portuguese, French, German, Italian abbreviations (first 3-4 letters)
    "jan": 1, "ene": 1, "janv": 1, "gen": 1, "jän": 1,
    "feb": 2, "fev": 2, "fév": 2, "févr": 2,
    "mar": 3, "mär": 3, "mars": 3,
    "apr": 4, "abr": 4, "avr": 4,
    "may": 5, "mai": 5, "mag": 5,
    "jun": 6, "juin": 6, "giu": 6,
    "jul": 7, "juil": 7, "lug": 7,
    "aug": 8, "ago": 8, "août": 8, "aoû": 8,
    "sep": 9, "sept": 9, "set": 9,
    "oct": 10, "out": 10, "okt": 10, "ott": 10,
    "nov": 11,
    "dec": 12, "dic": 12, "dez": 12, "déc": 12,
}  # fmt: skip
_AT = r"(?:resets?|reset at|will reset at|try again at|available at|until)\s+(?:at\s+|on\s+)?"
_CLOCK = r"(\d{1,2})(?:[:.](\d{2}))?\s*([ap])?\.?\s*(?:m\.?)?(?![\w:])"
_TZ = r"(?:\s*\(?\s*([A-Za-z]+(?:/[A-Za-z_+\-]+)+|UTC|GMT)\s*\)?)?"
# "Jul 10th, 2026 2:57 PM" (Codex, English)
_EN_DATE = re.compile(
    _AT + r"([A-Za-zéûä]{3,5})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}),?\s+" + _CLOCK + _TZ,
    re.I,
)
# "10 de jul. de 2026, 11:52" / "10 juil. 2026 à 11:52" / "10. Juli 2026, 11:52"
_INTL_DATE = re.compile(
    _AT + r"(\d{1,2})\.?\s+(?:de\s+)?([A-Za-zéûä]{3,5})[a-zéûä]*\.?\s+(?:de\s+)?(\d{4}),?\s+"
    r"(?:à\s+|um\s+|alle\s+)?" + _CLOCK + _TZ,
    re.I,
)
_TIME = re.compile(_AT + _CLOCK + _TZ, re.I)


def _tz(name: str | None, local_tz: tzinfo | None) -> tzinfo | None:
    if not name:
        return local_tz
    if name.upper() in ("UTC", "GMT"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _hour(hour: str, minute: str | None, ampm: str | None) -> tuple[int, int] | None:
    h, m = int(hour), int(minute or 0)
    if ampm:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if ampm.lower() == "p" else 0)
    if h > 23 or m > 59:
        return None
    return h, m


def _believable(at: datetime, now: datetime) -> datetime | None:
    at = at.astimezone(UTC)
    return at if now - timedelta(seconds=5) <= at <= now + MAX_WINDOW else None


def _window(text: str) -> str | None:
    for pattern, name in _WINDOW:
        if pattern.search(text):
            return name
    return None


def _relative_s(text: str) -> float | None:
    total = 0.0
    for amount, unit in _PART.findall(text):
        key = unit.lower()
        key = "m" if key.startswith("min") else key[0]
        total += float(amount) * _UNIT_S[key]
    return wait_seconds(total) if total > 0 else None


def _after(now: datetime, seconds: float | None) -> datetime | None:
    """*now* plus a wait checked by `wait_seconds` (finite, 0 to 31 days), else None."""
    checked = wait_seconds(seconds)
    return now + timedelta(seconds=checked) if checked is not None else None


def _epoch(value: Any) -> datetime | None:
    """An epoch-seconds value as an aware datetime; None for NaN, infinity, out of range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _believed(at: datetime | None, now: datetime) -> datetime | None:
    return _believable(at, now) if at is not None else None


CLOCK_TOLERANCE = timedelta(minutes=5)
"""How long after a stated clock minute began it still means "now", not tomorrow. The CLIs
print minute precision (`try again at 7:58 PM` for 19:58:40) and agentport reads the message
when the process has ended, seconds later; a few minutes cover both and a clock a little
off. Reading a reset that has just passed as now costs one early try (which reads the new
message); reading it as tomorrow would cool the backend down for a day."""


def _minute_reset(stated: list[datetime], now: datetime) -> datetime | None:
    """The reset a stated clock minute means: its start when ahead; the minute's end while it
    runs (minute precision: the reset is in it somewhere); *now* up to `CLOCK_TOLERANCE`
    after it began; else None (past). *stated*: the minute's start, each reading of an
    ambiguous wall time (the repeated hour of a DST change), tried earliest first."""
    for at in sorted({s.astimezone(UTC) for s in stated}):
        if now < at:
            return at
        if now < at + timedelta(minutes=1):
            return at + timedelta(minutes=1)
        if now - at <= CLOCK_TOLERANCE:
            return now
    return None


def _clock_reset(hm: tuple[int, int], tz: tzinfo, now: datetime) -> datetime | None:
    """A clock time with no date: the first reading of it, yesterday's (just past midnight),
    today's or tomorrow's, that `_minute_reset` does not call past. Wall time in *tz*, both
    readings of a repeated hour; a day is a calendar day (23 or 25 hours across DST)."""
    today = now.astimezone(tz).date()
    stated = [
        datetime(day.year, day.month, day.day, *hm, tzinfo=tz, fold=fold)
        for day in (today - timedelta(days=1), today, today + timedelta(days=1))
        for fold in (0, 1)
    ]
    return _minute_reset(stated, now)


def _reset_at(
    text: str, now: datetime, local_tz: tzinfo | None
) -> tuple[datetime | None, str] | None:
    """(retry_at, fragment) when the text states a reset, else None."""
    if found := _EPOCH.search(text):
        return _believed(_epoch(int(found.group(1))), now), found.group(0)
    if found := _DELAY_MS.search(text):  # Gemini CLI's error object: `retryDelayMs: 11820000`
        return _believed(_after(now, int(found.group(1)) / 1000), now), found.group(0)
    if found := _RELATIVE.search(text):
        seconds = _relative_s(found.group(1))
        if seconds is not None:
            return _believed(_after(now, seconds), now), found.group(0).strip()
    for pattern, day_first in ((_EN_DATE, False), (_INTL_DATE, True)):
        if found := pattern.search(text):
            first, second, year, hour, minute, ampm, zone = found.groups()
            month_name, day = (second, first) if day_first else (first, second)
            month = _MONTHS.get(month_name.lower()[:4]) or _MONTHS.get(month_name.lower()[:3])
            hm = _hour(hour, minute, ampm)
            tz = _tz(zone, local_tz)
            if month is None or hm is None or tz is None:
                return None, found.group(0)
            try:
                stated = [
                    datetime(int(year), month, int(day), *hm, tzinfo=tz, fold=fold)
                    for fold in (0, 1)
                ]
            except ValueError:
                return None, found.group(0)
            return _believed(_minute_reset(stated, now), now), found.group(0).strip()
    if found := _TIME.search(text):
        hour, minute, ampm, zone = found.groups()
        if minute is None and ampm is None:
            return None  # "reset at 9" with neither minutes nor am/pm: not a clock time
        hm = _hour(hour, minute, ampm)
        tz = _tz(zone, local_tz)
        if hm is None or tz is None:
            return None, found.group(0)
        return _believed(_clock_reset(hm, tz, now), now), found.group(0).strip()
    return None


def _system_zone() -> tzinfo | None:
    """The machine's own time zone with its DST rules (`TZ`, else the zone `/etc/localtime`
    links to), or None: a clock time printed in local time ("try again at 2:57 PM") is read
    in it, so tomorrow's 2:57 PM across a DST change is still 2:57 PM there. Read per call
    (cheap; `ZoneInfo` caches), so a changed `TZ` is seen."""
    name = os.environ.get("TZ", "").lstrip(":")
    if not name:
        target = os.path.realpath("/etc/localtime")
        name = target.split("/zoneinfo/", 1)[1] if "/zoneinfo/" in target else ""
    try:
        return ZoneInfo(name) if name else None
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if now.tzinfo is None:
        raise ValueError("now must be an aware datetime")
    return now.astimezone(UTC)


def parse_quota(
    text: str, *, now: datetime | None = None, local_tz: tzinfo | None = None
) -> QuotaWindow | None:
    """The exhausted window *text* reports, or None when it is not one (a plain rate limit,
    unknown wording, a per-minute quota).

    *now* (aware; default the current time) anchors relative and clock-only resets;
    *local_tz* is the zone of a clock time printed without one (Codex prints the machine's
    local time; default: the system's zone with its DST rules, `TZ` or `/etc/localtime`).
    `retry_at` is None when the message states no reset, or one in the past or more than
    `MAX_WINDOW` ahead.
    """
    current = _now(now)
    local = local_tz if local_tz is not None else _system_zone() or current.astimezone().tzinfo
    billing = billing_said(text)
    if not (billing or _EXHAUSTED.search(text)) or _SHORT.search(text):
        return None
    found = _reset_at(text, current, local)
    retry_at, said = found if found is not None else (None, billing or "")
    # a balance has no reset; a stated reset means a quota window that reuses the words
    window = _window(text) or ("billing" if billing and retry_at is None else None)
    return QuotaWindow(retry_at, window, said)


def _seconds(value: Any) -> float | None:
    """A duration of a provider's body as a checked wait (`wait_seconds`): a number, `"36s"`,
    or a protobuf Duration object `{"seconds": 36, "nanos": 0}`."""
    if isinstance(value, str):
        return wait_seconds(value.strip().removesuffix("s"))
    if isinstance(value, Mapping):  # protobuf Duration as JSON object
        secs = _seconds(value.get("seconds", 0)) or 0.0
        nanos = wait_seconds(value.get("nanos", 0) or 0)
        return wait_seconds(secs + (nanos or 0.0) / 1e9)
    return wait_seconds(value)


def _walk(node: Any, depth: int = 0) -> list[Mapping[str, Any]]:
    """Every mapping inside *node*, JSON strings inside strings included (Gemini nests the
    error body as a string in `message`)."""
    if depth > 8:
        return []
    if isinstance(node, str):
        start = node.find("{")
        if start < 0:
            return []
        try:  # trailing text (a stack trace after the JSON) is ignored
            value, _ = json.JSONDecoder().raw_decode(node[start:])
        except ValueError:
            return []
        return _walk(value, depth + 1)
    if isinstance(node, Mapping):
        out: list[Mapping[str, Any]] = [node]
        for value in node.values():
            out += _walk(value, depth + 1)
        return out
    if isinstance(node, list):
        return [m for item in node[:50] for m in _walk(item, depth + 1)]
    return []


def quota_from_body(
    body: str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
    *,
    now: datetime | None = None,
) -> QuotaWindow | None:
    """The exhausted window a provider's 429 body (and headers) reports, or None.

    OpenAI/Codex: `{"type": "usage_limit_reached", "resets_at": <epoch>,
    "resets_in_seconds": n}` and `X-Codex-Primary-Reset-At` / `-Reset-After-Seconds`
    (secondary = the weekly window). Google: `status: RESOURCE_EXHAUSTED` with quota wording
    and a `google.rpc.RetryInfo` `retryDelay` ("36s"). The message text is tried last
    (`parse_quota`)."""
    current = _now(now)
    headers = headers or {}
    nodes = _walk(body) if body is not None else []
    for node in nodes:
        kind = str(node.get("type") or node.get("code") or "")
        if kind not in ("usage_limit_reached", "insufficient_quota"):
            continue
        window = _window(str(node.get("plan_type", ""))) or "primary"
        if (at := _epoch(node.get("resets_at"))) is not None:
            return QuotaWindow(_believable(at, current), window, f"resets_at={node['resets_at']}")
        seconds = _seconds(node.get("resets_in_seconds"))
        if seconds is not None:
            at = current + timedelta(seconds=seconds)
            return QuotaWindow(_believable(at, current), window, f"resets_in_seconds={seconds:g}")
        return _from_headers(headers, current) or QuotaWindow(None, None, kind)
    if found := _from_headers(headers, current):
        return found
    google = [n for n in nodes if str(n.get("status", "")) == "RESOURCE_EXHAUSTED"]
    if google:
        text = " ".join(str(n.get("message", "")) for n in google)
        delay = next(
            (
                _seconds(n.get("retryDelay"))
                for n in nodes
                if str(n.get("@type", "")).endswith("google.rpc.RetryInfo")
            ),
            None,
        )
        quota = parse_quota(text, now=current)
        if quota is None:
            return None  # a burst RESOURCE_EXHAUSTED: a plain rate limit
        if quota.retry_at is None and delay is not None:
            believed = _believed(_after(current, delay), current)
            return QuotaWindow(believed, quota.window, f"retryDelay={delay:g}s")
        return quota
    plain = json.dumps(body) if isinstance(body, Mapping) else body
    return parse_quota(plain, now=current) if plain else None


def _from_headers(headers: Mapping[str, str], now: datetime) -> QuotaWindow | None:
    """The Codex backend's window reset (`x-codex-{primary,secondary}-reset-*`), the first
    window that gives one."""
    for found in headroom_from_headers(headers, now=now):
        if found.window in ("primary", "secondary") and found.resets_at is not None:
            window = "weekly" if found.window == "secondary" else "primary"
            return QuotaWindow(
                _believable(found.resets_at, now), window, f"X-Codex-{found.window}-Reset"
            )
    return None


_REREAD = frozenset({ErrorKind.rate_limited, ErrorKind.process_failed, ErrorKind.bad_output})
# a used-up balance arrives as a 400 (Anthropic's invalid_request_error, Google's
# FAILED_PRECONDITION) or a 403 (xAI): re-read those only for the billing words
_BILLING_REREAD = frozenset({ErrorKind.invalid_request, ErrorKind.auth_required})


def _text_of(body: str | Mapping[str, Any] | None) -> str:
    if body is None:
        return ""
    return body if isinstance(body, str) else json.dumps(body, default=str)


def as_quota(
    error: ProviderError,
    *,
    body: str | Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    now: datetime | None = None,
    local_tz: tzinfo | None = None,
) -> ProviderError:
    """*error* as `quota_exhausted` when it is a `rate_limited` failure (or a
    `process_failed` / `bad_output` one: a CLI whose own table does not know the wording) whose
    body, headers or text report an exhausted window, or any failure that reports a used-up
    billing balance (`core._billing.BILLING_WORDS`, an HTTP 402; an `invalid_request` or
    `auth_required` one included: providers answer it with 400 and 403; `window="billing"`);
    otherwise *error* unchanged (unknown wording stays a rate limit, its raw text kept).
    `retry_at` is set when the window's reset is known and believable; then `retry_after` is
    the seconds until it."""
    billing = error.status == 402 or bool(billing_said(f"{error.message}\n{_text_of(body)}"))
    if error.kind not in _REREAD and not (billing and error.kind in _BILLING_REREAD):
        return error
    current = _now(now)
    quota = quota_from_body(body, headers, now=current) if (body or headers) else None
    rate = error.kind is ErrorKind.rate_limited
    if quota is None and rate and "{" in error.stderr_tail:  # a JSON body on stderr
        quota = quota_from_body(error.stderr_tail[error.stderr_tail.find("{") :], now=current)
    if quota is None:
        # a rate limit's stderr may say more; a CLI failure is read from its own message only
        # (a stderr banner must not turn a crash into a quota)
        said = (error.message, error.stderr_tail)
        text = "\n".join(t for t in said[: 2 if error.kind is ErrorKind.rate_limited else 1] if t)
        quota = parse_quota(text, now=current, local_tz=local_tz)
    if quota is None and error.status == 402:  # Payment Required: a balance, whatever it says
        quota = QuotaWindow(None, "billing", "HTTP 402")
    if quota is None:
        return error
    after = (quota.retry_at - current).total_seconds() if quota.retry_at else None
    return error.replace(
        kind=ErrorKind.quota_exhausted,
        retryable=False,
        retry_at=quota.retry_at,
        window=quota.window,
        retry_after=max(after, 0.0) if after is not None else None,
        details={**error.details, "quota_said": quota.said} if quota.said else error.details,
    )
