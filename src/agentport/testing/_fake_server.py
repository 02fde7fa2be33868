"""`FakeModelServer`: a loopback HTTP server that speaks the model wire APIs agent CLIs and
HTTP clients use, answers from a script, injects faults and records every request.

It runs stdlib `http.server.ThreadingHTTPServer` in its own thread (one thread per
connection), so it works the same from sync tests and from async tests on asyncio or trio.
See docs/fake-model-server.md."""

from __future__ import annotations

import contextlib
import gzip
import json
import selectors
import socket
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import parse_qs, urlsplit

import anyio

from ._fake_replies import (
    DEFAULT_SIDE_RULES,
    STRUCTURED_TOOLS,
    CutStream,
    DropConnection,
    Hang,
    HttpFault,
    JsonReply,
    LargeReply,
    RecordedRequest,
    ReplyLike,
    ServerReply,
    SideRule,
    TextReply,
    ToolCallReply,
    check_reply,
    coerce_reply,
)
from ._fake_wire import (
    ApiKind,
    Classified,
    TokenUsage,
    ToolCallSpec,
    Turn,
    classify,
    error_body,
    render_json,
    render_stream,
)

__all__ = ["FakeModelServer"]

Predicate = Callable[[RecordedRequest], bool]


@dataclass
class _Entry:
    reply: ReplyLike
    apis: frozenset[ApiKind] | None
    when: Predicate | None
    remaining: int | None  # None: never used up

    def matches(self, req: RecordedRequest) -> bool:
        if self.apis is not None and req.api not in self.apis:
            return False
        return self.when is None or bool(self.when(req))


def _api_set(api: ApiKind | str | Iterable[ApiKind | str] | None) -> frozenset[ApiKind] | None:
    if api is None:
        return None
    if isinstance(api, ApiKind | str):
        return frozenset({ApiKind(api)})
    return frozenset(ApiKind(a) for a in api)


class _Stop(Exception):
    """The server is stopping (or the client went away): abandon this response."""


