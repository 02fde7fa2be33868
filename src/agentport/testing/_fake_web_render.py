"""How Anthropic Messages and Gemini spell the server-side web calls of a `FakeModelServer`
turn (`Turn.web`, `WebCall` values). Pure dict builders: no sockets, no threads. Private to
`agentport.testing`; `_fake_render` calls them.

Sources:
- Anthropic Messages, server tools `web_search_20250305` / `web_fetch_20250910`: the answer
  carries a `server_tool_use` block (`id` "srvtoolu_…", `name`, `input` {"query"} or {"url"})
  then its result block (`web_search_tool_result` whose `content` lists `web_search_result`
  items {url, title, encrypted_content, page_age}; `web_fetch_tool_result` whose `content` is
  a `web_fetch_result` {url, content: a text document}); streamed, the `server_tool_use`
  input arrives as one `input_json_delta` and the result block whole in its
  `content_block_start`; `usage.server_tool_use.web_search_requests` counts the searches.
  Claude Code 2.1.197's WebSearch tool sends exactly such a request (a `web_search_20250305`
  tool, `tool_choice` forcing it) and lists the result urls for the main model.
- Gemini `generateContent`, tools `googleSearch` / `urlContext`: the candidate carries
  `groundingMetadata` {webSearchQueries, groundingChunks [{web: {uri, title}}],
  groundingSupports [{segment {startIndex, endIndex, text}, groundingChunkIndices}]} (byte
  offsets into the answer text) and, for fetched urls, `urlContextMetadata` {urlMetadata
  [{retrievedUrl, urlRetrievalStatus}]}. gemini-cli 0.61's google_web_search and web_fetch
  read `groundingChunks` / `groundingSupports` to list their sources.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

from ._fake_turn import Event, Turn, _sse
from ._fake_webcall import WebCall

__all__ = [
    "anthropic_web_blocks",
    "anthropic_web_events",
    "anthropic_web_usage",
    "gemini_grounding",
]


def _srv_id(call: WebCall) -> str:
    return "srvtoolu_" + uuid.uuid5(uuid.NAMESPACE_URL, call.call_id).hex[:24]


def _anthropic_pair(call: WebCall) -> tuple[dict[str, Any], dict[str, Any]]:
    """(server_tool_use block, result block) of one web call."""
    tid = _srv_id(call)
    if call.kind == "search":
        use = {"type": "server_tool_use", "id": tid, "name": "web_search",
               "input": {"query": call.query}}  # fmt: skip
        results = [
            {
                "type": "web_search_result",
                "url": h.url,
                "title": h.title,
                # opaque to clients; the real API sends the page text encrypted
                "encrypted_content": base64.b64encode(h.snippet.encode("utf-8")).decode(),
                "page_age": None,
            }
            for h in call.hits
        ]
        content: Any = results
        if call.error:
            content = {"type": "web_search_tool_result_error", "error_code": "unavailable"}
        return use, {"type": "web_search_tool_result", "tool_use_id": tid, "content": content}
    use = {"type": "server_tool_use", "id": tid, "name": "web_fetch", "input": {"url": call.url}}
    if call.error:
        fetched: Any = {"type": "web_fetch_tool_result_error", "error_code": "url_not_accessible"}
    else:
        fetched = {
            "type": "web_fetch_result",
            "url": call.url,
            "content": {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": call.text},
            },
        }
    return use, {"type": "web_fetch_tool_result", "tool_use_id": tid, "content": fetched}


def anthropic_web_blocks(turn: Turn) -> list[dict[str, Any]]:
    """The content blocks of `turn.web`, in call order (for a non-streamed answer)."""
    return [block for call in turn.web for block in _anthropic_pair(call)]


def anthropic_web_events(turn: Turn, first_index: int = 0) -> Iterator[Event]:
    """The streamed events of `turn.web`, content block indexes from *first_index*."""
    index = first_index
    for call in turn.web:
        use, result = _anthropic_pair(call)
        start = {**use, "input": {}}
        yield _sse({"type": "content_block_start", "index": index, "content_block": start},
                   "content_block_start")  # fmt: skip
        delta = {"type": "input_json_delta", "partial_json": json.dumps(use["input"])}
        yield _sse({"type": "content_block_delta", "index": index, "delta": delta},
                   "content_block_delta")  # fmt: skip
        yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
        yield _sse({"type": "content_block_start", "index": index, "content_block": result},
                   "content_block_start")  # fmt: skip
        yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1


def anthropic_web_usage(turn: Turn) -> dict[str, Any]:
    """`usage.server_tool_use` counts (empty when the turn made no web call)."""
    if not turn.web:
        return {}
    searches = sum(1 for c in turn.web if c.kind == "search")
    fetches = sum(1 for c in turn.web if c.kind == "open_page")
    return {"server_tool_use": {"web_search_requests": searches, "web_fetch_requests": fetches}}


def gemini_grounding(turn: Turn) -> dict[str, Any]:
    """Candidate fields for `turn.web`: `groundingMetadata` (and `urlContextMetadata` when a
    page was fetched); empty when the turn made no web call. Every chunk supports the whole
    answer text."""
    if not turn.web:
        return {}
    chunks: list[dict[str, Any]] = []
    for call in turn.web:
        if call.kind == "search":
            chunks += [{"web": {"uri": h.url, "title": h.title}} for h in call.hits]
        elif not call.error:
            chunks.append({"web": {"uri": call.url, "title": call.url}})
    meta: dict[str, Any] = {
        "webSearchQueries": [c.query for c in turn.web if c.kind == "search"],
        "groundingChunks": chunks,
    }
    text = turn.text or ""
    if chunks and text:
        end = len(text.encode("utf-8"))
        meta["groundingSupports"] = [
            {
                "segment": {"startIndex": 0, "endIndex": end, "text": text},
                "groundingChunkIndices": list(range(len(chunks))),
            }
        ]
    out: dict[str, Any] = {"groundingMetadata": meta}
    opened = [c for c in turn.web if c.kind == "open_page"]
    if opened:
        out["urlContextMetadata"] = {
            "urlMetadata": [
                {
                    "retrievedUrl": c.url,
                    "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_ERROR"
                    if c.error
                    else "URL_RETRIEVAL_STATUS_SUCCESS",
                }
                for c in opened
            ]
        }
    return out
