"""`FakeModelServer`: a loopback HTTP server that speaks the model wire APIs agent CLIs and
HTTP clients use, answers from a script, injects faults and records every request.

It runs stdlib `http.server.ThreadingHTTPServer` in its own thread (one thread per
connection), so it works the same from sync tests and from async tests on asyncio or trio.
The HTTP handling lives in `_fake_http`, the wire shapes in `_fake_wire`.
See docs/fake-model-server.md."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import anyio

from ._fake_http import _HTTPServer
from ._fake_replies import (
    DEFAULT_SIDE_RULES,
    RecordedRequest,
    ReplyLike,
    ServerReply,
    SideRule,
    ToolCallReply,
    check_reply,
    coerce_reply,
)
from ._fake_wire import ApiKind

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