class FakeModelServer:
    """A scripted model server on 127.0.0.1 (a free port unless `port` is given).

    ```python
    with FakeModelServer() as server:
        server.reply("hello")                               # next model request gets "hello"
        server.reply(HttpFault.rate_limited(retry_after=1))  # …then a 429
        httpx.post(server.url_for("chat"), json={...})
        assert server.requests[0].api is ApiKind.CHAT
    ```

    Model requests (Responses, Chat Completions, Anthropic Messages, Gemini) take replies
    from a queue in order; an entry may be limited to some APIs (`api=`) or to requests a
    predicate accepts (`when=`), and the first matching entry wins. With no match the
    `default` reply answers. Side requests that a `SideRule` recognises (title generation,
    memory extraction, routing, quota probes) are answered by the rule and never consume the
    queue; model listings, token counts and health checks are answered built-in.
    """

    def __init__(
        self,
        *,
        default: ReplyLike = "ok",
        host: str = "127.0.0.1",
        port: int = 0,
        models: Iterable[str] = ("fake-model",),
        side_rules: Iterable[SideRule] | None = None,
        shutdown_timeout: float = 3.0,
    ) -> None:
        check_reply(default)
        self._initial_default: ReplyLike = default
        self._default: ReplyLike = default
        self._host = host
        self._port = port
        self.models: tuple[str, ...] = tuple(models)
        self.side_rules: tuple[SideRule, ...] = (
            DEFAULT_SIDE_RULES if side_rules is None else tuple(side_rules)
        )
        self.shutdown_timeout = shutdown_timeout
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: list[_Entry] = []
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._seq = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: dict[threading.Thread, socket.socket] = {}
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Bind and serve in a background thread. Returns self."""
        if self._httpd is not None or self._stopped:
            raise RuntimeError("a FakeModelServer can be started only once")
        httpd = _HTTPServer((self._host, self._port), self)
        self._httpd = httpd
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(
            target=self._accept_loop,
            name=f"FakeModelServer:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def _accept_loop(self) -> None:
        """Like `serve_forever`, but `stop()` wakes it at once through a socketpair
        instead of waiting for a poll interval."""
        httpd = self._httpd
        assert httpd is not None
        httpd.timeout = 0.0  # handle_request() must never block
        with selectors.DefaultSelector() as sel:
            sel.register(httpd.socket, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                ready = sel.select()
                if self._stopping.is_set():
                    break
                if any(key.fileobj is httpd.socket for key, _ in ready):
                    httpd.handle_request()

    def stop(self) -> None:
        """Stop serving; bounded by `shutdown_timeout` even with hanging requests open.
        Idempotent."""
        httpd = self._httpd
        if httpd is None or self._stopped:
            self._stopped = True
            return
        self._stopped = True
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        deadline = time.monotonic() + self.shutdown_timeout
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            conns = list(self._conns.items())
        for _, sock in conns:
            # Wakes handler threads blocked reading a keep-alive connection or writing to
            # a client that stopped reading.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread, _ in conns:
            thread.join(max(0.0, deadline - time.monotonic()))
        httpd.server_close()
        self._wake_r.close()
        self._wake_w.close()
        with self._changed:
            self._changed.notify_all()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.stop)

    # ------------------------------------------------------------------ addresses

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` (no trailing slash, no path)."""
        return f"http://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for OpenAI-style clients and CLIs (`…/v1`): OPENAI_BASE_URL, codex
        `model_providers.<id>.base_url`, opencode `options.baseURL`, pi, copilot BYOK."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """ANTHROPIC_BASE_URL (no `/v1`: the SDK adds `/v1/messages`)."""
        return self.base_url

    @property
    def gemini_base_url(self) -> str:
        """GOOGLE_GEMINI_BASE_URL (no version: the SDK adds `/v1beta/models/…`)."""
        return self.base_url

    def url_for(self, api: ApiKind | str, *, model: str = "fake-model", stream: bool = True) -> str:
        """The full endpoint URL of `api` (Gemini's depends on `model` and `stream`)."""
        kind = ApiKind(api)
        if kind is ApiKind.RESPONSES:
            return f"{self.openai_base_url}/responses"
        if kind is ApiKind.CHAT:
            return f"{self.openai_base_url}/chat/completions"
        if kind is ApiKind.ANTHROPIC:
            return f"{self.base_url}/v1/messages"
        if kind is ApiKind.GEMINI:
            if stream:
                return f"{self.base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse"
            return f"{self.base_url}/v1beta/models/{model}:generateContent"
        if kind is ApiKind.MODELS:
            return f"{self.openai_base_url}/models"
        if kind is ApiKind.COUNT_TOKENS:
            return f"{self.base_url}/v1/messages/count_tokens"
        return self.base_url

    # ------------------------------------------------------------------ scripting

    def reply(
        self,
        reply: ReplyLike,
        *,
        api: ApiKind | str | Iterable[ApiKind | str] | None = None,
        when: Predicate | None = None,
        times: int | None = 1,
    ) -> Self:
        """Queue `reply` for the next model request that matches `api` and `when`;
        `times=N` serves it N times, `times=None` forever (until `reset()`)."""
        check_reply(reply)
        if times is not None and times < 1:
            raise ValueError("times must be >= 1 or None")
        entry = _Entry(reply, _api_set(api), when, times)
        with self._lock:
            self._queue.append(entry)
        return self

    def script(
        self,
        *replies: ReplyLike,
        api: ApiKind | str | Iterable[ApiKind | str] | None = None,
    ) -> Self:
        """Queue several replies, each served once, in order."""
        for r in replies:
            self.reply(r, api=api)
        return self

    @property
    def default(self) -> ReplyLike:
        """The reply used when no queued entry matches (settable)."""
        return self._default

    @default.setter
    def default(self, reply: ReplyLike) -> None:
        check_reply(reply)
        self._default = reply

    def set_default(self, reply: ReplyLike) -> Self:
        self.default = reply
        return self

    @property
    def pending(self) -> int:
        """How many queued entries have not been used up."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget the queue and the recorded requests; restore the initial default."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._errors.clear()
            self._default = self._initial_default

    # ------------------------------------------------------------------ recordings

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a snapshot copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """Scripted model turns only: model APIs, side requests left out."""
        return [r for r in self.requests if r.api.is_model_api and r.side is None]

    def requests_for(self, api: ApiKind | str) -> list[RecordedRequest]:
        kind = ApiKind(api)
        return [r for r in self.requests if r.api is kind]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `count` requests arrived (TimeoutError otherwise). From
        async code: `await anyio.to_thread.run_sync(server.wait_for_requests, n)`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._stopped:
                    raise TimeoutError(
                        f"{len(self._requests)} of {count} requests after {timeout} s"
                    )
                self._changed.wait(left)
            return list(self._requests)

    # ------------------------------------------------------------------ internals

    def _next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def _choose(self, req: RecordedRequest) -> tuple[ServerReply, str | None]:
        """Pick the answer for a model request: a side rule, a queued entry, or the default.
        Consumes the entry and queues a tool call's `then`."""
        for rule in self.side_rules:
            try:
                hit = rule.match(req)
            except Exception:
                hit = False
            if hit:
                return coerce_reply(rule.reply, req), rule.name
        with self._lock:
            chosen: ReplyLike | None = None
            for i, entry in enumerate(self._queue):
                if entry.matches(req):
                    chosen = entry.reply
                    if entry.remaining is not None:
                        entry.remaining -= 1
                        if entry.remaining <= 0:
                            del self._queue[i]
                    break
            if chosen is None:
                chosen = self._default
        reply = coerce_reply(chosen, req)
        if isinstance(reply, ToolCallReply) and reply.then is not None:
            follow = _Entry(
                reply.then, frozenset({req.api}), lambda r: r.has_tool_result, remaining=1
            )
            with self._lock:
                self._queue.insert(0, follow)
        return reply, None

    @property
    def errors(self) -> list[str]:
        """Internal errors of the server itself while answering (should stay empty)."""
        with self._lock:
            return list(self._errors)

    def _note_error(self, message: str) -> None:
        with self._lock:
            self._errors.append(message)

    def _record(self, req: RecordedRequest) -> None:
        with self._changed:
            self._requests.append(req)
            self._changed.notify_all()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], owner: FakeModelServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name="FakeModelServer-conn",
            daemon=True,
        )
        with self.owner._lock:
            self.owner._conns[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self.owner._lock:
                self.owner._conns.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients dropping connections mid-answer is normal here; stay quiet.
        pass


def _usage_for(reply: Any, req: RecordedRequest, text: str) -> TokenUsage:
    usage = getattr(reply, "usage", None)
    if isinstance(usage, TokenUsage):
        return usage
    return TokenUsage(input_tokens=max(1, len(req.raw) // 4), output_tokens=max(1, len(text) // 4))


def _call_id(api: ApiKind) -> str:
    if api is ApiKind.ANTHROPIC:
        return f"toolu_fake_{uuid.uuid4().hex[:20]}"
    return f"call_{uuid.uuid4().hex[:24]}"


def _turn_for(reply: ServerReply, req: RecordedRequest) -> Turn:
    model = req.model or "fake-model"
    if isinstance(reply, JsonReply):
        text = reply.text
        offered = set(req.tool_names)
        tool = next((t for t in STRUCTURED_TOOLS if t in offered), None)
        if reply.structured_tool and tool is not None:
            call = ToolCallSpec(tool, text, _call_id(req.api))
            return Turn(None, (call,), _usage_for(reply, req, text), model)
        return Turn(text, (), _usage_for(reply, req, text), model, reply.chunk_size)
    if isinstance(reply, TextReply):
        return Turn(reply.text, (), _usage_for(reply, req, reply.text), model, reply.chunk_size)
    if isinstance(reply, LargeReply):
        text = reply.text
        return Turn(text, (), _usage_for(reply, req, text), model, reply.chunk_size)
    if isinstance(reply, ToolCallReply):
        args = reply.arguments_json
        call = ToolCallSpec(reply.name, args, reply.call_id or _call_id(req.api))
        usage = _usage_for(reply, req, (reply.text or "") + args)
        return Turn(reply.text, (call,), usage, model)
    if isinstance(reply, CutStream | Hang):
        return Turn(reply.text, (), _usage_for(reply, req, reply.text), model, None)
    raise TypeError(f"{reply!r} has no model turn")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeModelServer/1"
    sys_version = ""
    disable_nagle_algorithm = True

    @property
    def owner(self) -> FakeModelServer:
        return cast(_HTTPServer, self.server).owner

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # One entry point for every method.
    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_OPTIONS(self) -> None:
        self._dispatch()

    # ------------------------------------------------------------------ request

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts: list[bytes] = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
            data = b"".join(parts)
        else:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length > 0 else b""
        encoding = (self.headers.get("Content-Encoding") or "").lower().strip()
        try:
            if encoding == "gzip":
                data = gzip.decompress(data)
            elif encoding == "deflate":
                data = zlib.decompress(data)
        except (OSError, zlib.error):
            pass
        return data

    def _dispatch(self) -> None:
        owner = self.owner
        split = urlsplit(self.path)
        path = split.path or "/"
        query = parse_qs(split.query, keep_blank_values=True)
        raw = self._read_body()
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                bad_json = True
        headers = {k.lower(): v for k, v in self.headers.items()}
        c = classify(self.command, path, query, body, headers)
        req = RecordedRequest(
            seq=owner._next_seq(),
            method=self.command,
            path=path,
            query=query,
            headers=headers,
            body=body,
            raw=raw,
            api=c.api,
            stream=c.stream,
            model=c.model,
            received_at=time.time(),
        )
        try:
            if not c.api.is_model_api:
                owner._record(replace(req, side=c.api.value, served="builtin"))
                self._builtin(req)
                return
            if bad_json or not isinstance(body, dict):
                owner._record(replace(req, served="HttpFault(400)"))
                self._send_json(400, error_body(c.api, 400, "fake: request body is not JSON"))
                return
            reply, side = owner._choose(req)
            owner._record(replace(req, side=side, served=reply.describe()))
            self._serve(req, c, reply)
        except _Stop:
            self._abort()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self._abort()
        except Exception as exc:  # a bug in the fake server: make it visible, never hang
            owner._note_error(f"{req.method} {req.path}: {exc!r}")
            self._abort()

    # ------------------------------------------------------------------ answers

    def _builtin(self, req: RecordedRequest) -> None:
        owner = self.owner
        if req.api is ApiKind.HEALTH:
            if req.method == "HEAD":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self._send_json(200, {"status": "ok"})
        elif req.api is ApiKind.MODELS:
            gemini = "v1beta" in req.path or "x-goog-api-key" in req.headers
            if req.model is not None:
                if gemini:
                    self._send_json(200, _gemini_model(req.model))
                else:
                    self._send_json(200, _openai_model(req.model))
                return
            data = [_openai_model(m) for m in owner.models]
            listing: dict[str, Any] = {
                "object": "list",
                "data": data,
                "has_more": False,
                "first_id": owner.models[0] if owner.models else None,
                "last_id": owner.models[-1] if owner.models else None,
            }
            if gemini:
                listing = {"models": [_gemini_model(m) for m in owner.models]}
            self._send_json(200, listing)
        elif req.api is ApiKind.COUNT_TOKENS:
            n = max(1, len(req.raw) // 4)
            if "v1beta" in req.path or ":countTokens" in req.path:
                self._send_json(200, {"totalTokens": n})
            else:
                self._send_json(200, {"input_tokens": n})
        else:
            self._send_json(
                404,
                {
                    "error": {
                        "message": f"fake: no route for {req.method} {req.path}",
                        "type": "invalid_request_error",
                        "code": "not_found",
                    }
                },
            )

    def _wait(self, seconds: float) -> None:
        if seconds > 0 and self.owner._stopping.wait(seconds):
            raise _Stop

    def _serve(self, req: RecordedRequest, c: Classified, reply: ServerReply) -> None:
        self._wait(reply.delay)
        if isinstance(reply, DropConnection):
            if reply.reset:
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
            self._abort()
            return
        if isinstance(reply, HttpFault):
            headers = dict(reply.headers)
            if reply.retry_after is not None:
                ra = reply.retry_after
                headers.setdefault("Retry-After", str(int(ra)) if ra == int(ra) else str(ra))
                headers.setdefault("retry-after-ms", str(int(ra * 1000)))
            if reply.body is not None:
                body = reply.body
            else:
                body = error_body(c.api, reply.status, reply.error_message)
            self._send_json(reply.status, body, headers)
            return
        turn = _turn_for(reply, req)
        limit: int | None = None
        if isinstance(reply, CutStream):
            limit = reply.after_deltas
        elif isinstance(reply, Hang):
            if reply.after_deltas is None:
                self._hang()
                return
            limit = reply.after_deltas
        chunk_delay = getattr(reply, "chunk_delay", 0.0)
        if c.stream and c.sse:
            include_usage = True
            if c.api is ApiKind.CHAT:
                so = req.body.get("stream_options") if isinstance(req.body, dict) else None
                include_usage = isinstance(so, dict) and so.get("include_usage") is True
            events = render_stream(c.api, turn, include_usage=include_usage)
            self._send_sse(events, limit=limit, chunk_delay=chunk_delay)
        else:
            body = render_json(c.api, turn, gemini_array=c.stream)
            data = json.dumps(body).encode()
            if limit is not None:
                self._send_partial(data)
            else:
                self._send_bytes(200, data, "application/json")
        if isinstance(reply, CutStream):
            self._abort()
        elif isinstance(reply, Hang):
            self._hang()

    def _hang(self) -> None:
        self.owner._stopping.wait()
        raise _Stop

    def _abort(self) -> None:
        """Close without finishing the response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _common_headers(self) -> None:
        self.send_header("x-request-id", f"req_fake_{self.owner._seq}")
        self.send_header("request-id", f"req_fake_{self.owner._seq}")

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(body).encode(), "application/json", headers)

    def _send_bytes(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self._common_headers()
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_partial(self, data: bytes) -> None:
        """Headers promising the whole body, then only half of it."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._common_headers()
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])

    def _send_sse(
        self, events: Iterator[tuple[bytes, bool]], *, limit: int | None, chunk_delay: float
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._common_headers()
        self.end_headers()
        deltas = 0
        for data, is_delta in events:
            # A fault cuts right after the `limit`-th delta (limit 0: before the first one).
            if limit is not None and deltas >= limit and (is_delta or deltas > 0):
                return
            if is_delta:
                if deltas and chunk_delay:
                    self._wait(chunk_delay)
                deltas += 1
            if self.owner._stopping.is_set():
                raise _Stop
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        if limit is not None:
            return  # a fault: never terminate the chunked body
        self.wfile.write(b"0\r\n\r\n")


def _openai_model(model_id: str) -> dict[str, Any]:
    return {
        "id": model_id,
        "object": "model",
        "created": 0,
        "owned_by": "fake",
        "type": "model",
        "display_name": model_id,
        "created_at": "2025-01-01T00:00:00Z",
    }


def _gemini_model(model_id: str) -> dict[str, Any]:
    return {
        "name": f"models/{model_id}",
        "baseModelId": model_id,
        "version": "001",
        "displayName": model_id,
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    }
