"""FakeModelServer: OpenAI Responses API, streamed the way codex reads it, and not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _fake_server_util import post, stream_post
from agentport.testing import ApiKind, FakeModelServer, JsonReply, TokenUsage, ToolCallReply


@pytest.fixture
def server():
    with FakeModelServer() as s:
        yield s
    assert not s.errors


def _body(text: str = "hi", *, stream: bool = True, **extra: Any) -> dict[str, Any]:
    # the shape codex sends (cli-transcripts/codex/*.requests.jsonl), trimmed
    return {
        "model": "stub-model",
        "instructions": "",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "sys"}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        ],
        "tools": [{"type": "function", "name": "exec_command", "parameters": {}}],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "store": False,
        "stream": stream,
        "include": ["reasoning.encrypted_content"],
        **extra,
    }


def test_streamed_text_event_sequence(server: FakeModelServer) -> None:
    server.reply("hello from responses")
    status, events = stream_post(server.url_for("responses"), _body())
    assert status == 200
    names = [name for name, _ in events]
    assert names[0] == "response.created"
    assert names[-1] == "response.completed"
    for required in (
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
    ):
        assert required in names
    assert all(name == data["type"] for name, data in events)
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert text == "hello from responses"
    done = next(d for n, d in events if n == "response.output_item.done")
    assert done["item"]["type"] == "message"
    assert done["item"]["content"][0] == {
        "type": "output_text",
        "text": "hello from responses",
        "annotations": [],
    }
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["id"].startswith("resp_")
    assert completed["model"] == "stub-model"
    assert set(completed["usage"]) == {
        "input_tokens",
        "input_tokens_details",
        "output_tokens",
        "output_tokens_details",
        "total_tokens",
    }
    req = server.requests[0]
    assert req.api is ApiKind.RESPONSES
    assert req.stream
    assert req.user_text == "hi"
    assert req.system_text == "sys"
    assert req.tool_names == ("exec_command",)


def test_usage_numbers(server: FakeModelServer) -> None:
    server.reply(JsonReply({"status": "ok"}, usage=TokenUsage(100, 20, 30, 5)))
    _, events = stream_post(server.url_for("responses"), _body())
    usage = events[-1][1]["response"]["usage"]
    assert usage == {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 30},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 5},
        "total_tokens": 120,
    }
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert json.loads(text) == {"status": "ok"}


def test_non_streamed(server: FakeModelServer) -> None:
    server.reply("plain")
    r = post(server.url_for("responses"), _body(stream=False))
    body = r.json()
    assert body["object"] == "response"
    assert body["status"] == "completed"
    assert body["output"][0]["content"][0]["text"] == "plain"
    assert body["output_text"] == "plain"
    assert body["usage"]["total_tokens"] > 0


@pytest.mark.parametrize("stream", [True, False])
def test_tool_call_round_trip(server: FakeModelServer, stream: bool) -> None:
    server.reply(ToolCallReply("exec_command", {"cmd": "echo hi"}, then="tool done"))
    url = server.url_for("responses")
    if stream:
        _, events = stream_post(url, _body())
        item = next(d["item"] for n, d in events if n == "response.output_item.done")
        args = "".join(
            d["delta"] for n, d in events if n == "response.function_call_arguments.delta"
        )
        assert args == item["arguments"]
        assert events[-1][1]["response"]["output"] == [item]
    else:
        item = post(url, _body(stream=False)).json()["output"][0]
    assert item["type"] == "function_call"
    assert item["name"] == "exec_command"
    assert item["call_id"].startswith("call_")
    assert json.loads(item["arguments"]) == {"cmd": "echo hi"}

    follow = _body(stream=stream)
    follow["input"] += [
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": item["arguments"],
            "call_id": item["call_id"],
        },
        {"type": "function_call_output", "call_id": item["call_id"], "output": "hi\n"},
    ]
    if stream:
        _, events = stream_post(url, follow)
        text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    else:
        text = post(url, follow).json()["output_text"]
    assert text == "tool done"
    assert server.model_requests[1].tool_results == ("hi\n",)


@pytest.mark.parametrize("stream", [True, False])
def test_a_tool_call_names_its_namespace(server: FakeModelServer, stream: bool) -> None:
    """codex 0.171 offers an MCP server's tools as `{"type": "namespace", "name":
    "mcp__agentport", "tools": [...]}` and resolves a call by `namespace` + `name`: without
    the field, codex answers `unsupported call`."""
    server.reply(ToolCallReply("complete", {"prompt": "x"}, namespace="mcp__agentport"))
    server.reply(ToolCallReply("exec_command", {"cmd": "ls"}))
    url = server.url_for("responses")
    items = []
    for _ in range(2):
        if stream:
            _, events = stream_post(url, _body())
            added = next(d["item"] for n, d in events if n == "response.output_item.added")
            items.append(events[-1][1]["response"]["output"][0])
            assert added.get("namespace") == items[-1].get("namespace")
        else:
            items.append(post(url, _body(stream=False)).json()["output"][0])
    assert (items[0]["name"], items[0]["namespace"]) == ("complete", "mcp__agentport")
    assert "namespace" not in items[1]


def test_tool_call_with_text_before(server: FakeModelServer) -> None:
    server.reply(
        ToolCallReply("exec_command", '{"cmd": "ls"}', call_id="call_x", text="Let me look.")
    )
    _, events = stream_post(server.url_for("responses"), _body())
    items = events[-1][1]["response"]["output"]
    assert [i["type"] for i in items] == ["message", "function_call"]
    assert items[1]["call_id"] == "call_x"
    assert [d["output_index"] for n, d in events if n == "response.output_item.added"] == [0, 1]


def test_output_schema_request_gets_plain_json_text(server: FakeModelServer) -> None:
    # codex --output-schema sends text.format json_schema; the answer is the JSON as text
    server.reply({"status": "ok", "answer": 42})
    fmt = {"format": {"type": "json_schema", "strict": True, "name": "codex_output_schema"}}
    _, events = stream_post(server.url_for("responses"), _body(text=fmt))
    text = next(d["text"] for n, d in events if n == "response.output_text.done")
    assert json.loads(text) == {"status": "ok", "answer": 42}
