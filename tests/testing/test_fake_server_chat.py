"""FakeModelServer: OpenAI Chat Completions (streamed and not) and the model listing."""

from __future__ import annotations

import json

import pytest

from _fake_server_util import chat_body, http, post, stream_post
from agentport.testing import (
    ApiKind,
    FakeModelServer,
    JsonReply,
    LargeReply,
    TextReply,
    TokenUsage,
    ToolCallReply,
)


@pytest.fixture
def server():
    with FakeModelServer() as s:
        yield s
    assert not s.errors


def _stream_text(events: list) -> str:
    return "".join(
        e["choices"][0]["delta"].get("content") or ""
        for _, e in events
        if isinstance(e, dict) and e.get("choices")
    )


def test_text_non_streamed(server: FakeModelServer) -> None:
    server.reply(TextReply("hello", usage=TokenUsage(input_tokens=12, output_tokens=3)))
    r = post(server.url_for("chat"), chat_body())
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": "hello",
        "refusal": None,
    }
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] == 12
    assert body["usage"]["completion_tokens"] == 3
    assert body["usage"]["total_tokens"] == 15
    assert body["model"] == "fake-model"


def test_text_streamed_with_usage_chunk(server: FakeModelServer) -> None:
    server.reply(TextReply("hello streamed world", usage=TokenUsage(7, 4, cached_input_tokens=2)))
    status, events = stream_post(server.url_for("chat"), chat_body(stream=True))
    assert status == 200
    assert events[-1] == (None, "[DONE]")
    assert _stream_text(events) == "hello streamed world"
    deltas = [e for _, e in events if isinstance(e, dict) and e["choices"]]
    assert deltas[0]["choices"][0]["delta"]["role"] == "assistant"
    assert deltas[-1]["choices"][0]["finish_reason"] == "stop"
    assert len(deltas) >= 4  # role, >= 2 content pieces, finish
    usage = events[-2][1]
    assert usage["choices"] == []
    assert usage["usage"]["prompt_tokens"] == 7
    assert usage["usage"]["prompt_tokens_details"] == {"cached_tokens": 2}


def test_stream_without_include_usage_has_no_usage_chunk(server: FakeModelServer) -> None:
    body = chat_body()
    body["stream"] = True
    _, events = stream_post(server.url_for("chat"), body)
    assert all(e == "[DONE]" or e["choices"] for _, e in events)
    assert _stream_text(events) == "ok"  # the default reply


def test_json_reply_is_text(server: FakeModelServer) -> None:
    server.reply({"status": "ok", "answer": 42})
    r = post(server.url_for("chat"), chat_body())
    assert json.loads(r.json()["choices"][0]["message"]["content"]) == {
        "status": "ok",
        "answer": 42,
    }


def test_json_reply_uses_structured_output_tool_when_offered(server: FakeModelServer) -> None:
    # qwen --json-schema offers a `structured_output` tool
    server.reply(JsonReply({"answer": 42}))
    tools = [{"type": "function", "function": {"name": "structured_output", "parameters": {}}}]
    r = post(server.url_for("chat"), chat_body(tools=tools))
    msg = r.json()["choices"][0]["message"]
    assert msg["tool_calls"][0]["function"]["name"] == "structured_output"
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"answer": 42}


