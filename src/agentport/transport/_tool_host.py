"""The caller's Python functions served to one CLI run as an MCP server (`serve_functions`).

An agent CLI calls tools over MCP; a function of the calling program lives in this process.
So for the length of one call agentport serves the call's `functions` with the official MCP
SDK (`MCPServer`, streamable HTTP) on a fresh 127.0.0.1 port, behind a bearer token made for
this call, and hands the CLI an `McpServer(url=..., headers={"Authorization": ...})` like any
other server. The server runs in the caller's event loop (a sync function runs in a worker
thread, so a slow one blocks nothing), and it is shut down, its socket closed, when the call
ends: no port and no process outlive the call.

An exception in a function is the tool's error (`isError`), never the run's: the agent sees
`<ExceptionType>: <message>` (redacted like every error agentport shows) and goes on.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import inspect
import secrets
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import anyio
from pydantic import SecretStr

from ..core import FUNCTIONS_SERVER, McpServer, ToolFunction, redact

__all__ = ["serve_functions"]

_PATH = "/mcp"


def _as_tool(fn: ToolFunction) -> ToolFunction:
    """*fn* with its exceptions turned into the SDK's `ToolError` carrying the exception's
    type and (redacted) message: the SDK hides an unexpected exception's text from the
    client, but a caller's function raises to tell the agent what went wrong."""
    from mcp.server.mcpserver.exceptions import ToolError

    def said(exc: Exception) -> ToolError:
        return ToolError(redact(f"{type(exc).__name__}: {exc}"))

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except ToolError:
                raise
            except Exception as exc:
                raise said(exc) from exc

        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except Exception as exc:
            raise said(exc) from exc

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


@contextlib.asynccontextmanager
async def serve_functions(functions: Sequence[ToolFunction]) -> AsyncIterator[McpServer]:
    """Serve *functions* (annotated callables; `CompletionConfig.functions`) as the MCP
    server `functions` on 127.0.0.1 for the block's duration; yields the `McpServer` a CLI
    is given (its `Authorization` header is the per-call token, kept secret).

    Raises `ImportError` naming the `mcp` extra when the MCP SDK is not installed."""
    try:
        import uvicorn
        from mcp.server.mcpserver import MCPServer
        from mcp.server.transport_security import TransportSecuritySettings
    except ImportError as exc:  # pragma: no cover - the extra is part of the test env
        raise ImportError(
            "CompletionConfig.functions needs the MCP SDK: pip install 'agentport[mcp]'"
        ) from exc

    server: MCPServer[Any] = MCPServer(FUNCTIONS_SERVER, log_level="WARNING")
    for fn in functions:
        server.add_tool(_as_tool(fn), name=fn.__name__)
    token = secrets.token_urlsafe(32)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"127.0.0.1:{port}"],
        allowed_origins=[f"http://127.0.0.1:{port}"],
    )
    app = server.streamable_http_app(streamable_http_path=_PATH, transport_security=security)
    config = uvicorn.Config(
        _Bearer(app, token),
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    web = _quiet_server_class()(config)
    stopped = anyio.Event()

    async def run() -> None:
        try:
            await web.serve(sockets=[sock])
        finally:
            stopped.set()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        try:
            with anyio.fail_after(10):
                # uvicorn says it is listening only through this flag
                while not web.started and not stopped.is_set():  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            if stopped.is_set():
                raise RuntimeError("the functions MCP server did not start")
            # built without validation: the token dies with the call, so it is not added
            # to the process-wide redaction list (which every call would grow)
            yield McpServer.model_construct(
                name=FUNCTIONS_SERVER,
                url=f"http://127.0.0.1:{port}{_PATH}",
                headers={"Authorization": SecretStr(f"Bearer {token}")},
            )
        finally:
            # a graceful stop first (open streams closed, the SDK's session manager shut
            # down), bounded; then whatever is left is cancelled
            web.should_exit = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await stopped.wait()
            group.cancel_scope.cancel()
            sock.close()
