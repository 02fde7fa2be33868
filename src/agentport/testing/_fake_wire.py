"""Wire shapes for `FakeModelServer`: which API a request is, what it carries, and how each
API spells an answer (streamed SSE events or one JSON body), an error and a usage block.

Kept free of sockets and threads so the shapes can be tested on their own. The answer types
live in `_fake_turn`, each API's rendering in `_fake_render`; this module is the entry point."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ._fake_render import (
    _anthropic_json,
    _anthropic_stream,
    _chat_json,
    _chat_stream,
    _gemini_chunk,
    _gemini_chunks,
    _gemini_parts,
    _gemini_stream,
    _responses_object,
    _responses_stream,
)
from ._fake_turn import Event, TokenUsage, ToolCallSpec, Turn, _new_id

__all__ = [
    "ApiKind",
    "TokenUsage",
    "ToolCallSpec",
    "Turn",
    "classify",
    "error_body",
    "images_in",
    "render_json",
    "render_stream",
]


class ApiKind(StrEnum):
    """Which wire API a request spoke. The first four carry model turns and consume the
    script; the rest are answered by the server itself."""

    RESPONSES = "responses"  # OpenAI Responses: POST …/responses
    CHAT = "chat"  # OpenAI Chat Completions: POST …/chat/completions
    ANTHROPIC = "anthropic"  # Anthropic Messages: POST …/v1/messages
    GEMINI = "gemini"  # Gemini: POST …/models/{m}:generateContent | :streamGenerateContent
    MODELS = "models"  # GET …/models and GET …/models/{id} (any of the three dialects)
    COUNT_TOKENS = "count_tokens"  # POST …/messages/count_tokens, POST …/models/{m}:countTokens
    HEALTH = "health"  # GET / , GET /health, HEAD anything
    UNKNOWN = "unknown"  # anything else: answered 404

    @property
    def is_model_api(self) -> bool:
        return self in _MODEL_APIS


_MODEL_APIS = frozenset({ApiKind.RESPONSES, ApiKind.CHAT, ApiKind.ANTHROPIC, ApiKind.GEMINI})

_GEMINI_PATH = re.compile(r"/(?:models|tunedModels)/([^/:]+):([A-Za-z]+)$")
_MODEL_INFO_PATH = re.compile(r"/models/([^/:]+)$")


@dataclass(frozen=True, slots=True)
class Classified:
    api: ApiKind
    stream: bool
    model: str | None
    sse: bool = True  # gemini streamGenerateContent without alt=sse answers a JSON array


def classify(
    method: str, path: str, query: Mapping[str, list[str]], body: Any, headers: Mapping[str, str]
) -> Classified:
    """Tell the API from the method and the END of the path, so any base-URL prefix works
    (`/v1/chat/completions`, `/api/v1/chat/completions`, `/openai/chat/completions`, …)."""
    p = path.rstrip("/") or "/"
    obj = body if isinstance(body, dict) else {}
    model = obj.get("model") if isinstance(obj.get("model"), str) else None
    if method == "HEAD" or (method == "GET" and p in ("/", "/health", "/healthz")):
        return Classified(ApiKind.HEALTH, False, None)
    if method == "GET":
        if p.endswith("/models"):
            return Classified(ApiKind.MODELS, False, None)
        m = _MODEL_INFO_PATH.search(p)
        if m:
            return Classified(ApiKind.MODELS, False, m.group(1))
        return Classified(ApiKind.UNKNOWN, False, None)
    if method != "POST":
        return Classified(ApiKind.UNKNOWN, False, None)
    g = _GEMINI_PATH.search(p)
    if g:
        action = g.group(2)
        if action == "generateContent":
            return Classified(ApiKind.GEMINI, False, g.group(1))
        if action == "streamGenerateContent":
            sse = "sse" in query.get("alt", [])
            return Classified(ApiKind.GEMINI, True, g.group(1), sse=sse)
        if action == "countTokens":
            return Classified(ApiKind.COUNT_TOKENS, False, g.group(1))
        return Classified(ApiKind.UNKNOWN, False, g.group(1))
    stream = obj.get("stream") is True
    if p.endswith("/chat/completions"):
        return Classified(ApiKind.CHAT, stream, model)
    if p.endswith("/responses"):
        return Classified(ApiKind.RESPONSES, stream, model)
    if p.endswith("/messages/count_tokens"):
        return Classified(ApiKind.COUNT_TOKENS, False, model)
    if p.endswith("/messages"):
        return Classified(ApiKind.ANTHROPIC, stream, model)
    return Classified(ApiKind.UNKNOWN, False, model)


# ----------------------------------------------------------------------------- request facts


def _text_of(content: Any) -> str:
    """Plain text of a message content in any of the four dialects."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    out: list[str] = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            text = part.get("text")
            if isinstance(text, str) and part.get("type") in (
                None,
                "text",
                "input_text",
                "output_text",
            ):
                out.append(text)
    return "\n".join(out)


