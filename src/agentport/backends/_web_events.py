"""How decoders mark an agent's web tool use, and the per-call summary built from it.

Every decoder that sees a web search or a page fetch puts `metadata["web"]` on the event:
`"search"` (with `query`, and `urls` when the CLI reports results) or `"fetch"` (with `url`).
`web_activity` turns a call's events into `CompletionResponse.raw.extra["web"]`:
`{"searches": [query, ...], "fetches": [url, ...]}`, counting each tool call once (its
result event when the CLI reports one, else its start): decoders record
search queries, fetched URLs and results as events.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from ..core import AgentEvent, EventType

__all__ = ["WebKind", "web_activity", "web_meta"]

WebKind = Literal["search", "fetch"]


def web_meta(
    kind: WebKind,
    *,
    query: str | None = None,
    url: str | None = None,
    urls: Sequence[str] = (),
) -> dict[str, Any]:
    """The metadata keys of a web tool event (merge into the decoder's own metadata)."""
    meta: dict[str, Any] = {"web": kind}
    if query is not None:
        meta["query"] = query
    if url is not None:
        meta["url"] = url
    if urls:
        meta["urls"] = list(urls)
    return meta


def web_activity(events: Iterable[AgentEvent]) -> dict[str, list[str]]:
    """`{"searches": [...], "fetches": [...]}` of a call's web tool events ({} when none), in
    order of first appearance. A tool call is counted once: events sharing a
    `metadata["id"]` are one call (its result's query/URL when a result arrived, else its
    start's); events without an id are one call each."""
    calls: dict[Any, AgentEvent] = {}
    for n, e in enumerate(events):
        if "web" not in e.metadata:
            continue
        key = e.metadata.get("id")
        key = ("event", n) if key is None else ("id", key)
        if key not in calls or e.type is EventType.tool_result:
            calls[key] = e
    searches: list[str] = []
    fetches: list[str] = []
    for e in calls.values():
        if e.metadata["web"] == "search":
            searches.append(str(e.metadata.get("query") or ""))
        else:
            fetches.append(str(e.metadata.get("url") or ""))
    out: dict[str, list[str]] = {}
    if searches:
        out["searches"] = searches
    if fetches:
        out["fetches"] = fetches
    return out
