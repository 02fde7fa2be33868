"""How long a backend asked us to wait: the one parser of a wait, for every path that reads one.

A wait comes from an HTTP header (`Retry-After`, `retry-after-ms`), a provider's JSON body
(`resets_in_seconds`, Google's `retryDelay: "36s"`), a CLI's text (`try again in 2 hours`) or
a serialised `ProviderError` (Temporal). Whatever the source, a wait agentport acts on is a
finite number of seconds, `0 <= s <= MAX_WAIT_S`; anything else (NaN, infinity, `1e400`, a
negative number, garbage, a wait longer than a usage window can be) is absent, never an
exception: the caller then falls back to its own back-off. Pure, no I/O.

- `wait_seconds(value)`: a number of seconds (a float, an int, or a plain decimal string) ->
  the checked wait, or None;
- `parse_wait(value, now=...)`: one `Retry-After` value per RFC 9110 section 10.2.3:
  `delay-seconds` (digits; a decimal fraction is tolerated) or an HTTP-date (a date already
  past is 0);
- `wait_from_headers(headers, now=...)`: `retry-after-ms` (OpenAI's and Anthropic's SDKs read
  it first), else `Retry-After`, case-insensitively.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_WAIT_S", "parse_wait", "wait_from_headers", "wait_seconds"]

MAX_WAIT_S = 31 * 86400.0
"""The longest wait believed (31 days, the longest usage window `core._quota` believes): a
longer one is a garbled value, not a plan to wait a month."""

# RFC 9110 delay-seconds is 1*DIGIT; servers also send "1.5". No sign, no exponent: "1e400"
# and "-5" are not a delay.
_DECIMAL = re.compile(r"\s*(\d{1,12}(?:\.\d{1,9})?)\s*", re.ASCII)


def wait_seconds(value: Any) -> float | None:
    """*value* as a wait in seconds: a finite number `0 <= value <= MAX_WAIT_S` (an int, a
    float, or a plain decimal string such as `"30"` or `"1.5"`), else None (NaN, infinity, a
    negative number, a bool, garbage, a longer wait)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        found = _DECIMAL.fullmatch(value)
        if found is None:
            return None
        value = float(found.group(1))
    if not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        return None
    if not math.isfinite(seconds) or not 0.0 <= seconds <= MAX_WAIT_S:
        return None
    return seconds


def parse_wait(value: str | None, *, now: float | None = None) -> float | None:
    """One `Retry-After` header value -> seconds to wait, or None when it is absent or not a
    wait (RFC 9110 section 10.2.3): `delay-seconds` (`"120"`; `"1.5"` tolerated), or an
    HTTP-date (`"Wed, 21 Oct 2015 07:28:00 GMT"`; one already past is 0). *now* is the epoch
    time the date is measured from (default: the current time)."""
    if value is None:
        return None
    seconds = wait_seconds(value)
    if seconds is not None or _DECIMAL.fullmatch(value):
        return seconds  # a number, believed or not: never read as a date
    import email.utils  # on first use: `import agentport` loads this module (ProviderError)

    try:
        when = email.utils.parsedate_to_datetime(value.strip())
        at = when.timestamp()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None
    if when.tzinfo is None:  # RFC 9110 HTTP-dates are GMT; a zone-less form is not one
        return None
    return wait_seconds(max(at - (time.time() if now is None else now), 0.0))


def wait_from_headers(
    headers: Mapping[str, str] | Any, *, now: float | None = None
) -> float | None:
    """The wait a response's *headers* ask for: `retry-after-ms` (milliseconds), else
    `Retry-After` (`parse_wait`); names case-insensitive; None when neither gives a
    wait. *headers* may be any mapping (httpx's, a plain dict); a value that is not a string
    is ignored."""
    try:
        lower = {str(k).lower(): v for k, v in headers.items()}
    except (AttributeError, TypeError):
        return None
    ms = lower.get("retry-after-ms")
    found = _DECIMAL.fullmatch(ms) if isinstance(ms, str) else None
    if found is not None and (seconds := wait_seconds(float(found.group(1)) / 1000.0)) is not None:
        return seconds
    value = lower.get("retry-after")
    return parse_wait(value, now=now) if isinstance(value, str) else None
