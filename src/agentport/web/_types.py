"""Value types of `agentport.web`: search hits and the typed outcome of a fetch.

No I/O here; `_search` and `_fetch` produce these values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["FetchRefused", "FetchResult", "FetchedPage", "RefusalKind", "SearchError", "SearchHit"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: the page `url` (absolute http(s)), its `title` and a short
    `snippet` of its text (may be empty)."""

    url: str
    title: str
    snippet: str = ""


class SearchError(Exception):
    """A search engine failed (down, HTTP error, not JSON, unexpected shape). `engine` names
    it; the message is one line. Raised by `SearchProvider.search`; the research phase turns
    it into a warning and an empty result list."""

    def __init__(self, engine: str, message: str) -> None:
        super().__init__(f"search engine {engine}: {message}")
        self.engine = engine


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """A fetched page: `url` as asked, `final_url` after redirects, `title` and the main
    `text` (boilerplate removed for HTML), the `content_type` and the `encoding` used."""

    url: str
    final_url: str
    title: str
    text: str
    content_type: str
    encoding: str
    redirects: tuple[str, ...] = ()


RefusalKind = Literal[
    "scheme",
    "credentials",
    "private_address",
    "dns",
    "robots",
    "status",
    "redirect_loop",
    "too_many_redirects",
    "content_type",
    "too_large",
    "timeout",
    "network",
    "no_text",
]


@dataclass(frozen=True, slots=True)
class FetchRefused:
    """A page agentport did not fetch or could not use: the `url` asked for, a `kind` and a
    one-line `reason` (`str()` gives "URL: reason")."""

    url: str
    kind: RefusalKind
    reason: str

    def __str__(self) -> str:
        return f"{self.url}: {self.reason}"


FetchResult = FetchedPage | FetchRefused
