"""Wire shapes for `FakeModelServer`: which API a request is, what it carries, and how each
API spells an answer (streamed SSE events or one JSON body), an error and a usage block.

Kept free of sockets and threads so the shapes can be tested on their own."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "ApiKind",
    "TokenUsage",
    "ToolCallSpec",
    "Turn",
    "classify",
    "error_body",
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


# ----------------------------------------------------------------------------- answers


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts, rendered in each API's own usage shape. `input_tokens` includes
    `cached_input_tokens` (OpenAI's convention); for Anthropic the server reports
    `input_tokens - cached_input_tokens` as `input_tokens` and the rest as
    `cache_read_input_tokens`. `reasoning_tokens` are part of `output_tokens`."""

    input_tokens: int = 10
    output_tokens: int = 5
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    name: str
    arguments: str  # JSON text
    call_id: str

    @property
    def arguments_obj(self) -> Any:
        try:
            return json.loads(self.arguments) if self.arguments else {}
        except ValueError:
            return {"_raw": self.arguments}


@dataclass(frozen=True, slots=True)
class Turn:
    """One model answer, independent of the API: optional text, then tool calls."""

    text: str | None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str = "fake-model"
    chunk_size: int | None = None  # None: short texts in 3 pieces, long ones in 64 KiB

    def chunks(self) -> list[str]:
        text = self.text or ""
        if not text:
            return []
        size = self.chunk_size
        if size is None:
            size = 65536 if len(text) > 65536 else max(1, -(-len(text) // 3))
        return [text[i : i + size] for i in range(0, len(text), size)]


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# One SSE event, already framed, and whether it carries answer content (a "delta").
Event = tuple[bytes, bool]


def _sse(data: Any, event: str | None = None, *, delta: bool = False) -> Event:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return (f"{head}data: {payload}\n\n".encode(), delta)


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


# --- Chat Completions


def _chat_usage(u: TokenUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
    }


def _chat_finish(turn: Turn) -> str:
    return "tool_calls" if turn.tool_calls else "stop"


def _chat_stream(turn: Turn, *, include_usage: bool) -> Iterator[Event]:
    cid = _new_id("chatcmpl-")
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": turn.model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield _sse(chunk({"role": "assistant", "content": ""}))
    for piece in turn.chunks():
        yield _sse(chunk({"content": piece}), delta=True)
    for i, call in enumerate(turn.tool_calls):
        yield _sse(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call.call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            ),
            delta=True,
        )
        yield _sse(
            chunk({"tool_calls": [{"index": i, "function": {"arguments": call.arguments}}]}),
            delta=True,
        )
    yield _sse(chunk({}, _chat_finish(turn)))
    if include_usage:
        usage = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": turn.model,
            "choices": [],
            "usage": _chat_usage(turn.usage),
        }
        yield _sse(usage)
    yield _sse("[DONE]")


def _chat_json(turn: Turn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in turn.tool_calls
        ]
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": turn.model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _chat_finish(turn)}
        ],
        "usage": _chat_usage(turn.usage),
    }


# --- Responses


def _responses_usage(u: TokenUsage) -> dict[str, Any]:
    return {
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_input_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.total_tokens,
    }


