"""`SideRule`s that let `FakeModelServer` play a provider's server-side web tools for the
utility requests agent CLIs send when their own web tools run (`claude_web_rules`,
`gemini_web_rules`), plus `RebasedSearch`, which serves a `LoopbackWeb`'s hits under another
base url (a TLS front, an alias host).

What each CLI sends, recorded against FakeModelServer:
- Claude Code 2.1.197, WebSearch tool: a second Messages request whose user text is
  "Perform a web search for the query: Q", offering only `{"type": "web_search_20250305"}`
  (forced by `tool_choice`); the CLI lists the `web_search_tool_result` urls to the main
  model. WebFetch: the CLI fetches the page itself (http is upgraded to https; a claude.ai
  domain check runs first unless `skipWebFetchPreflight`), turns it into markdown and sends
  a request (no tools) whose user text starts "Web page content:" followed by the page
  between `---` lines and the main model's prompt; that answer is the tool result.
- gemini-cli 0.61.0, google_web_search: a `generateContent` request (model config
  "web-search") whose user text is the query, with `tools: [{"googleSearch": {}}]`; the
  answer text plus its `groundingMetadata` chunks become the tool result. web_fetch: a
  request (model config "web-fetch") listing `<authorized_urls>`, with
  `tools: [{"urlContext": {}}]` (the provider fetches); the CLI refuses private and
  loopback hosts before any request (`isBlockedHost`), so loopback pages must be served
  under a public-looking alias that the rule maps back to the site.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..web import SearchHit
from ._fake_replies import RecordedRequest, SideRule, TextReply
from ._fake_webcall import WebCall
from ._fake_websearch import SearchEngine, WebSearchReply
from ._fake_wire import ApiKind

__all__ = ["RebasedSearch", "claude_web_rules", "gemini_web_rules"]


@dataclass(frozen=True)
class RebasedSearch:
    """*engine*'s hits with urls under *base_url* instead of *origin* (e.g. a `LoopbackWeb`
    served through `LoopbackTls`, or under an alias host)."""

    engine: SearchEngine
    origin: str
    base_url: str

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        return [
            SearchHit(self.rebase(h.url), h.title, h.snippet)
            for h in self.engine.search(query, limit)
        ]

    def rebase(self, url: str) -> str:
        return self.base_url + url[len(self.origin) :] if url.startswith(self.origin) else url

    def unbase(self, url: str) -> str:
        return self.origin + url[len(self.base_url) :] if url.startswith(self.base_url) else url


def _offers(req: RecordedRequest, key: str) -> bool:
    tools = req.body.get("tools") if isinstance(req.body, dict) else None
    return isinstance(tools, list) and any(
        isinstance(t, dict) and (key in t or str(t.get("type", "")).startswith(key)) for t in tools
    )


def _hits_text(calls: tuple[WebCall, ...]) -> str:
    lines = [f"{h.title}: {h.snippet}" for c in calls for h in c.hits]
    return "\n".join(lines) or "No results."


def _pages_text(calls: tuple[WebCall, ...]) -> str:
    return "\n\n".join(c.text or f"({c.url}: {c.error})" for c in calls) or "No content."


_CLAUDE_QUERY = re.compile(r"Perform a web search for the query: (.+)", re.S)
_CLAUDE_PAGE = "Web page content:\n---\n"
_CLAUDE_ASK = "\nProvide a concise response"


def _claude_page(text: str) -> str | None:
    """The page Claude Code's WebFetch put between `---` lines (the last closing `---`
    before its instructions, so a `---` inside the page does not cut it), or None."""
    start = text.find(_CLAUDE_PAGE)
    if start < 0:
        return None
    start += len(_CLAUDE_PAGE)
    ask = text.find(_CLAUDE_ASK, start)
    end = text.rfind("\n---\n", start, ask if ask >= 0 else len(text))
    return text[start:end] if end >= 0 else None


def claude_web_rules(engine: SearchEngine, *, limit: int = 5) -> tuple[SideRule, ...]:
    """Rules for Claude Code's web tools: its WebSearch request is answered by a
    `WebSearchReply` over *engine* (`server_tool_use` + `web_search_tool_result` blocks); its
    WebFetch summary request is answered with the page text it carries, verbatim (a
    summariser that quotes)."""

    def is_search(req: RecordedRequest) -> bool:
        return req.api is ApiKind.ANTHROPIC and _offers(req, "web_search_")

    def search(req: RecordedRequest) -> WebSearchReply:
        m = _CLAUDE_QUERY.search(req.user_text)
        query = m.group(1).strip() if m else req.user_text.strip()
        return WebSearchReply(
            engine=engine, searches=(query,), limit=limit,
            answer=lambda calls: TextReply(_hits_text(calls)),
        )  # fmt: skip

    def is_fetch_summary(req: RecordedRequest) -> bool:
        return req.api is ApiKind.ANTHROPIC and _claude_page(req.user_text) is not None

    def summary(req: RecordedRequest) -> TextReply:
        return TextReply(_claude_page(req.user_text) or "")

    return (
        SideRule("claude-web-search", is_search, search),
        SideRule("claude-web-fetch-summary", is_fetch_summary, summary),
    )


_AUTHORIZED = re.compile(r"<authorized_urls>\s*(.*?)\s*</authorized_urls>", re.S)


def gemini_web_rules(
    engine: SearchEngine,
    *,
    to_loopback: Callable[[str], str] = lambda url: url,
    limit: int = 5,
) -> tuple[SideRule, ...]:
    """Rules for gemini-cli's web tools: a `googleSearch` request is answered by a
    `WebSearchReply` over *engine* (`groundingMetadata` chunks); a `urlContext` request by one
    that fetches each authorized url (mapped by *to_loopback*, e.g. `RebasedSearch.unbase`)
    from the loopback site and answers with the page text."""

    def is_search(req: RecordedRequest) -> bool:
        return req.api is ApiKind.GEMINI and _offers(req, "googleSearch")

    def search(req: RecordedRequest) -> WebSearchReply:
        return WebSearchReply(
            engine=engine, searches=(req.user_text.strip(),), limit=limit,
            answer=lambda calls: TextReply(_hits_text(calls)),
        )  # fmt: skip

    def is_fetch(req: RecordedRequest) -> bool:
        return req.api is ApiKind.GEMINI and _offers(req, "urlContext")

    def fetch(req: RecordedRequest) -> WebSearchReply:
        m = _AUTHORIZED.search(req.user_text)
        urls: Sequence[str] = m.group(1).split() if m else ()
        return WebSearchReply(
            engine=engine, open_urls=tuple(to_loopback(u) for u in urls),
            answer=lambda calls: TextReply(_pages_text(calls)),
        )  # fmt: skip

    return (
        SideRule("gemini-google-search", is_search, search),
        SideRule("gemini-url-context", is_fetch, fetch),
    )
