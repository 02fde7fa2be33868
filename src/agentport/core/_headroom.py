"""Quota headroom: how much of each usage window is left, read from a provider's response
headers. Pure parsing, no I/O.

`headroom_from_headers(headers, now=...)` reads the three header families that report it on
every response, success or not:

- OpenAI and OpenAI-compatible servers: `x-ratelimit-{limit,remaining,reset}-{requests,
  tokens}`, the reset a duration such as `6m0s`, `1s` or `20ms` (OpenAI's rate-limit docs);
- Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
  remaining,reset}`, the reset an RFC 3339 time (Anthropic's rate-limit docs);
- the Codex backend: `x-codex-{primary,secondary}-used-percent`, `-window-minutes`,
  `-reset-after-seconds` / `-reset-at` (the 5-hour and weekly windows of a ChatGPT plan, the
  headers codex reads its rate-limit snapshot from).

A window the headers do not describe is absent; a malformed value leaves that field None.
Nothing is guessed: `remaining_share` is None unless both numbers (or a used percent) are
given.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from returns.result import Failure, Result, Success

from ._errors import ProviderError
from ._response import CompletionResponse
from ._wait import wait_seconds

__all__ = ["Headroom", "headroom_from_headers", "with_headroom"]


@dataclass(frozen=True, slots=True)
class Headroom:
    """One usage window as a response's headers describe it.

    Attributes:
        window: `requests`, `tokens`, `input-tokens`, `output-tokens` (per-minute limits of an
            API key), or `primary` / `secondary` (Codex: the 5-hour and weekly windows).
        remaining_share: the part left, 0.0 to 1.0, or None when the headers do not say.
        remaining / limit: the counts, when given.
        resets_at: when the window resets (aware, UTC), or None.
        window_minutes: the window's length, when given (Codex).
    """

    window: str
    remaining_share: float | None
    remaining: int | None = None
    limit: int | None = None
    resets_at: datetime | None = None
    window_minutes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (`resets_at` as ISO 8601)."""
        data = asdict(self)
        data["resets_at"] = self.resets_at.isoformat() if self.resets_at else None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Headroom:
        """`as_dict`'s inverse; raises `ValueError` / `KeyError` on a malformed entry."""
        share = data.get("remaining_share")
        return cls(
            window=str(data["window"]),
            remaining_share=float(share) if share is not None else None,
            remaining=_int(_text(data.get("remaining"))),
            limit=_int(_text(data.get("limit"))),
            resets_at=_time(data.get("resets_at")),
            window_minutes=_int(_text(data.get("window_minutes"))),
        )


def with_headroom(
    result: Result[CompletionResponse, ProviderError], windows: tuple[Headroom, ...]
) -> Result[CompletionResponse, ProviderError]:
    """*result* carrying *windows*: `raw.extra["headroom"]` of a response, `details["headroom"]`
    of an error (lists of `Headroom.as_dict()`), where the policy layer records them."""
    listed = [w.as_dict() for w in windows]
    if isinstance(result, Success):
        response = result.unwrap()
        raw = response.raw.model_copy(update={"extra": {**response.raw.extra, "headroom": listed}})
        return Success(response.model_copy(update={"raw": raw}))
    error = result.failure()
    return Failure(error.replace(details={**error.details, "headroom": listed}))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def _int(value: str | None) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except (ValueError, OverflowError):  # garbage, NaN, infinity
        return None


def _duration_s(value: str | None) -> float | None:
    """`6m0s`, `1.5s`, `20ms`, `1h2m3s` -> seconds (OpenAI's reset form); a bare number is
    seconds; checked by `wait_seconds` (NaN, infinity, negative or huge: None)."""
    if value is None:
        return None
    text = value.strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return wait_seconds(text)
    return wait_seconds(sum(float(n) * _UNIT_S[u] for n, u in parts))


def _time(value: str | None) -> datetime | None:
    if not value:
        return None
    text = value.strip()
    try:
        if text.isdigit():
            return datetime.fromtimestamp(int(text), UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else None


def _used_share(used: str | None) -> float | None:
    """The share left of a window `used` percent full; None for garbage, NaN or infinity."""
    try:
        percent = float(used) if used is not None else math.nan
    except ValueError:
        return None
    return min(max(1.0 - percent / 100.0, 0.0), 1.0) if math.isfinite(percent) else None


def _share(remaining: int | None, limit: int | None) -> float | None:
    if remaining is None or limit is None or limit <= 0:
        return None
    return min(max(remaining / limit, 0.0), 1.0)


def headroom_from_headers(
    headers: Mapping[str, str], *, now: datetime | None = None
) -> tuple[Headroom, ...]:
    """Every window *headers* describe (module docstring); empty when none. *headers* may be
    any mapping; names are matched case-insensitively."""
    now = now or datetime.now(UTC)
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    found: list[Headroom] = []
    for window in ("requests", "tokens"):
        limit = _int(lower.get(f"x-ratelimit-limit-{window}"))
        remaining = _int(lower.get(f"x-ratelimit-remaining-{window}"))
        if limit is None and remaining is None:
            continue
        after = _duration_s(lower.get(f"x-ratelimit-reset-{window}"))
        resets = now + timedelta(seconds=after) if after is not None else None
        found.append(Headroom(window, _share(remaining, limit), remaining, limit, resets))
    for window in ("requests", "tokens", "input-tokens", "output-tokens"):
        prefix = f"anthropic-ratelimit-{window}"
        limit = _int(lower.get(f"{prefix}-limit"))
        remaining = _int(lower.get(f"{prefix}-remaining"))
        if limit is None and remaining is None:
            continue
        resets = _time(lower.get(f"{prefix}-reset"))
        found.append(Headroom(window, _share(remaining, limit), remaining, limit, resets))
    for window in ("primary", "secondary"):
        prefix = f"x-codex-{window}"
        used = lower.get(f"{prefix}-used-percent")
        after = _duration_s(lower.get(f"{prefix}-reset-after-seconds"))
        resets = _time(lower.get(f"{prefix}-reset-at"))
        if used is None and after is None and resets is None:
            continue
        share = _used_share(used)
        if resets is None and after is not None:
            resets = now + timedelta(seconds=after)
        minutes = _int(lower.get(f"{prefix}-window-minutes"))
        found.append(Headroom(window, share, resets_at=resets, window_minutes=minutes))
    return tuple(found)