def _responses_items(turn: Turn, msg_id: str, fc_ids: list[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.text is not None:
        items.append(
            {
                "id": msg_id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for call, fid in zip(turn.tool_calls, fc_ids, strict=True):
        items.append(
            {
                "id": fid,
                "type": "function_call",
                "status": "completed",
                "name": call.name,
                "call_id": call.call_id,
                "arguments": call.arguments,
            }
        )
    return items


def _responses_object(
    turn: Turn,
    *,
    status: str,
    rid: str | None = None,
    created: int | None = None,
    output: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    if output is None:
        output = _responses_items(turn, _new_id("msg_"), [_new_id("fc_") for _ in turn.tool_calls])
    obj: dict[str, Any] = {
        "id": rid or _new_id("resp_"),
        "object": "response",
        "created_at": created or int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": turn.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": _responses_usage(turn.usage) if status == "completed" else None,
    }
    if status == "completed" and turn.text is not None:
        obj["output_text"] = turn.text
    return obj


def _responses_stream(turn: Turn) -> Iterator[Event]:
    rid = _new_id("resp_")
    created = int(time.time())
    msg_id = _new_id("msg_")
    fc_ids = [_new_id("fc_") for _ in turn.tool_calls]
    seq = 0

    def ev(kind: str, /, is_delta: bool = False, **data: Any) -> Event:
        nonlocal seq
        payload = {"type": kind, "sequence_number": seq, **data}
        seq += 1
        return _sse(payload, kind, delta=is_delta)

    yield ev(
        "response.created",
        response=_responses_object(turn, status="in_progress", rid=rid, created=created, output=[]),
    )
    yield ev(
        "response.in_progress",
        response=_responses_object(turn, status="in_progress", rid=rid, created=created, output=[]),
    )
    items = _responses_items(turn, msg_id, fc_ids)
    index = 0
    if turn.text is not None:
        yield ev(
            "response.output_item.added",
            output_index=index,
            item={
                "id": msg_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
        )
        part = {"type": "output_text", "text": "", "annotations": []}
        yield ev(
            "response.content_part.added",
            item_id=msg_id,
            output_index=index,
            content_index=0,
            part=part,
        )
        for piece in turn.chunks():
            yield ev(
                "response.output_text.delta",
                is_delta=True,
                item_id=msg_id,
                output_index=index,
                content_index=0,
                logprobs=[],
                **{"delta": piece},
            )
        yield ev(
            "response.output_text.done",
            item_id=msg_id,
            output_index=index,
            content_index=0,
            logprobs=[],
            text=turn.text,
        )
        yield ev(
            "response.content_part.done",
            item_id=msg_id,
            output_index=index,
            content_index=0,
            part={"type": "output_text", "text": turn.text, "annotations": []},
        )
        yield ev("response.output_item.done", output_index=index, item=items[index])
        index += 1
    for call, fid in zip(turn.tool_calls, fc_ids, strict=True):
        yield ev(
            "response.output_item.added",
            output_index=index,
            item={
                "id": fid,
                "type": "function_call",
                "status": "in_progress",
                "name": call.name,
                "call_id": call.call_id,
                "arguments": "",
            },
        )
        yield ev(
            "response.function_call_arguments.delta",
            is_delta=True,
            item_id=fid,
            output_index=index,
            **{"delta": call.arguments},
        )
        yield ev(
            "response.function_call_arguments.done",
            item_id=fid,
            output_index=index,
            name=call.name,
            arguments=call.arguments,
        )
        yield ev("response.output_item.done", output_index=index, item=items[index])
        index += 1
    yield ev(
        "response.completed",
        response=_responses_object(
            turn, status="completed", rid=rid, created=created, output=items
        ),
    )


# --- Anthropic Messages


def _anthropic_blocks(turn: Turn, tool_ids: list[str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text is not None:
        blocks.append({"type": "text", "text": turn.text})
    for call, tid in zip(turn.tool_calls, tool_ids, strict=True):
        blocks.append(
            {"type": "tool_use", "id": tid, "name": call.name, "input": call.arguments_obj}
        )
    return blocks


def _anthropic_usage(u: TokenUsage, output_tokens: int | None = None) -> dict[str, Any]:
    return {
        "input_tokens": u.input_tokens - u.cached_input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached_input_tokens,
        "output_tokens": u.output_tokens if output_tokens is None else output_tokens,
    }


def _anthropic_stop(turn: Turn) -> str:
    return "tool_use" if turn.tool_calls else "end_turn"


def _anthropic_json(turn: Turn) -> dict[str, Any]:
    return {
        "id": _new_id("msg_fake_"),
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": _anthropic_blocks(turn, [c.call_id for c in turn.tool_calls]),
        "stop_reason": _anthropic_stop(turn),
        "stop_sequence": None,
        "usage": _anthropic_usage(turn.usage),
    }


def _anthropic_stream(turn: Turn) -> Iterator[Event]:
    def ev(kind: str, /, is_delta: bool = False, **data: Any) -> Event:
        return _sse({"type": kind, **data}, kind, delta=is_delta)

    yield ev(
        "message_start",
        message={
            "id": _new_id("msg_fake_"),
            "type": "message",
            "role": "assistant",
            "model": turn.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _anthropic_usage(turn.usage, output_tokens=1),
        },
    )
    yield ev("ping")
    index = 0
    if turn.text is not None:
        yield ev("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for piece in turn.chunks():
            yield ev(
                "content_block_delta",
                is_delta=True,
                index=index,
                **{"delta": {"type": "text_delta", "text": piece}},
            )
        yield ev("content_block_stop", index=index)
        index += 1
    for call in turn.tool_calls:
        yield ev(
            "content_block_start",
            index=index,
            content_block={"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}},
        )
        yield ev(
            "content_block_delta",
            is_delta=True,
            index=index,
            **{"delta": {"type": "input_json_delta", "partial_json": call.arguments}},
        )
        yield ev("content_block_stop", index=index)
        index += 1
    closing: dict[str, Any] = {
        "delta": {"stop_reason": _anthropic_stop(turn), "stop_sequence": None},
        "usage": {"output_tokens": turn.usage.output_tokens},
    }
    yield ev("message_delta", **closing)
    yield ev("message_stop")


# --- Gemini


def _gemini_usage(u: TokenUsage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "promptTokenCount": u.input_tokens,
        "candidatesTokenCount": u.output_tokens - u.reasoning_tokens,
        "totalTokenCount": u.total_tokens,
    }
    if u.cached_input_tokens:
        out["cachedContentTokenCount"] = u.cached_input_tokens
    if u.reasoning_tokens:
        out["thoughtsTokenCount"] = u.reasoning_tokens
    return out


def _gemini_parts(turn: Turn, text: str | None = None, calls: bool = True) -> list[Any]:
    parts: list[Any] = []
    body = turn.text if text is None else text
    if body:
        parts.append({"text": body})
    if calls:
        for call in turn.tool_calls:
            parts.append({"functionCall": {"name": call.name, "args": call.arguments_obj}})
    return parts


def _gemini_chunk(turn: Turn, parts: list[Any], *, final: bool) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if final:
        cand["finishReason"] = "STOP"
    out: dict[str, Any] = {"candidates": [cand], "modelVersion": turn.model}
    if final:
        out["usageMetadata"] = _gemini_usage(turn.usage)
    out["responseId"] = _new_id("fake-")
    return out


def _gemini_chunks(turn: Turn) -> list[dict[str, Any]]:
    pieces = turn.chunks()
    out: list[dict[str, Any]] = []
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1 and not turn.tool_calls
        out.append(_gemini_chunk(turn, [{"text": piece}], final=last))
    if turn.tool_calls or not pieces:
        out.append(_gemini_chunk(turn, _gemini_parts(turn, text="", calls=True), final=True))
    return out


def _gemini_stream(turn: Turn) -> Iterator[Event]:
    for chunk in _gemini_chunks(turn):
        yield _sse(chunk, delta=True)


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
