"""FakeModelServer: faults on every API, scripting rules, request recording, concurrency,
bounded shutdown with hung requests, and use from asyncio and trio."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import httpx
import pytest

from _fake_server_util import chat_body, http, post, read_raw, sse, stream_post
from agentport.testing import (
    ApiKind,
    CutStream,
    DropConnection,
    FakeModelServer,
    Hang,
    HttpFault,
    RecordedRequest,
    TextReply,
    ToolCallReply,
)


@pytest.fixture
def server():
    with FakeModelServer(shutdown_timeout=2.0) as s:
        yield s
    assert not s.errors


def _request(server: FakeModelServer, api: str, stream: bool) -> tuple[str, dict[str, Any]]:
    if api == "gemini":
        body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        return server.url_for("gemini", stream=stream), body
    if api == "responses":
        body = {"model": "m", "input": "hi"}
    elif api == "anthropic":
        body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    else:
        body = chat_body()
    if stream:
        body["stream"] = True
    return server.url_for(api), body


APIS = ["chat", "responses", "anthropic", "gemini"]
MODES = [(api, stream) for api in APIS for stream in (True, False)]


@pytest.mark.parametrize(("api", "stream"), MODES)
def test_http_faults(server: FakeModelServer, api: str, stream: bool) -> None:
    server.script(
        HttpFault.unauthorized(),
        HttpFault.rate_limited(retry_after=1),
        HttpFault.server_error(),
        HttpFault(503, "custom", headers={"x-extra": "1"}),
        HttpFault(418, body={"raw": True}),
    )
    url, body = _request(server, api, stream)
    responses = [post(url, body) for _ in range(5)]
    assert [r.status_code for r in responses] == [401, 429, 500, 503, 418]
    assert responses[1].headers["retry-after"] == "1"
    assert "retry-after" not in responses[0].headers
    assert responses[3].headers["x-extra"] == "1"
    assert "custom" in responses[3].text
    assert responses[4].json() == {"raw": True}
    for r in responses[:3]:
        assert r.headers["content-type"] == "application/json"
        assert "fake:" in r.text
    assert [q.served for q in server.requests] == [
        "HttpFault(401)",
        "HttpFault(429)",
        "HttpFault(500)",
        "HttpFault(503)",
        "HttpFault(418)",
    ]


@pytest.mark.parametrize(("api", "stream"), MODES)
def test_drop_connection(server: FakeModelServer, api: str, stream: bool) -> None:
    server.script(DropConnection(), DropConnection(reset=True), "after the drops")
    url, body = _request(server, api, stream)
    for _ in range(2):
        with pytest.raises(httpx.TransportError):
            post(url, body)
    r = post(url, body)  # the client reconnects; the server is still fine
    assert r.status_code == 200
    assert len(server.requests) == 3


@pytest.mark.parametrize(("api", "stream"), MODES)
def test_cut_stream(server: FakeModelServer, api: str, stream: bool) -> None:
    server.reply(CutStream(text="one two three four five six", after_deltas=1))
    url, body = _request(server, api, stream)
    received, error = read_raw(url, body)
    assert isinstance(error, httpx.TransportError)
    assert received  # something arrived before the cut
    if stream and api != "gemini":
        assert b"one t" in received  # the first delta (a third of the text)
        assert b"four" not in received


def test_cut_stream_before_first_delta(server: FakeModelServer) -> None:
    server.reply(CutStream(after_deltas=0))
    url, body = _request(server, "anthropic", True)
    received, error = read_raw(url, body)
    assert isinstance(error, httpx.TransportError)
    assert b"message_start" in received
    assert b"content_block_start" in received
    assert b"text_delta" not in received


@pytest.mark.parametrize(
    ("api", "stream"), [("chat", True), ("responses", True), ("anthropic", False), ("gemini", True)]
)
def test_hang_then_bounded_stop(api: str, stream: bool) -> None:
    server = FakeModelServer(shutdown_timeout=2.0).start()
    server.reply(Hang(), times=None)
    url, body = _request(server, api, stream)
    with pytest.raises(httpx.ReadTimeout):
        http().post(url, json=body, timeout=httpx.Timeout(5.0, read=0.3))
    outcome: list[str] = []

    def hung_client() -> None:
        try:
            httpx.post(url, json=body, timeout=30)
            outcome.append("answered")
        except httpx.TransportError as exc:
            outcome.append(type(exc).__name__)

    t = threading.Thread(target=hung_client)
    t.start()
    server.wait_for_requests(2)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 1.0
    t.join(5)
    assert outcome
    assert outcome != ["answered"]
    assert not server.errors


def test_hang_after_first_delta(server: FakeModelServer) -> None:
    server.reply(Hang(after_deltas=1, text="aaa bbb ccc"))
    url, body = _request(server, "chat", True)
    got, error = read_raw(url, body, timeout=httpx.Timeout(5.0, read=0.3))
    assert isinstance(error, httpx.ReadTimeout)
    assert b"aaa" in got
    assert b"[DONE]" not in got


def test_stop_with_keepalive_and_hung_requests_is_bounded() -> None:
    server = FakeModelServer(shutdown_timeout=1.0).start()
    server.reply(Hang(), times=None)
    url, body = _request(server, "chat", False)
    errors: list[BaseException] = []

    def client() -> None:
        try:
            httpx.post(url, json=body, timeout=30)
        except httpx.TransportError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(5)]
    for t in threads:
        t.start()
    server.wait_for_requests(5)
    started = time.monotonic()
    server.stop()
    server.stop()  # idempotent
    assert time.monotonic() - started < 1.0
    for t in threads:
        t.join(5)
    assert len(errors) == 5


def test_recording(server: FakeModelServer) -> None:
    url = server.base_url + "/api/v1/chat/completions?x=1&x=2&y="
    r = http().post(
        url,
        json=chat_body("record me"),
        headers={"Authorization": "Bearer sk-secret", "X-Api-Key": "k-secret", "X-Trace": "t1"},
    )
    assert r.status_code == 200
    (req,) = server.requests
    assert isinstance(req, RecordedRequest)
    assert req.seq == 1
    assert req.method == "POST"
    assert req.path == "/api/v1/chat/completions"
    assert req.query == {"x": ["1", "2"], "y": [""]}
    assert req.api is ApiKind.CHAT
    assert not req.stream
    assert req.model == "fake-model"
    assert req.body == chat_body("record me")
    assert req.raw
    assert req.user_text == "record me"
    assert req.system_text == "be brief"
    assert req.served == "TextReply('ok')"
    assert req.side is None
    # real values are kept for assertions, and redacted in repr
    assert req.headers["authorization"] == "Bearer sk-secret"
    assert req.header("X-Trace") == "t1"
    text = repr(req)
    assert "sk-secret" not in text
    assert "k-secret" not in text
    assert "<redacted>" in text
    assert "t1" in text
    assert req.redacted_headers()["x-api-key"] == "<redacted>"


def test_unknown_routes_are_404_and_recorded(server: FakeModelServer) -> None:
    server.reply("kept")
    assert http().post(server.base_url + "/v1/embeddings", json={}).status_code == 404
    assert http().get(server.base_url + "/").json() == {"status": "ok"}
    assert [q.api for q in server.requests] == [ApiKind.UNKNOWN, ApiKind.HEALTH]
    assert server.pending == 1


def test_script_order_api_filter_predicate_and_times(server: FakeModelServer) -> None:
    server.reply("for anthropic", api="anthropic")
    server.reply("when asked about cats", when=lambda r: "cats" in r.user_text)
    server.script("first", "second")
    server.reply("sticky", times=None)
    chat = server.url_for("chat")

    def ask(text: str) -> str:
        return str(post(chat, chat_body(text)).json()["choices"][0]["message"]["content"])

    assert ask("hi") == "first"
    assert ask("about cats?") == "when asked about cats"
    assert ask("hi") == "second"
    assert ask("hi") == "sticky"
    assert ask("hi") == "sticky"
    url, body = _request(server, "anthropic", False)
    assert post(url, body).json()["content"][0]["text"] == "for anthropic"
    assert post(url, body).json()["content"][0]["text"] == "sticky"
    assert server.pending == 1  # sticky stays


def test_default_callable_reset(server: FakeModelServer) -> None:
    chat = server.url_for("chat")

    def content() -> str:
        return str(post(chat, chat_body("q")).json()["choices"][0]["message"]["content"])

    assert content() == "ok"
    server.default = lambda req: f"echo: {req.user_text}"
    assert content() == "echo: q"
    server.set_default(HttpFault.server_error())
    assert post(chat, chat_body()).status_code == 500
    server.reply("queued")
    server.reset()
    assert server.requests == []
    assert server.pending == 0
    assert content() == "ok"  # the constructor's default is back


def test_bad_replies_fail_at_scripting_time(server: FakeModelServer) -> None:
    with pytest.raises(TypeError):
        server.reply(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="times"):
        server.reply("x", times=0)
    with pytest.raises(ValueError, match="nope"):
        server.reply("x", api="nope")


def test_tool_call_follow_up_goes_first_and_only_to_tool_results(server: FakeModelServer) -> None:
    server.script(ToolCallReply("bash", {"c": 1}, call_id="c1", then="after tool"), "next turn")
    chat = server.url_for("chat")
    first = post(chat, chat_body()).json()["choices"][0]["message"]
    assert first["tool_calls"][0]["id"] == "c1"
    # a request WITHOUT a tool result does not take the follow-up
    plain = post(chat, chat_body()).json()["choices"][0]["message"]["content"]
    assert plain == "next turn"
    follow = chat_body()
    follow["messages"] += [
        {"role": "assistant", "tool_calls": first["tool_calls"]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
    ]
    assert post(chat, follow).json()["choices"][0]["message"]["content"] == "after tool"
    assert server.pending == 0


def test_concurrent_requests(server: FakeModelServer) -> None:
    n = 16
    server.script(*[f"answer {i}" for i in range(n)])
    chat = server.url_for("chat")
    results: list[str] = []
    lock = threading.Lock()

    c = http()  # one client shared by all threads (its pool opens parallel connections)

    def worker(i: int) -> None:
        if i % 2:
            with c.stream("POST", chat, json=chat_body(stream=True)) as r:
                events = sse(r)
            text = "".join(
                e["choices"][0]["delta"].get("content") or ""
                for _, e in events
                if isinstance(e, dict) and e["choices"]
            )
        else:
            text = c.post(chat, json=chat_body()).json()["choices"][0]["message"]["content"]
        with lock:
            results.append(text)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(server.requests) == n
    assert (
        max(q.received_at for q in server.requests) - min(q.received_at for q in server.requests)
        < 5
    )
    assert sorted(results) == sorted(f"answer {i}" for i in range(n))
    assert sorted(q.seq for q in server.requests) == list(range(1, n + 1))


def test_delays_and_chunk_delays(server: FakeModelServer) -> None:
    server.reply(TextReply("abc", delay=0.2, chunk_size=1, chunk_delay=0.05))
    started = time.monotonic()
    status, events = stream_post(*_request(server, "chat", True))
    elapsed = time.monotonic() - started
    assert status == 200
    assert 0.28 <= elapsed < 2
    assert len(events) == 6  # role, a, b, c, finish, [DONE]


def test_addresses() -> None:
    server = FakeModelServer()
    with pytest.raises(RuntimeError):
        _ = server.base_url
    with server:
        port = server.port
        assert server.base_url == f"http://127.0.0.1:{port}"
        assert server.openai_base_url == f"http://127.0.0.1:{port}/v1"
        assert server.anthropic_base_url == server.base_url
        assert server.gemini_base_url == server.base_url
        assert server.url_for("responses").endswith("/v1/responses")
        assert server.url_for(ApiKind.CHAT).endswith("/v1/chat/completions")
        assert server.url_for("anthropic").endswith("/v1/messages")
        assert server.url_for("gemini", model="g", stream=False).endswith(
            "/v1beta/models/g:generateContent"
        )
        assert server.url_for("models").endswith("/v1/models")
    with pytest.raises(RuntimeError):
        server.start()


@pytest.mark.anyio
async def test_async_context_manager(anyio_backend: str) -> None:
    async with FakeModelServer() as server:
        server.script("one", HttpFault.rate_limited(retry_after=3), Hang())
        async with httpx.AsyncClient(timeout=5) as client:
            r = await client.post(server.url_for("chat"), json=chat_body())
            assert r.json()["choices"][0]["message"]["content"] == "one"
            r = await client.post(server.url_for("chat"), json=chat_body())
            assert r.status_code == 429
            assert r.headers["retry-after"] == "3"
            with anyio.move_on_after(0.3) as scope:
                await client.post(server.url_for("chat"), json=chat_body())
            assert scope.cancelled_caught
            await anyio.to_thread.run_sync(server.wait_for_requests, 3)
        started = time.monotonic()
    assert time.monotonic() - started < 1.5  # left with a hung request open
    assert len(server.requests) == 3


def test_chained_tool_calls(server: FakeModelServer) -> None:
    server.reply(
        ToolCallReply("a", {}, call_id="c1", then=ToolCallReply("b", {}, call_id="c2", then="end"))
    )
    chat = server.url_for("chat")
    body = chat_body()
    answers = []
    for _ in range(3):
        msg = post(chat, body).json()["choices"][0]["message"]
        answers.append(
            msg["tool_calls"][0]["function"]["name"] if msg.get("tool_calls") else msg["content"]
        )
        if msg.get("tool_calls"):
            call_id = msg["tool_calls"][0]["id"]
            body["messages"] += [
                {"role": "assistant", "tool_calls": msg["tool_calls"]},
                {"role": "tool", "tool_call_id": call_id, "content": f"result of {call_id}"},
            ]
    assert answers == ["a", "b", "end"]
    assert server.model_requests[2].tool_results == ("result of c2",)
