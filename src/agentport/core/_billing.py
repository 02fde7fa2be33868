"""Who pays for a call and how well its cost is known; a used-up balance in one table.

Every usage record and receipt says `billing_route` and `cost_state` (closed enums,
`core._cost`); `route_for` decides the route from the facts a backend gives (the catalog's
possible routes, whether a provider key was handed over, what the backend itself said).

A used-up balance (prepaid credits at zero, a spending cap reached, billing not set up, a
plan's monthly allowance spent) is `ErrorKind.quota_exhausted` on every backend and transport:
another backend of a failover chain can answer, a retry of this one cannot. Providers say it
with many statuses (400 `invalid_request_error`, 402, 403, 429), so the wording decides; the
table is read by `core._quota` (`parse_quota`, `as_quota`), which every classify path of every
backend goes through. Wording collected from the providers' public error bodies and the CLIs'
issue trackers; it drifts between versions, so each row matches loosely (case-insensitive).
Pure, no I/O.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from ._capabilities import Billing
from ._cost import BillingRoute

__all__ = ["BILLING_WORDS", "billing_said", "key_handed", "loopback_url", "route_for"]


def route_for(
    billing: Iterable[Billing], *, key: bool | None, said: BillingRoute | None = None
) -> BillingRoute:
    """The route of one call. *billing*: the catalog's possible routes of the backend, the
    usual one first; *key*: whether a provider key was handed to it (None: cannot tell);
    *said*: what the backend itself reported (claude's `apiKeySource`), which wins.

    No key handed is the login only for a CLI whose usual route is a subscription: a CLI
    that usually runs on a key may keep one in its own config file (`unknown`)."""
    if said is not None:
        return said
    routes = tuple(billing)
    if not routes:
        return BillingRoute.unknown
    if set(routes) <= {Billing.local, Billing.none}:
        return BillingRoute.local
    if len(set(routes)) == 1 and Billing.cloud not in routes:
        return BillingRoute(routes[0].value)
    if key and Billing.api_key in routes:
        return BillingRoute.api_key
    if key is False and routes[0] is Billing.subscription:
        return BillingRoute.subscription
    return BillingRoute.unknown


# a provider key a CLI reads from its environment (ANTHROPIC_API_KEY, OPENAI_API_KEY,
# GEMINI_API_KEY, ...) or a bearer token for a metered endpoint; an OAuth token of a login
# (CLAUDE_CODE_OAUTH_TOKEN) is not one
_KEY_NAME = re.compile(r"(?:^|_)API_KEY$|^ANTHROPIC_AUTH_TOKEN$")


def key_handed(env: Mapping[str, str]) -> bool:
    """Whether *env* (a child's environment) carries a non-empty provider key variable."""
    return any(value and _KEY_NAME.search(name) for name, value in env.items())


def loopback_url(url: str) -> bool:
    """Whether *url*'s host is this machine (`localhost`, 127.0.0.0/8, ::1)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


BILLING_WORDS: tuple[tuple[str, str], ...] = (
    # Anthropic API, HTTP 400 invalid_request_error: "Your credit balance is too low to access
    # the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."; Claude
    # Code's own line: "Credit balance is too low"
    ("anthropic", r"credit balance is too low"),
    # Anthropic API, a workspace's spend limit: "You have reached your specified API usage
    # limits. You will regain access on <date> at <time> UTC."
    ("anthropic", r"reached your specified (?:API )?usage limits?"),
    # OpenAI, HTTP 429 type/code insufficient_quota: "You exceeded your current quota, please
    # check your plan and billing details." (Google's daily quotas reuse the sentence: a
    # per-minute one is still a rate limit, `core._quota` keeps it so)
    ("openai", r"\binsufficient_quota\b|exceeded your current quota"),
    # OpenAI, HTTP 429 billing_not_active: "Your account is not active, please check your
    # billing details on our website."; billing_hard_limit_reached
    ("openai", r"\bbilling_not_active\b|account is not active, please check your billing"),
    ("openai", r"billing[_ ]hard[_ ]limit"),
    # codex: "ERROR: Quota exceeded. Check your plan and billing details."
    ("codex", r"quota exceeded\. check your plan and billing"),
    # Google Gemini API, HTTP 400 FAILED_PRECONDITION: "User location is not supported for the
    # API use without a billing account linked.", "Gemini API free tier is not available in
    # your country. Please enable billing on your project in Google AI Studio."
    (
        "google",
        r"without a billing account linked|please enable billing|billing (?:is )?not "
        r"enabled|requires billing to be enabled",
    ),
    # OpenRouter, HTTP 402: "Insufficient credits. Add more using
    # https://openrouter.ai/settings/credits", "This request requires more credits, or fewer
    # max_tokens. ... can only afford N", "More credits are required to run this request"
    ("openrouter", r"insufficient credits|requires more credits|more credits are required"),
    # DeepSeek, HTTP 402: "Insufficient Balance"
    ("deepseek", r"insufficient balance"),
    # xAI, HTTP 429/403: "Your team ... has either used all available credits or reached its
    # monthly spending limit."; grok: "You have run out of credits or need a Grok subscription."
    ("xai", r"used all available credits|monthly spending limit|run out of credits"),
    # GitHub Copilot, HTTP 402 quota_exceeded: "You have no quota"; "You have exceeded your
    # premium request allowance."
    ("copilot", r"you have no quota|\bquota_exceeded\b|premium request allowance"),
)
"""(who says it, pattern) rows; a match anywhere in the failure's text is a used-up balance."""

_BILLING = re.compile("|".join(f"(?:{pattern})" for _, pattern in BILLING_WORDS), re.I)


def billing_said(text: str) -> str | None:
    """The fragment of *text* that says a billing balance is used up (`BILLING_WORDS`), or
    None."""
    found = _BILLING.search(text)
    return found.group(0) if found else None
