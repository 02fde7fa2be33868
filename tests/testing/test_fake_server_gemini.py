"""FakeModelServer: Gemini generateContent / streamGenerateContent (alt=sse) as gemini-cli
uses them, including its router side request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _fake_server_util import http, post, stream_post
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


def _body(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {
        "contents": [{"role": "user", "parts": [{"text": text}]}],
        "systemInstruction": {"parts": [{"text": "You are Gemini CLI"}]},
        "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}],
        "generationConfig": {"temperature": 1},
        **extra,
    }


def _text(chunks: list[Any]) -> str:
    return "".join(
        p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"]
    )


def test_stream_generate_content_sse(server: FakeModelServer) -> None:
    server.reply(TextReply("hello gemini world", usage=TokenUsage(50, 9, 10, 3)))
    url = server.url_for("gemini", model="gemini-2.5-flash")
    assert url.endswith("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    status, events = stream_post(url, _body())
    assert status == 200
    chunks = [d for _, d in events]
    assert len(chunks) >= 2
    assert _text(chunks) == "hello gemini world"
    assert all(c["candidates"][0]["content"]["role"] == "model" for c in chunks)
    last = chunks[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["usageMetadata"] == {
        "promptTokenCount": 50,
        "candidatesTokenCount": 6,
        "totalTokenCount": 59,
        "cachedContentTokenCount": 10,
        "thoughtsTokenCount": 3,
    }
    assert last["modelVersion"] == "gemini-2.5-flash"
    req = server.requests[0]
    assert req.api is ApiKind.GEMINI
    assert req.stream
    assert req.model == "gemini-2.5-flash"
    assert req.query == {"alt": ["sse"]}
    assert req.system_text == "You are Gemini CLI"
    assert req.tool_names == ("run_shell_command",)


def test_generate_content_non_streamed(server: FakeModelServer) -> None:
    server.reply({"status": "ok"})
    r = post(server.url_for("gemini", model="gemini-2.5-pro", stream=False), _body())
    body = r.json()
    assert json.loads(body["candidates"][0]["content"]["parts"][0]["text"]) == {"status": "ok"}
    assert body["candidates"][0]["finishReason"] == "STOP"
    assert body["usageMetadata"]["totalTokenCount"] > 0
    assert not server.requests[0].stream


def test_stream_without_alt_sse_is_a_json_array(server: FakeModelServer) -> None:
    server.reply("array form")
    r = post(server.base_url + "/v1beta/models/m:streamGenerateContent", _body())
    chunks = r.json()
    assert isinstance(chunks, list)
    assert _text(chunks) == "array form"


@pytest.mark.parametrize("stream", [True, False])
def test_function_call_round_trip(server: FakeModelServer, stream: bool) -> None:
    server.reply(ToolCallReply("run_shell_command", {"command": "echo hi"}, then="done"))
    url = server.url_for("gemini", model="gemini-2.5-flash", stream=stream)
    if stream:
        _, events = stream_post(url, _body())
        chunks = [d for _, d in events]
    else:
        chunks = [post(url, _body()).json()]
    calls = [
        p["functionCall"]
        for c in chunks
        for p in c["candidates"][0]["content"]["parts"]
        if "functionCall" in p
    ]
    assert calls == [{"name": "run_shell_command", "args": {"command": "echo hi"}}]

    follow = _body()
    follow["contents"] += [
        {"role": "model", "parts": [{"functionCall": calls[0]}]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "run_shell_command", "response": {"output": "hi"}}}
            ],
        },
    ]
    if stream:
        _, events = stream_post(url, follow)
        assert _text([d for _, d in events]) == "done"
    else:
        assert _text([post(url, follow).json()]) == "done"
    assert server.model_requests[1].tool_results == ('{"output": "hi"}',)


def test_router_request_is_a_side_request(server: FakeModelServer) -> None:
    server.reply("main answer")
    router = _body(
        generationConfig={
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "OBJECT",
                "properties": {
                    "complexity_reasoning": {"type": "STRING"},
                    "complexity_score": {"type": "INTEGER"},
                },
            },
        }
    )
    r = post(server.url_for("gemini", model="gemini-3.5-flash-lite", stream=False), router)
    decision = json.loads(r.json()["candidates"][0]["content"]["parts"][0]["text"])
    assert set(decision) == {"complexity_reasoning", "complexity_score"}
    _, events = stream_post(server.url_for("gemini"), _body())
    assert _text([d for _, d in events]) == "main answer"
    assert [q.side for q in server.requests] == ["gemini-router", None]


def test_side_rules_can_be_switched_off() -> None:
    with FakeModelServer(side_rules=()) as server:
        server.reply(JsonReply({"complexity_reasoning": "x", "complexity_score": 99}))
        router = _body(
            generationConfig={"responseJsonSchema": {"properties": {"complexity_score": {}}}}
        )
        r = post(server.url_for("gemini", stream=False), router)
        assert json.loads(_text([r.json()]))["complexity_score"] == 99
        assert server.requests[0].side is None


def test_errors_in_gemini_shape(server: FakeModelServer) -> None:
    server.script(HttpFault.server_error(), HttpFault.unauthorized(), HttpFault.rate_limited())
    codes = []
    for _ in range(3):
        r = post(server.url_for("gemini"), _body())
        codes.append((r.status_code, r.json()["error"]["status"], r.json()["error"]["code"]))
    assert codes == [
        (500, "INTERNAL", 500),
        (401, "UNAUTHENTICATED", 401),
        (429, "RESOURCE_EXHAUSTED", 429),
    ]


def test_count_tokens_and_model_listing(server: FakeModelServer) -> None:
    r = post(server.base_url + "/v1beta/models/gemini-2.5-flash:countTokens", _body())
    assert r.json()["totalTokens"] > 0
    listing = http().get(server.base_url + "/v1beta/models").json()
    assert listing["models"][0]["name"] == "models/fake-model"
    one = http().get(server.base_url + "/v1beta/models/gemini-2.5-flash").json()
    assert one["name"] == "models/gemini-2.5-flash"
    assert server.model_requests == []
