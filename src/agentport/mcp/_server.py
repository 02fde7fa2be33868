"""Build and run the agentport MCP server (official MCP Python SDK, `MCPServer`).

Transports: stdio (default) and streamable HTTP on 127.0.0.1. A non-loopback HTTP bind needs
a bearer token (`--token` or `AGENTPORT_MCP_TOKEN`); when a token is set, every HTTP request
must carry `Authorization: Bearer <token>` (compared in constant time), loopback included.
"""

from __future__ import annotations

import hmac
import ipaddress
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CallToolResult, ErrorData, JSONRPCError, TextContent
from pydantic import ValidationError

from .. import __version__
from ._errors import Roots, flatten_sdk_error
from ._events import BoundedEventStore
from ._jobs import Jobs
from ._refine import RefineTools
from ._tools import AdapterFactory, CoreTools

__all__ = ["build_server", "check_bind", "is_loopback", "serve_http", "serve_stdio"]

INSTRUCTIONS = (
    "agentport: call any configured LLM backend (`complete`), run verified deep research on a "
    "local folder or the web as a job (`research_start` -> `research_wait`/`research_status` "
    "-> `research_result`, `research_cancel`; `budget` caps a run), and refine a graphify "
    "knowledge graph with DeepRefine (`refine` -> show `review` to the user -> `apply` with "
    "approve=true and the exact reviewed actions). Paths must lie inside the server's roots: "
    "{roots}."
)


def _default_adapter(backend: str | None) -> Any:
    from ..factory import create_llm_adapter

    return create_llm_adapter(backend)


INVALID_PARAMS = -32602  # JSON-RPC 2.0 section 5.1


class _OneLineErrors:
    """Server middleware: every tool error leaves as one line `<ErrorKind>: <message>`,
    including the SDK's own (unknown tool, arguments that fail the schema); an unknown
    prompt or resource is `-32602 Invalid params` (the MCP spec's code), not code 0."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        try:
            result = await call_next(ctx)
        except ValueError as exc:  # the SDK's "Unknown prompt/resource" leave as code 0
            if ctx.method in ("prompts/get", "resources/read") and "Unknown" in str(exc):
                raise MCPError(INVALID_PARAMS, str(exc)) from None
            raise
        if ctx.method != "tools/call":
            return result
        if isinstance(result, CallToolResult) and result.is_error:
            text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
            return result.model_copy(
                update={"content": [TextContent(type="text", text=flatten_sdk_error(text))]}
            )
        if isinstance(result, dict) and result.get("isError"):
            parts = result.get("content") or []
            text = " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
            return {**result, "content": [{"type": "text", "text": flatten_sdk_error(text)}]}
        return result


def build_server(
    roots: Sequence[str | Path],
    adapter_for: AdapterFactory | None = None,
) -> MCPServer[Any]:
    """The server with every tool registered. *roots*: folders paths may lie in;
    *adapter_for*: backend name (None = configured default) -> `LLMAdapter` (default
    `agentport.create_llm_adapter`; tests pass scripted adapters)."""
    allowed = Roots(roots)
    jobs = Jobs()
    factory = adapter_for or _default_adapter

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tg:
            jobs.attach(tg)
            try:
                yield {"jobs": jobs}
            finally:
                jobs.attach(None)  # the connection (stdio) or the server ended: stop its jobs
                tg.cancel_scope.cancel()

    server: MCPServer[Any] = MCPServer(
        name="agentport",
        version=__version__,
        instructions=INSTRUCTIONS.format(roots=", ".join(allowed.describe()) or "none"),
        lifespan=lifespan,
        middleware=[_OneLineErrors()],
        log_level="WARNING",
    )
    CoreTools(allowed, jobs, factory).register(server)
    RefineTools(allowed, factory).register(server)
    server.jobs = jobs  # type: ignore[attr-defined]  # for tests and the benchmark
    return server


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> str | None:
    """Why *host* may not be bound (one line), or None: a non-loopback bind needs a token."""
    if not is_loopback(host) and not token:
        return (
            f"--http {host}: refusing a non-loopback bind without a token; "
            "set --token or AGENTPORT_MCP_TOKEN (HTTP clients then send it as a bearer token)"
        )
    return None


class _AnsweringReader:
    """The stdio transport's read stream, answering what the SDK only drops: a line that is
    not JSON (or nests too deep) gets `-32700 Parse error`, a message that is not a valid
    JSON-RPC request `-32600 Invalid Request`, with the request's id when it has one (JSON-RPC
    2.0 section 5.1). The streamable-HTTP transport answers these itself."""

    def __init__(self, inner: Any, write: Any) -> None:
        self.inner, self.write = inner, write

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self.inner.receive()
            if not isinstance(item, Exception):
                return item
            await self.write.send(SessionMessage(_error_for(item)))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> _AnsweringReader:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _AnsweringReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _error_for(exc: Exception) -> JSONRPCError:
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    parse = not errors or any(e.get("type") == "json_invalid" for e in errors)
    ident: Any = None
    for e in errors:
        given = e.get("input")
        if isinstance(given, dict) and isinstance(given.get("id"), int | str):
            ident = given["id"]
            break
    code, what = (-32700, "Parse error") if parse else (-32600, "Invalid Request")
    detail = (errors[0].get("msg") if errors else str(exc)) or type(exc).__name__
    return JSONRPCError(
        jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=f"{what}: {detail}"[:300])
    )


async def _run_stdio(server: MCPServer[Any]) -> None:
    lowlevel = server._lowlevel_server  # what `MCPServer.run_stdio_async` runs, as well
    async with stdio_server() as (read, write):
        await lowlevel.run(
            _AnsweringReader(read, write), write, lowlevel.create_initialization_options()
        )


def serve_stdio(server: MCPServer[Any]) -> None:
    anyio.run(_run_stdio, server)


class _BearerToken:
    """ASGI middleware: 401 unless `Authorization: Bearer <token>` matches."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "config: missing or wrong bearer token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


