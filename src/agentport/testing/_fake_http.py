"""The HTTP side of `FakeModelServer`: the threaded `http.server` subclass and the request
handler that classifies a request, records it, asks the server for its reply and writes it in
the request's wire format (SSE stream or JSON, with faults: cuts, hangs, drops, HTTP errors).
Private to `agentport.testing`."""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast
from urllib.parse import parse_qs, urlsplit

from ._fake_replies import (
    STRUCTURED_TOOLS,
    CutStream,
    DropConnection,
    Hang,
    HttpFault,
    JsonReply,
    LargeReply,
    RecordedRequest,
    ServerReply,
    TextReply,
    ToolCallReply,
)
from ._fake_websearch import WebSearchReply
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

__all__: list[str] = []


class Owner(Protocol):
    """What the HTTP side needs of the `FakeModelServer` that owns it (`_fake_server`
    implements it; naming it here keeps the import one-way)."""

    models: tuple[str, ...]
    _lock: threading.Lock
    _conns: dict[threading.Thread, socket.socket]
    _seq: int
    _stopping: threading.Event

    def _next_seq(self) -> int: ...
    def _choose(self, req: RecordedRequest) -> tuple[ServerReply, str | None]: ...
    def _note_error(self, message: str) -> None: ...
    def _record(self, req: RecordedRequest) -> None: ...


class _Stop(Exception):
    """The server is stopping (or the client went away): abandon this response."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], owner: Owner) -> None:
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
    if isinstance(reply, WebSearchReply):  # server-side web calls, then the answer
        return reply.turn(req, lambda inner: _turn_for(inner, req))
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
        call_id = reply.call_id or _call_id(req.api)
        call = ToolCallSpec(reply.name, args, call_id, reply.namespace)
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
    def owner(self) -> Owner:
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
        extra = dict(getattr(reply, "headers", None) or {})
        if c.stream and c.sse:
            include_usage = True
            if c.api is ApiKind.CHAT:
                so = req.body.get("stream_options") if isinstance(req.body, dict) else None
                include_usage = isinstance(so, dict) and so.get("include_usage") is True
            events = render_stream(c.api, turn, include_usage=include_usage)
            self._send_sse(events, limit=limit, chunk_delay=chunk_delay, headers=extra)
        else:
            body = render_json(c.api, turn, gemini_array=c.stream)
            data = json.dumps(body).encode()
            if limit is not None:
                self._send_partial(data)
            else:
                self._send_bytes(200, data, "application/json", extra)
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
        self,
        events: Iterator[tuple[bytes, bool]],
        *,
        limit: int | None,
        chunk_delay: float,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._common_headers()
        for k, v in (headers or {}).items():
            self.send_header(k, v)
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
