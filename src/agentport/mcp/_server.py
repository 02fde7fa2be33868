"""Build the agentport MCP server (official MCP Python SDK, `MCPServer`).

Transports: stdio (default, `_stdio`) and streamable HTTP (`_http`), 127.0.0.1 unless told
otherwise. A non-loopback HTTP bind needs a bearer token (`AGENTPORT_MCP_TOKEN` or
`--token-file`); when a token is set, every HTTP request must carry `Authorization: Bearer
<token>` (compared in constant time), loopback included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from .. import __version__
from ._errors import Roots, flatten_sdk_error
from ._http import is_loopback
from ._jobs import Jobs
from ._refine import RefineTools
from ._tools import AdapterFactory, CoreTools

__all__ = ["build_server", "check_bind"]

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


def check_bind(host: str, token: str | None) -> str | None:
    """Why *host* may not be bound (one line), or None: a non-loopback bind needs a token."""
    if not is_loopback(host) and not token:
        return (
            f"--http {host}: refusing a non-loopback bind without a token; "
            "set AGENTPORT_MCP_TOKEN or --token-file FILE (HTTP clients then send it as a "
            "bearer token)"
        )
    return None
