"""FakeModelServer: Anthropic Messages, streamed the way Claude Code reads it, and not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _fake_server_util import post, stream_post
from agentport.testing import (
    ApiKind,
    FakeModelServer,
    HttpFault,
    JsonReply,
    TextReply,
    TokenUsage,
    ToolCallReply,
)


@pytest.fixture
def server():
    with FakeModelServer() as s:
        yield s
    assert not s.errors


def _body(text: str = "hi", *, stream: bool = True, tools: tuple[str, ...] = ("Bash",)) -> Any:
    body: dict[str, Any] = {
        "model": "claude-opus-4-8",
        "max_tokens": 64000,
        "system": [{"type": "text", "text": "You are Claude Code"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "tools": [{"name": t, "input_schema": {"type": "object"}} for t in tools],
    }
    if stream:
        body["stream"] = True
    return body


def _url(server: FakeModelServer) -> str:
    return server.url_for("anthropic") + "?beta=true"  # what Claude Code calls


def _text(events: list[Any]) -> str:
    return "".join(
        d["delta"].get("text", "")
        for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "text_delta"
    )


def test_streamed_text(server: FakeModelServer) -> None:
    server.reply(TextReply('{"status": "ok", "answer": 42}', usage=TokenUsage(19560, 7, 60)))
    status, events = stream_post(_url(server), _body())
    assert status == 200
    names = [n for n, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert all(n == d["type"] for n, d in events)
    assert _text(events) == '{"status": "ok", "answer": 42}'
    start = events[0][1]["message"]
    assert start["role"] == "assistant"
    assert start["model"] == "claude-opus-4-8"
    assert start["usage"]["input_tokens"] == 19500
    assert start["usage"]["cache_read_input_tokens"] == 60
    delta = next(d for n, d in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"] == {"output_tokens": 7}
    req = server.requests[0]
    assert req.api is ApiKind.ANTHROPIC
    assert req.query == {"beta": ["true"]}
    assert req.system_text == "You are Claude Code"


def test_non_streamed_fallback(server: FakeModelServer) -> None:
    # Claude Code retries a cut stream as a non-streaming request (no `stream` key)
    server.reply("fallback answer")
    r = post(_url(server), _body(stream=False))
    body = r.json()
    assert body["type"] == "message"
    assert body["content"] == [{"type": "text", "text": "fallback answer"}]
    assert body["stop_reason"] == "end_turn"
    assert body["usage"]["output_tokens"] > 0
    assert not server.requests[0].stream


@pytest.mark.parametrize("stream", [True, False])
def test_tool_use_round_trip(server: FakeModelServer, stream: bool) -> None:
    server.reply(ToolCallReply("Bash", {"command": "echo hi", "description": "greet"}, then="done"))
    if stream:
        _, events = stream_post(_url(server), _body())
        start = next(
            d["content_block"]
            for n, d in events
            if n == "content_block_start" and d["content_block"]["type"] == "tool_use"
        )
        partial = "".join(
            d["delta"]["partial_json"]
            for n, d in events
            if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
        )
        tool_id, name, args = start["id"], start["name"], json.loads(partial)
        stop = next(d for n, d in events if n == "message_delta")["delta"]["stop_reason"]
    else:
        body = post(_url(server), _body(stream=False)).json()
        block = body["content"][0]
        tool_id, name, args = block["id"], block["name"], block["input"]
        stop = body["stop_reason"]
    assert tool_id.startswith("toolu_")
    assert name == "Bash"
    assert args == {"command": "echo hi", "description": "greet"}
    assert stop == "tool_use"

    follow = _body(stream=stream)
    follow["messages"] += [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": args}],
        },
        {
            "role": "user",
            "content": [
                {"tool_use_id": tool_id, "type": "tool_result", "content": "hi", "is_error": False}
            ],
        },
    ]
    if stream:
        _, events = stream_post(_url(server), follow)
        assert _text(events) == "done"
    else:
        assert post(_url(server), follow).json()["content"][0]["text"] == "done"
    assert server.model_requests[1].tool_results == ("hi",)


def test_json_schema_answer_via_structured_output_tool(server: FakeModelServer) -> None:
    # claude --json-schema adds a StructuredOutput tool; the answer must call it
    server.reply(JsonReply({"status": "ok", "answer": 42}))
    _, events = stream_post(_url(server), _body(tools=("Bash", "StructuredOutput")))
    start = next(d for n, d in events if n == "content_block_start")["content_block"]
    assert start["type"] == "tool_use"
    assert start["name"] == "StructuredOutput"
    partial = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta")
    assert json.loads(partial) == {"status": "ok", "answer": 42}


def test_json_without_structured_tool_is_text(server: FakeModelServer) -> None:
    server.reply(JsonReply({"a": 1}, structured_tool=False))
    _, events = stream_post(_url(server), _body(tools=("StructuredOutput",)))
    assert json.loads(_text(events)) == {"a": 1}


def test_errors_in_anthropic_shape(server: FakeModelServer) -> None:
    server.script(HttpFault.rate_limited(retry_after=2), HttpFault.overloaded())
    r = post(_url(server), _body())
    assert r.status_code == 429
    assert r.headers["retry-after"] == "2"
    assert r.headers["retry-after-ms"] == "2000"
    assert r.json()["type"] == "error"
    assert r.json()["error"] == {"type": "rate_limit_error", "message": "fake: rate limited"}
    r = post(_url(server), _body())
    assert r.status_code == 529
    assert r.json()["error"]["type"] == "overloaded_error"


def test_count_tokens_and_quota_probe_do_not_consume_script(server: FakeModelServer) -> None:
    server.reply("real")
    r = post(server.base_url + "/v1/messages/count_tokens?beta=true", _body(stream=False))
    assert r.json()["input_tokens"] > 0
    probe = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]}
    assert post(_url(server), probe).json()["content"][0]["text"] == "ok"
    _, events = stream_post(_url(server), _body())
    assert _text(events) == "real"
    assert [r.side for r in server.requests] == ["count_tokens", "claude-quota", None]
    assert server.requests[0].api is ApiKind.COUNT_TOKENS


def test_models_listing_anthropic_style(server: FakeModelServer) -> None:
    from _fake_server_util import http

    body = http().get(server.base_url + "/v1/models").json()
    assert body["data"][0]["id"] == "fake-model"
    assert body["data"][0]["type"] == "model"
    assert body["has_more"] is False