def _messages(api: ApiKind, body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        return []
    if api is ApiKind.GEMINI:
        items = body.get("contents")
    elif api is ApiKind.RESPONSES:
        items = body.get("input")
        if isinstance(items, str):
            return [{"role": "user", "content": items}]
    else:
        items = body.get("messages")
    return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []


def user_text(api: ApiKind, body: Any) -> str:
    """Text of the last user message (`""` when there is none)."""
    for msg in reversed(_messages(api, body)):
        if api is ApiKind.GEMINI:
            if msg.get("role", "user") == "user":
                parts = msg.get("parts")
                text = _text_of(parts)
                if text or not _is_tool_result_msg(api, msg):
                    return text
            continue
        if msg.get("role") == "user" and msg.get("type", "message") == "message":
            text = _text_of(msg.get("content"))
            if text or not _is_tool_result_msg(api, msg):
                return text
    return ""


def system_text(api: ApiKind, body: Any) -> str:
    """The system / developer instructions, joined."""
    if not isinstance(body, dict):
        return ""
    out: list[str] = []
    if api is ApiKind.ANTHROPIC:
        out.append(_text_of(body.get("system")))
    elif api is ApiKind.GEMINI:
        si = body.get("systemInstruction") or body.get("system_instruction")
        if isinstance(si, dict):
            out.append(_text_of(si.get("parts")))
        else:
            out.append(_text_of(si))
    else:
        if isinstance(body.get("instructions"), str):
            out.append(body["instructions"])
        for msg in _messages(api, body):
            if msg.get("role") in ("system", "developer"):
                out.append(_text_of(msg.get("content")))
    return "\n".join(t for t in out if t)


def tool_names(api: ApiKind, body: Any) -> tuple[str, ...]:
    """Names of the tools/functions the request offers."""
    if not isinstance(body, dict) or not isinstance(body.get("tools"), list):
        return ()
    names: list[str] = []
    for tool in body["tools"]:
        if not isinstance(tool, dict):
            continue
        if api is ApiKind.GEMINI:
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                    names.append(decl["name"])
            continue
        fn = tool.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
        elif isinstance(tool.get("name"), str):
            names.append(tool["name"])
    return tuple(names)


def images_in(body: Any) -> tuple[tuple[str, bytes], ...]:
    """Every image a request body carries, as (media type, bytes), in order, whatever the
    wire format: a Chat Completions `image_url` or a Responses `input_image` with a base64
    data URL, an Anthropic base64 `image` source, a Gemini `inlineData` part."""
    found: list[tuple[str, bytes]] = []

    def data_url(url: Any) -> None:
        if isinstance(url, dict):
            url = url.get("url")
        match = (
            re.fullmatch(r"data:([\w/+.-]+);base64,(.*)", url or "", re.S)
            if isinstance(url, str)
            else None
        )
        if match:
            found.append((match.group(1), base64.b64decode(match.group(2))))

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        source = node.get("source")
        inline = node.get("inlineData") or node.get("inline_data")
        if kind in ("image_url", "input_image"):
            data_url(node.get("image_url"))
        elif kind == "image" and isinstance(source, dict) and source.get("type") == "base64":
            found.append((str(source.get("media_type")), base64.b64decode(source["data"])))
        elif isinstance(inline, dict) and "data" in inline:
            found.append((str(inline.get("mimeType") or inline.get("mime_type")),
                          base64.b64decode(inline["data"])))  # fmt: skip
        else:
            for value in node.values():
                walk(value)

    walk(body)
    return tuple(found)


def _is_tool_result_msg(api: ApiKind, msg: Mapping[str, Any]) -> bool:
    if api is ApiKind.CHAT:
        return msg.get("role") in ("tool", "function")
    if api is ApiKind.RESPONSES:
        t = msg.get("type")
        return isinstance(t, str) and t.endswith("_output")
    if api is ApiKind.ANTHROPIC:
        content = msg.get("content")
        return (
            msg.get("role") == "user"
            and isinstance(content, list)
            and any(isinstance(c, dict) and c.get("type") == "tool_result" for c in content)
        )
    if api is ApiKind.GEMINI:
        parts = msg.get("parts")
        return isinstance(parts, list) and any(
            isinstance(p, dict) and ("functionResponse" in p or "function_response" in p)
            for p in parts
        )
    return False


def tool_results(api: ApiKind, body: Any) -> tuple[str, ...]:
    """Contents of the tool results at the END of the conversation (the ones this request
    answers), as text; empty when the last message is not a tool result."""
    msgs = _messages(api, body)
    trailing: list[dict[str, Any]] = []
    for msg in reversed(msgs):
        if _is_tool_result_msg(api, msg):
            trailing.append(msg)
        else:
            break
    out: list[str] = []
    for msg in reversed(trailing):
        if api is ApiKind.CHAT:
            out.append(_text_of(msg.get("content")))
        elif api is ApiKind.RESPONSES:
            output = msg.get("output")
            out.append(output if isinstance(output, str) else json.dumps(output))
        elif api is ApiKind.ANTHROPIC:
            for c in msg.get("content") or []:
                if isinstance(c, dict) and c.get("type") == "tool_result":
                    out.append(_text_of(c.get("content")))
        else:
            for p in msg.get("parts") or []:
                if isinstance(p, dict):
                    fr = p.get("functionResponse") or p.get("function_response")
                    if isinstance(fr, dict):
                        out.append(json.dumps(fr.get("response"), sort_keys=True))
    return tuple(out)


def render_stream(api: ApiKind, turn: Turn, *, include_usage: bool = True) -> Iterator[Event]:
    """The SSE events answering a streamed request of `api` (`include_usage`: Chat
    Completions sends its usage chunk only when `stream_options.include_usage` asks)."""
    if api is ApiKind.CHAT:
        return _chat_stream(turn, include_usage=include_usage)
    if api is ApiKind.RESPONSES:
        return _responses_stream(turn)
    if api is ApiKind.ANTHROPIC:
        return _anthropic_stream(turn)
    if api is ApiKind.GEMINI:
        return _gemini_stream(turn)
    raise ValueError(f"{api} has no streaming answer")


def render_json(api: ApiKind, turn: Turn, *, gemini_array: bool = False) -> Any:
    """The JSON body answering a non-streamed request of `api`."""
    if api is ApiKind.CHAT:
        return _chat_json(turn)
    if api is ApiKind.RESPONSES:
        return _responses_object(turn, status="completed")
    if api is ApiKind.ANTHROPIC:
        return _anthropic_json(turn)
    if api is ApiKind.GEMINI:
        chunks = _gemini_chunks(turn)
        if gemini_array:
            return chunks
        return _gemini_chunk(turn, _gemini_parts(turn), final=True)
    raise ValueError(f"{api} has no model answer")


# ----------------------------------------------------------------------------- errors

_OPENAI_ERR = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_exceeded", "rate_limit_exceeded"),
}
_ANTHROPIC_ERR = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_body(api: ApiKind, status: int, message: str) -> dict[str, Any]:
    """The error JSON each API sends with a non-2xx status."""
    if api is ApiKind.ANTHROPIC:
        kind = _ANTHROPIC_ERR.get(status, "api_error")
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": _new_id("req_fake_"),
        }
    if api is ApiKind.GEMINI:
        return {
            "error": {
                "code": status,
                "message": message,
                "status": _GEMINI_STATUS.get(status, "UNKNOWN"),
            }
        }
    etype, code = _OPENAI_ERR.get(status, ("server_error", None))
    return {"error": {"message": message, "type": etype, "param": None, "code": code}}