MAX_REQUEST_BYTES = 1 << 20  # one JSON-RPC message; a prompt of ~250k words fits
MAX_SESSIONS = 64
RETRY_MS = 1000  # the SSE `retry:` a client waits before reconnecting


def rebinding_protection(host: str) -> TransportSecuritySettings | None:
    """Host/Origin checks for a loopback bind (DNS rebinding, MCP spec "Security Warning"):
    only loopback names and addresses, the bound one included (every 127.0.0.0/8 address,
    `[::1]`), any port. None for a non-loopback bind, which needs a bearer token instead."""
    if not is_loopback(host):
        return None
    bound = host.strip("[]")
    shown = f"[{bound}]" if ":" in bound else bound
    hosts = sorted({shown, "127.0.0.1", "localhost", "[::1]"})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts],
        allowed_origins=[f"http://{h}:*" for h in hosts],
    )


def http_app(server: MCPServer[Any], host: str, token: str | None) -> Any:
    """The streamable-HTTP ASGI app at `/mcp`: Host/Origin checked on every loopback bind,
    requests over `MAX_REQUEST_BYTES` refused, at most `MAX_SESSIONS` sessions, behind the
    token check when a token is set; every SSE event has an id and a stream tells the
    client to reconnect after `RETRY_MS`, so a dropped stream resumes with `Last-Event-ID`
    (`BoundedEventStore`)."""
    app = server.streamable_http_app(
        host=host.strip("[]"),
        event_store=BoundedEventStore(),  # SSE event ids: a dropped stream resumes
        retry_interval=RETRY_MS,
        transport_security=rebinding_protection(host),
        max_request_body_size=MAX_REQUEST_BYTES,
        max_sessions=MAX_SESSIONS,
    )
    return _BearerToken(app, token) if token else app


def serve_http(server: MCPServer[Any], host: str, port: int, token: str | None) -> None:
    import uvicorn

    config = uvicorn.Config(
        http_app(server, host, token), host=host.strip("[]"), port=port, log_level="warning"
    )
    print(f"agentport mcp: streamable HTTP on http://{host}:{port}/mcp", file=sys.stderr)
    anyio.run(uvicorn.Server(config).serve)
