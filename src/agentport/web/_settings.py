"""`WebSettings`: the `[web]` configuration table (search engine and fetcher limits).

Loaded by `agentport.config` like the `[llm]` table (arguments, `AGENTPORT_WEB_*`
environment, the user's config file). A project file (agentport.toml / pyproject.toml) may
set `[web]` only when the user trusts the folder (`agentport._trust`): a search engine URL
receives every query and `allow_private` opens the local network to fetched URLs.
See docs/web.md."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["DEFAULT_USER_AGENT", "WebSettings", "narrow_web", "without_secrets", "without_userinfo"]

DEFAULT_USER_AGENT = "agentport-research/1.0 (+https://github.com/agentport/agentport)"


class WebSettings(BaseModel):
    """The `[web]` table.

    Attributes:
        engine: `searxng` (a SearxNG instance's JSON API at `searxng_url`), `none` (no
            search engine: web research needs a backend with web tools or `--corpus`) or
            `auto` (SearxNG when `searxng_url` is set, else none).
        searxng_url: base URL of a SearxNG instance whose settings enable `json` in
            `search.formats`, e.g. `http://127.0.0.1:8888`.
        max_results: search results asked for per query (1..20).
        search_timeout_s: deadline of one search request, seconds.
        timeout_s: deadline of one page fetch, redirects and body included, seconds.
        max_bytes: largest page body read, bytes; a larger page is refused.
        max_redirects: redirect hops followed (each hop is checked again).
        per_host_concurrency: fetches in flight per host.
        per_host_delay_s: minimum delay between two requests to the same host, seconds.
        respect_robots: honour robots.txt (RFC 9309) for `user_agent`.
        allow_private: fetch private, loopback, link-local and other non-public addresses
            (off: such URLs are refused; tests and intranet research turn it on).
        max_page_chars: characters of extracted page text handed to the model.
        user_agent: the User-Agent header and robots.txt product token.
        proxy: an `http://` or `https://` proxy every fetch goes through (unset: direct;
            `HTTP_PROXY` and friends are never read). The target host is still resolved
            and checked here; the proxy resolves it again and connects from its network.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: Literal["auto", "searxng", "none"] = "auto"
    searxng_url: str | None = None
    max_results: int = Field(default=8, ge=1, le=20)
    search_timeout_s: float = Field(default=20.0, gt=0)
    timeout_s: float = Field(default=20.0, gt=0)
    max_bytes: int = Field(default=3_000_000, ge=1024)
    max_redirects: int = Field(default=5, ge=0, le=20)
    per_host_concurrency: int = Field(default=2, ge=1)
    per_host_delay_s: float = Field(default=0.5, ge=0)
    respect_robots: bool = True
    allow_private: bool = False
    max_page_chars: int = Field(default=12_000, ge=500)
    user_agent: str = DEFAULT_USER_AGENT
    proxy: str | None = None

    @field_validator("searxng_url", "proxy")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")


# Sent by a client, these may only lower the worker's own value ...
_LOWER = ("max_results", "search_timeout_s", "timeout_s", "max_bytes", "max_redirects",
          "per_host_concurrency", "max_page_chars")  # fmt: skip
# ... and these only raise it (a longer delay between requests to one host).
_HIGHER = ("per_host_delay_s",)


def narrow_web(own: WebSettings, sent: Mapping[str, Any]) -> WebSettings:
    """The `[web]` settings a worker uses for a call: its *own*, narrowed by what a workflow
    input *sent* (any client of the namespace can write it). Where to search and with which
    URL, the proxy, the User-Agent and `allow_private` stay the worker's; limits may only
    get stricter (`respect_robots` turned on, `allow_private` turned off, caps lowered).
    Values that do not validate are ignored. Pure."""
    used = own.model_dump()
    update: dict[str, Any] = {}
    for key in _LOWER + _HIGHER:
        value = sent.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value):  # inf and nan: no limit, and int() cannot take them
            continue
        mine = getattr(own, key)
        if (key in _LOWER and value < mine) or (key in _HIGHER and value > mine):
            update[key] = type(mine)(value)
    if sent.get("respect_robots") is True:
        update["respect_robots"] = True
    if sent.get("allow_private") is False:
        update["allow_private"] = False
    for key, value in update.items():  # one value that does not validate drops only itself
        try:
            WebSettings.model_validate({**used, key: value})
        except ValueError:
            continue
        used[key] = value
    return WebSettings.model_validate(used)


def without_secrets(settings: WebSettings) -> dict[str, Any]:
    """*settings* as data for a workflow input (stored in Temporal's history): no proxy and
    no credentials in the engine URL."""
    data = settings.model_dump(mode="json", exclude={"proxy"})
    if isinstance(data.get("searxng_url"), str):
        data["searxng_url"] = without_userinfo(data["searxng_url"])
    return data


_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


def without_userinfo(text: str) -> str:
    """*text* (a URL, or a message holding URLs) without `user:password@` in any URL."""
    return _USERINFO.sub("", text)
