"""How each wire API spells a `Turn`: the streamed SSE events and the one JSON body of
OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini, with their usage
blocks. Private to `agentport.testing`; `_fake_wire.render_stream` / `render_json` dispatch
here. Free of sockets and threads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from ._fake_turn import Event, TokenUsage, ToolCallSpec, Turn, _new_id, _sse
from ._fake_web_render import (
    anthropic_web_blocks,
    anthropic_web_events,
    anthropic_web_usage,
    gemini_grounding,
)
from ._fake_webcall import responses_web_items

__all__: list[str] = []


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


def _namespace(call: ToolCallSpec) -> dict[str, str]:
    """A Responses `function_call` names the namespace tool holding it, when it has one."""
    return {"namespace": call.namespace} if call.namespace else {}


def _responses_items(turn: Turn, msg_id: str, fc_ids: list[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = responses_web_items(turn.web)  # server-side tools first
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
            | _namespace(call)
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
    ev = _Numbered()
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
    for web_item in items[: len(turn.web)]:  # server-side web_search calls, then the answer
        added = {**web_item, "status": "in_progress"}
        yield ev("response.output_item.added", output_index=index, item=added)
        for stage in ("in_progress", "searching", "completed"):
            yield ev(f"response.web_search_call.{stage}", output_index=index, item_id=added["id"])
        yield ev("response.output_item.done", output_index=index, item=web_item)
        index += 1
    if turn.text is not None:
        yield from _responses_text(ev, turn, turn.text, msg_id, index, items[index])
        index += 1
    yield from _responses_calls(ev, turn, fc_ids, index, items)
    yield ev(
        "response.completed",
        response=_responses_object(
            turn, status="completed", rid=rid, created=created, output=items
        ),
    )


class _Numbered:
    """Makes the events of one Responses stream, numbered in order (`sequence_number`)."""

    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, kind: str, /, is_delta: bool = False, **data: Any) -> Event:
        payload = {"type": kind, "sequence_number": self.seq, **data}
        self.seq += 1
        return _sse(payload, kind, delta=is_delta)


def _responses_text(
    ev: _Numbered, turn: Turn, text: str, msg_id: str, index: int, item: dict[str, Any]
) -> Iterator[Event]:
    """The answer's message item: added, its text part streamed in chunks, done."""
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
        text=text,
    )
    yield ev(
        "response.content_part.done",
        item_id=msg_id,
        output_index=index,
        content_index=0,
        part={"type": "output_text", "text": text, "annotations": []},
    )
    yield ev("response.output_item.done", output_index=index, item=item)


def _responses_calls(
    ev: _Numbered, turn: Turn, fc_ids: list[str], index: int, items: list[dict[str, Any]]
) -> Iterator[Event]:
    """One function_call item per tool call, after *index* items."""
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
            }
            | _namespace(call),
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
        "content": anthropic_web_blocks(turn)  # server-side web calls first
        + _anthropic_blocks(turn, [c.call_id for c in turn.tool_calls]),
        "stop_reason": _anthropic_stop(turn),
        "stop_sequence": None,
        "usage": _anthropic_usage(turn.usage) | anthropic_web_usage(turn),
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
    yield from anthropic_web_events(turn)  # server-side web calls first
    index = 2 * len(turn.web)
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
        "usage": {"output_tokens": turn.usage.output_tokens} | anthropic_web_usage(turn),
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
        cand.update(gemini_grounding(turn))  # server-side web calls (googleSearch, urlContext)
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
