"""Search providers: the `SearchProvider` protocol and a SearxNG JSON API client.

SearxNG (https://docs.searxng.org) is a self-hostable metasearch engine; its JSON API is
`GET <instance>/search?q=...&format=json` and answers `{"query": ..., "results": [{"url",
"title", "content", "engine", ...}]}`. The instance must list `json` in
`search.formats` of its settings.yml, otherwise it answers 403."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import anyio
import httpx

from ..core import bounded
from ..transport import tls_context
from ._settings import WebSettings, without_userinfo
from ._types import SearchError, SearchHit

__all__ = ["MAX_ANSWER_BYTES", "SearchProvider", "SearxngProvider", "provider_from_settings"]

MAX_ANSWER_BYTES = 4 << 20  # a SearxNG page of 20 results is a few tens of KB
_MAX_DEPTH = 32  # results nest 3-4 levels


class _TooBig(Exception):
    pass


async def _read_capped(response: httpx.Response) -> bytes:
    """The body, decoded by httpx as it arrives, counted as it arrives: over
    `MAX_ANSWER_BYTES` stops reading (`_TooBig`), whatever the headers claim."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise _TooBig
        parts.append(chunk)
    return b"".join(parts)


@runtime_checkable
class SearchProvider(Protocol):
    """A web search engine. `name` names it in messages; `search` returns at most *limit*
    hits, best first, and raises `SearchError` (one line) when the engine fails."""

    name: str

    async def search(self, query: str, limit: int) -> list[SearchHit]: ...


class SearxngProvider:
    """A SearxNG instance at *base_url* (e.g. `http://127.0.0.1:8888`)."""

    name = "searxng"

    def __init__(self, base_url: str, *, timeout_s: float = 20.0, user_agent: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.user_agent = user_agent
        # messages (and Temporal history) name the instance without its credentials
        self.shown = without_userinfo(self.base_url) + "/search"

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        url, shown = self.base_url + "/search", self.shown
        headers = {"Accept": "application/json"} | (
            {"User-Agent": self.user_agent} if self.user_agent else {}
        )
        try:
            with anyio.fail_after(self.timeout_s):  # httpx's timeout is per read, not total
                async with (
                    httpx.AsyncClient(
                        timeout=self.timeout_s, trust_env=False, verify=tls_context()
                    ) as client,
                    client.stream(
                        "GET", url, params={"q": query, "format": "json"}, headers=headers
                    ) as response,
                ):
                    status = response.status_code
                    body = await _read_capped(response) if status == 200 else b""
        except TimeoutError:
            raise SearchError(
                self.name, f"{shown}: no answer within {self.timeout_s:g} s"
            ) from None
        except _TooBig:
            raise SearchError(
                self.name, f"{shown}: the answer is over {MAX_ANSWER_BYTES} bytes"
            ) from None
        except httpx.HTTPError as exc:
            why = without_userinfo(str(exc)) or type(exc).__name__
            raise SearchError(self.name, f"{shown}: {why}") from None
        if status == 403:
            raise SearchError(
                self.name,
                f"{shown}: HTTP 403 (enable json in search.formats of the instance's settings.yml)",
            )
        if status != 200:
            raise SearchError(self.name, f"{shown}: HTTP {status}")
        try:
            data: Any = bounded.loads(body.decode("utf-8", "replace"), max_depth=_MAX_DEPTH)
        except ValueError:
            raise SearchError(self.name, f"{shown}: the answer is not JSON (or too deep)") from None
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise SearchError(self.name, f"{shown}: the answer has no results list")
        hits: list[SearchHit] = []
        seen: set[str] = set()
        for r in results:
            if not isinstance(r, dict):
                continue
            link = r.get("url")
            if not isinstance(link, str) or not link.startswith(("http://", "https://")):
                continue
            if link in seen:
                continue
            seen.add(link)
            title = r.get("title") if isinstance(r.get("title"), str) else ""
            snippet = r.get("content") if isinstance(r.get("content"), str) else ""
            hits.append(
                SearchHit(link, " ".join(str(title).split()), " ".join(str(snippet).split()))
            )
            if len(hits) >= limit:
                break
        return hits


def provider_from_settings(settings: WebSettings) -> SearchProvider | None:
    """The configured search engine, or None when none is configured."""
    if settings.engine in ("auto", "searxng") and settings.searxng_url:
        return SearxngProvider(
            settings.searxng_url,
            timeout_s=settings.search_timeout_s,
            user_agent=settings.user_agent,
        )
    return None