@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_round_trip(server: FakeModelServer, stream: bool) -> None:
    server.reply(ToolCallReply("bash", {"command": "echo hi"}, call_id="call_1", then="done"))
    server.reply("unrelated later reply")
    url = server.url_for("chat")
    first = chat_body(
        "run it", stream=stream, tools=[{"type": "function", "function": {"name": "bash"}}]
    )
    if stream:
        _, events = stream_post(url, first)
        calls = [
            tc
            for _, e in events
            if isinstance(e, dict) and e["choices"]
            for tc in e["choices"][0]["delta"].get("tool_calls", [])
        ]
        assert calls[0]["id"] == "call_1"
        assert calls[0]["function"]["name"] == "bash"
        args = "".join(c["function"].get("arguments", "") for c in calls)
        finish = [
            e["choices"][0]["finish_reason"]
            for _, e in events
            if isinstance(e, dict) and e["choices"]
        ]
        assert finish[-1] == "tool_calls"
    else:
        msg = post(url, first).json()["choices"][0]
        assert msg["finish_reason"] == "tool_calls"
        call = msg["message"]["tool_calls"][0]
        assert call == {
            "id": "call_1",
            "type": "function",
            "function": {"name": "bash", "arguments": call["function"]["arguments"]},
        }
        args = call["function"]["arguments"]
    assert json.loads(args) == {"command": "echo hi"}

    follow = chat_body("run it", stream=stream)
    follow["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": args},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "hi\n"},
    ]
    if stream:
        _, events = stream_post(url, follow)
        assert _stream_text(events) == "done"
    else:
        assert post(url, follow).json()["choices"][0]["message"]["content"] == "done"
    reqs = server.model_requests
    assert reqs[1].tool_results == ("hi\n",)
    assert reqs[1].has_tool_result
    assert not reqs[0].has_tool_result
    assert server.pending == 1  # "unrelated later reply" is still queued


def test_large_answer_streamed_in_chunks(server: FakeModelServer) -> None:
    large = LargeReply(size=8 * 1024 * 1024, chunk_size=256 * 1024)
    server.reply(large)
    status, events = stream_post(server.url_for("chat"), chat_body(stream=True))
    assert status == 200
    content = [
        e
        for _, e in events
        if isinstance(e, dict) and e["choices"] and e["choices"][0]["delta"].get("content")
    ]
    assert len(content) == 32
    assert _stream_text(events) == large.text
    assert len(large.text) == 8 * 1024 * 1024


def test_large_json_answer(server: FakeModelServer) -> None:
    large = LargeReply(size=1024 * 1024, as_json=True)
    server.reply(large)
    r = post(server.url_for("chat"), chat_body())
    text = r.json()["choices"][0]["message"]["content"]
    assert len(text) == 1024 * 1024
    assert set(json.loads(text)) == {"data"}


def test_any_path_prefix(server: FakeModelServer) -> None:
    server.script("a", "b")
    r1 = post(f"{server.base_url}/api/v1/chat/completions", chat_body())
    r2 = post(f"{server.base_url}/chat/completions/", chat_body())
    assert [
        r1.json()["choices"][0]["message"]["content"],
        r2.json()["choices"][0]["message"]["content"],
    ] == ["a", "b"]
    assert [r.api for r in server.requests] == [ApiKind.CHAT, ApiKind.CHAT]


def test_models_listing(server: FakeModelServer) -> None:
    r = http().get(f"{server.openai_base_url}/models")
    assert r.json()["data"][0]["id"] == "fake-model"
    one = http().get(f"{server.openai_base_url}/models/some-model")
    assert one.json()["id"] == "some-model"
    assert [q.api for q in server.requests] == [ApiKind.MODELS, ApiKind.MODELS]
    assert server.model_requests == []


def test_opencode_title_request_does_not_consume_script(server: FakeModelServer) -> None:
    server.reply("the real answer")
    title = {
        "model": "m",
        "messages": [
            {
                "role": "system",
                "content": "You are a title generator. You output ONLY a thread title.",
            },
            {"role": "user", "content": "hi"},
        ],
    }
    r = post(server.url_for("chat"), title)
    assert r.json()["choices"][0]["message"]["content"] == "Fake conversation title"
    r = post(server.url_for("chat"), chat_body())
    assert r.json()["choices"][0]["message"]["content"] == "the real answer"
    assert [q.side for q in server.requests] == ["opencode-title", None]


def test_invalid_json_body_is_400(server: FakeModelServer) -> None:
    server.reply("kept")
    r = post(
        server.url_for("chat"), content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400
    assert "error" in r.json()
    assert server.pending == 1
