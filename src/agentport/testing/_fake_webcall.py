"""Server-side web tool calls a `FakeModelServer` turn can carry (`WebCall`), and how the
OpenAI Responses API spells them (`web_search_call` output items). API-independent data plus
pure dict builders: no sockets, no threads. Private: the public names are in
`agentport.testing`.

Source: the OpenAI Responses API `web_search` tool; its output item is
`{"type": "web_search_call", "id", "status", "action": {"type": "search", "query",
"sources": [{"type": "url", "url"}]}}` (or `"open_page"` with `url`); the model's answer
follows as an ordinary `message` item, in the same response (the tool runs on the server,
the client sends no follow-up)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from ..web import SearchHit

__all__ = ["WebCall", "responses_web_items"]


def _ws_id() -> str:
    return f"ws_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True, slots=True)
class WebCall:
    """One server-side web tool call made during a turn.

    `kind="search"`: `query` was searched and `hits` found. `kind="open_page"`: the server
    fetched `url` (over loopback) and read `text` (empty when the fetch failed; `error`
    then says why)."""

    kind: Literal["search", "open_page"]
    query: str = ""
    url: str = ""
    hits: tuple[SearchHit, ...] = ()
    text: str = ""
    error: str = ""
    call_id: str = field(default_factory=_ws_id)


def _responses_action(call: WebCall) -> dict[str, Any]:
    if call.kind == "search":
        return {
            "type": "search",
            "query": call.query,
            "sources": [{"type": "url", "url": h.url} for h in call.hits],
        }
    return {"type": "open_page", "url": call.url}


def responses_web_items(calls: tuple[WebCall, ...]) -> list[dict[str, Any]]:
    """The `web_search_call` output items of *calls*, in order (Responses API)."""
    return [
        {
            "id": c.call_id,
            "type": "web_search_call",
            "status": "failed" if c.error else "completed",
            "action": _responses_action(c),
        }
        for c in calls
    ]
