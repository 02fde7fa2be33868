"""MCP servers agentport serves to one CLI run on 127.0.0.1 (`serve_mcp`), and the caller's
Python functions served that way (`serve_functions`).

An agent CLI calls tools over MCP; a function of the calling program lives in this process.
So for the length of one call agentport serves an app of the official MCP SDK (streamable
HTTP) on a fresh 127.0.0.1 port, behind a bearer token made for this call, and hands the CLI
its URL and token like any other server. The server runs under uvicorn in a thread of its own
with its own event loop, so the caller's loop may be asyncio or trio; what a tool does runs
back on the caller's loop (`on_caller`), and it is shut down, its socket closed, when the
call ends: no port and no thread outlive the call.

An exception in a function is the tool's error (`isError`), never the run's: the agent sees
`<ExceptionType>: <message>` (redacted like every error agentport shows) and goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import inspect
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from pydantic import SecretStr

from ..core import FUNCTIONS_SERVER, McpServer, ToolFunction, redact

__all__ = ["Served", "on_caller", "serve_functions", "serve_mcp"]

_PATH = "/mcp"
_START_S = 10.0  # the server's start-up bound
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Served:
    """Where a `serve_mcp` server listens (`url`, ending in `/mcp`), the token it requires
    (`Authorization: Bearer <token>`), and the caller's loop its tools run on."""

    url: str
    token: str
    caller: anyio.lowlevel.EventLoopToken


async def on_caller(served: Served, call: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Await *call* on the caller's event loop (from a tool, on the server's loop): a
    worker thread of the server's loop waits for it, so the server goes on serving."""

    def there() -> _T:
        return anyio.from_thread.run(call, token=served.caller)

    return await anyio.to_thread.run_sync(there)


def _as_tool(fn: ToolFunction, served: Callable[[], Served]) -> ToolFunction:
    """*fn* as a tool that runs on the caller's loop (an async function there, a sync one in
    a worker thread of it), with its exceptions turned into the SDK's `ToolError` carrying
    the exception's type and (redacted) message: the SDK hides an unexpected exception's
    text from the client, but a caller's function raises to tell the agent what went
    wrong."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        async def call() -> Any:
            if inspect.iscoroutinefunction(fn):
                return await fn(*args, **kwargs)
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

        try:
            return await on_caller(served(), call)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(redact(f"{type(exc).__name__}: {exc}")) from exc

    return run


class _Bearer:
    """ASGI middleware: 401 unless `Authorization: Bearer <token>` (constant-time compare)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"bearer token required"})
                return
        await self.app(scope, receive, send)


def _quiet_server_class() -> Any:
    import uvicorn

    class QuietServer(uvicorn.Server):
        """A uvicorn server that leaves the process's signal handlers alone: it serves one
        call inside the caller's program, whose Ctrl+C is its own."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return QuietServer


class _BuiltInLoop:
    """The SDK's app, built on its first ASGI call (the lifespan start-up), so on the
    server thread's loop: its session manager makes locks of the loop it is built on."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self.build = build
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            self.app = self.build()
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def serve_mcp(name: str, build: Callable[[int], Any]) -> AsyncIterator[Served]:
    """Serve the MCP SDK app *build* makes for a port (a streamable HTTP app at `/mcp`;
    called on the server's own loop) on 127.0.0.1 behind a fresh bearer token, for the
    block's duration, in a thread named *name* with its own event loop. Raises
    `ImportError` naming the `mcp` extra without uvicorn, `RuntimeError` when the server
    does not start (`TimeoutError` after 10 s)."""
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - the extra is part of the test env
        raise ImportError("this needs the MCP SDK: pip install 'agentport[mcp]'") from exc

    token = secrets.token_urlsafe(32)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        _Bearer(_BuiltInLoop(functools.partial(build, port)), token),
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    web = _quiet_server_class()(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(web.serve(sockets=[sock])), name=name, daemon=True
    )
    thread.start()
    try:
        with anyio.fail_after(_START_S):
            # uvicorn says it is listening only through this flag
            while not web.started:
                if not thread.is_alive():
                    raise RuntimeError(f"the MCP server {name} did not start")
                await anyio.sleep(0.01)
        yield Served(f"http://127.0.0.1:{port}{_PATH}", token, anyio.lowlevel.current_token())
    finally:
        # a graceful stop (open streams closed, the SDK's session manager shut down), bounded
        web.should_exit = True
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await anyio.to_thread.run_sync(thread.join, 5.0)
        sock.close()


@contextlib.asynccontextmanager
async def serve_functions(functions: Sequence[ToolFunction]) -> AsyncIterator[McpServer]:
    """Serve *functions* (annotated callables; `CompletionConfig.functions`) as the MCP
    server `functions` on 127.0.0.1 for the block's duration (`serve_mcp`); yields the
    `McpServer` a CLI is given (its `Authorization` header is the per-call token, kept
    secret).

    Raises `ImportError` naming the `mcp` extra when the MCP SDK is not installed."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.transport_security import TransportSecuritySettings
    except ImportError as exc:  # pragma: no cover - the extra is part of the test env
        raise ImportError(
            "CompletionConfig.functions needs the MCP SDK: pip install 'agentport[mcp]'"
        ) from exc
    serving: list[Served] = []

    def build(port: int) -> Any:
        server: MCPServer[Any] = MCPServer(FUNCTIONS_SERVER, log_level="WARNING")
        for fn in functions:
            server.add_tool(_as_tool(fn, lambda: serving[0]), name=fn.__name__)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"127.0.0.1:{port}"],
            allowed_origins=[f"http://127.0.0.1:{port}"],
        )
        return server.streamable_http_app(streamable_http_path=_PATH, transport_security=security)

    async with serve_mcp("agentport-functions", build) as served:
        serving.append(served)
        # built without validation: the token dies with the call, so it is not added to the
        # process-wide redaction list (which every call would grow)
        yield McpServer.model_construct(
            name=FUNCTIONS_SERVER,
            url=served.url,
            headers={"Authorization": SecretStr(f"Bearer {served.token}")},
        )
