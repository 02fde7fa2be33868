"""The MCP server over stdio: the SDK's transport, with every line bounded and answered.

The SDK reads stdin line by line with no size limit (a 60 MB line was read whole) and drops
a line it cannot parse without an answer. Here stdin is read by `BoundedLines`, which hands
the SDK at most `max_bytes` per message (the rest of a longer line is skipped, never held),
and `AnsweringReader` answers every message the SDK could not take: not JSON or nested too
deep `-32700 Parse error`, not a JSON-RPC request or too large `-32600 Invalid Request`
(JSON-RPC 2.0 section 5.1), with the request's id when it has one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError
from pydantic import ValidationError

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "AnsweringReader", "BoundedLines", "serve_stdio"]

#: one JSON-RPC message (a stdio line or an HTTP body); a prompt of ~250k words fits
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
_SKIP_CHUNK = 1 << 16


class _Oversize:
    """Stands in for a line over the cap. The SDK's reader fails to parse it (it is not
    text), and the error names it: a client cannot forge one by what it sends."""

    def __init__(self, size: int, limit: int) -> None:
        self.size, self.limit = size, limit


class BoundedLines:
    """stdin as the SDK's stdio transport iterates it: one line (str) per message, each at
    most *limit* bytes; a longer line is read through in chunks and dropped, and an
    `_Oversize` takes its place."""

    def __init__(self, raw: BinaryIO, limit: int) -> None:
        if limit <= 0:
            raise ValueError("the message size limit must be a positive number of bytes")
        self.raw, self.limit = raw, limit

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> Any:
        line = await anyio.to_thread.run_sync(self._read, abandon_on_cancel=True)
        if line is None:
            raise StopAsyncIteration
        return line

    def _read(self) -> str | _Oversize | None:
        data = self.raw.readline(self.limit + 1)
        if not data:
            return None
        if len(data) <= self.limit or data.endswith(b"\n"):
            return data.decode("utf-8", errors="replace")
        size = len(data)
        while chunk := self.raw.readline(_SKIP_CHUNK):
            size += len(chunk)
            if chunk.endswith(b"\n"):
                size -= 1
                break
        return _Oversize(size, self.limit)


class AnsweringReader:
    """The stdio transport's read stream, answering what the SDK only drops (see the
    module docstring). The streamable-HTTP transport answers these itself."""

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
            await self.write.send(SessionMessage(error_for(item)))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> AnsweringReader:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def error_for(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error answering a message the SDK could not parse or validate."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    ident: Any = None
    for e in errors:
        given = e.get("input")
        if isinstance(given, _Oversize):
            message = (
                f"Invalid Request: a message of {given.size} bytes is over the limit of "
                f"{given.limit} bytes (agentport mcp --max-message-bytes)"
            )
            return JSONRPCError(
                jsonrpc="2.0", id=None, error=ErrorData(code=-32600, message=message)
            )
        if isinstance(given, dict) and isinstance(given.get("id"), int | str):
            ident = given["id"]
            break
    parse = not errors or any(e.get("type") == "json_invalid" for e in errors)
    code, what = (-32700, "Parse error") if parse else (-32600, "Invalid Request")
    detail = (errors[0].get("msg") if errors else str(exc)) or type(exc).__name__
    return JSONRPCError(
        jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=f"{what}: {detail}"[:300])
    )


@contextmanager
def _claim_stdin() -> Iterator[BinaryIO]:
    """The wire's stdin for this transport alone: fd 0 is pointed at the null device while
    the server runs (a child process or a stray read sees EOF, never a client's message) and
    restored afterwards, as the SDK does when it reads stdin itself."""
    try:
        backed = sys.stdin.buffer.fileno() == 0
    except (AttributeError, OSError, ValueError):
        backed = False
    if not backed:
        yield sys.stdin.buffer
        return
    import fcntl

    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        # never closed: a reader thread abandoned at shutdown may still block on it
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        os.dup2(private, 0)


async def _run_stdio(server: MCPServer[Any], max_message_bytes: int) -> None:
    lowlevel = server._lowlevel_server  # what `MCPServer.run_stdio_async` runs, as well
    with _claim_stdin() as raw:
        lines = cast("anyio.AsyncFile[str]", BoundedLines(raw, max_message_bytes))
        async with stdio_server(stdin=lines) as (read, write):
            await lowlevel.run(
                AnsweringReader(read, write), write, lowlevel.create_initialization_options()
            )


def serve_stdio(server: MCPServer[Any], max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
    """Serve *server* on this process's stdin/stdout until the client closes stdin; a
    message over *max_message_bytes* is answered `-32600` and skipped."""
    anyio.run(_run_stdio, server, max_message_bytes)
