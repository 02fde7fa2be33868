"""`WebSearchReply`: a `FakeModelServer` turn in which the provider's server-side web tool
runs before the model answers (OpenAI Responses `web_search`: `web_search_call` items, then
the message, in one response).

The fake server plays the provider: it searches a `LoopbackWeb` (`LoopbackWeb.search`) for
each query and fetches each page to open over HTTP on 127.0.0.1 (so `LoopbackWeb.hits`
counts it), then builds the answer from what it found. Private: import `WebSearchReply` from
`agentport.testing`."""

from __future__ import annotations

import html.parser
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, cast

from ..web import SearchHit
from ._fake_replies import RecordedRequest, ReplyLike, ServerReply, coerce_reply
from ._fake_turn import Turn
from ._fake_webcall import WebCall
from ._fake_wire import ApiKind

__all__ = ["SearchEngine", "WebCall", "WebSearchReply"]

_MAX_PAGE_BYTES = 1 << 20
_FETCH_TIMEOUT_S = 10.0
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy


class SearchEngine(Protocol):
    """What the fake provider searches: `LoopbackWeb` is one."""

    def search(self, query: str, limit: int = 5) -> list[SearchHit]: ...


Answer = Callable[[tuple[WebCall, ...]], ReplyLike]


@dataclass(frozen=True)
class WebSearchReply(ServerReply):
    """Run server-side web calls, then answer.

    `searches`: queries run against `engine` (`limit` hits each); `open_urls`: pages the
    server fetches (http://127.0.0.1 only: the fake never leaves loopback; any other URL is
    a failed call). `answer`: the model's answer after the calls, a reply or a function of
    the calls made (`WebCall` values with the hits and the page text), e.g. a `JsonReply`
    built from the hits (a function here is called with the calls, not the request).
    A Responses request that does not offer the `web_search` tool gets no web call.
    Rendered for the Responses API as `web_search_call` items before the message; other
    APIs render only the answer unless they support `Turn.web`."""

    engine: SearchEngine
    answer: ReplyLike | Answer
    searches: Sequence[str] = ()
    open_urls: Sequence[str] = ()
    limit: int = 5

    def describe(self) -> str:
        return f"WebSearchReply(searches={list(self.searches)!r}, open={list(self.open_urls)!r})"

    def run_calls(self) -> tuple[WebCall, ...]:
        """Do the searches and fetches now (the server's request thread)."""
        calls = [
            WebCall("search", query=q, hits=tuple(self.engine.search(q, self.limit)))
            for q in self.searches
        ]
        calls += [_open_page(url) for url in self.open_urls]
        return tuple(calls)

    def turn(self, req: RecordedRequest, turn_for: Callable[[ServerReply], Turn]) -> Turn:
        """The answer's `Turn` (built by *turn_for*) carrying the web calls made. A
        Responses request that offers no `web_search` tool gets no web call (a provider
        runs only the tools the client enabled): the answer sees `()`."""
        calls = self.run_calls() if _offers_web_tool(req) else ()
        answer = self.answer
        if callable(answer) and not isinstance(answer, ServerReply):
            answer = cast(Answer, answer)(calls)  # a function here takes the calls
        inner = coerce_reply(answer, req)
        if isinstance(inner, WebSearchReply):
            raise TypeError("a WebSearchReply cannot answer with another WebSearchReply")
        return replace(turn_for(inner), web=calls)


def _offers_web_tool(req: RecordedRequest) -> bool:
    if req.api is not ApiKind.RESPONSES:
        return True  # other APIs: the caller's rules decide (claude / gemini web rules)
    tools = req.body.get("tools") if isinstance(req.body, dict) else None
    return any(
        isinstance(t, dict) and str(t.get("type", "")).startswith("web_search") for t in tools or ()
    )


def _open_page(url: str) -> WebCall:
    if not re.match(r"^http://127\.0\.0\.1(:\d+)?/", url):
        return WebCall("open_page", url=url, error="the fake provider fetches only 127.0.0.1")
    try:
        with _OPENER.open(url, timeout=_FETCH_TIMEOUT_S) as resp:
            charset = resp.headers.get_content_charset() or "utf-8"
            body = resp.read(_MAX_PAGE_BYTES).decode(charset, errors="replace")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return WebCall("open_page", url=url, error=f"fetch failed: {exc}")
    return WebCall("open_page", url=url, text=page_text(body))


class _Text(html.parser.HTMLParser):
    _SKIP = frozenset({"script", "style", "nav", "footer", "aside", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1
        elif tag in ("p", "h1", "h2", "h3", "li"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def page_text(body: str) -> str:
    """The readable text of an HTML page as a provider's page reader would give it (one
    paragraph a line; navigation, footer, scripts dropped). A test double, not agentport's
    extractor (that is `agentport.web`)."""
    parser = _Text()
    parser.feed(body)
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)
