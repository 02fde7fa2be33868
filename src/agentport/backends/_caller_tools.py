"""The caller's tools for one call: its `functions` served as an MCP server, then passed on
like its `mcp_servers` (`caller_tools`); and the per-CLI forms of those servers.

Every adapter that takes MCP servers goes through `caller_tools`, so a call's functions are
served exactly when the backend can reach them, for exactly the call's length.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..core import BackendCapability, CompletionConfig, McpServer, Param, ParamSupport
from ._spec import CliCall

__all__ = [
    "acp_server",
    "caller_tools",
    "mcp_json",
    "system_settings",
    "with_server",
    "write_private",
]


@contextlib.asynccontextmanager
async def caller_tools(
    capability: BackendCapability, config: CompletionConfig
) -> AsyncIterator[CompletionConfig]:
    """*config* with its `functions` served (`transport.serve_functions`) and added to
    `mcp_servers` as the server `functions`, while the block runs. Unchanged when it has no
    functions or the backend IGNOREs them (the call's `on_ignored` policy then warns or
    fails as for any ignored parameter)."""
    if not config.functions or capability.support(Param.functions) is ParamSupport.IGNORED:
        yield config
        return
    from ..transport import serve_functions

    async with serve_functions(config.functions) as server:
        yield with_server(config, server)


def with_server(config: CompletionConfig, server: McpServer) -> CompletionConfig:
    """*config* with *server* (where its `functions` are served) added to `mcp_servers`, and
    no functions left to serve."""
    return config.model_copy(update={"mcp_servers": (*config.mcp_servers, server), "functions": ()})


def mcp_json(server: McpServer, *, http_type: str | None = "http") -> dict[str, Any]:
    """*server* in the `mcpServers` entry shape most CLIs share (claude's `--mcp-config`,
    gemini's and qwen's settings): `{"command", "args", "env"}` for stdio,
    `{"type": "http", "url", "headers"}` for HTTP (*http_type* None: no `type` key)."""
    if server.url is not None:
        entry: dict[str, Any] = {"url": server.url, "headers": server.plain_headers()}
        return {"type": http_type, **entry} if http_type else entry
    return {"command": server.command, "args": list(server.args), "env": server.plain_env()}


def write_private(path: Path, data: Any) -> Path:
    """Write *data* as JSON to *path* (in the call's private run folder), readable only by
    this user: the file holds the servers' secrets (env values, headers)."""
    path.touch(mode=0o600)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def system_settings(call: CliCall, variable: str, default: str) -> Path:
    """The call's MCP servers as `mcpServers` of a system settings file in the run's
    private folder, for the Gemini CLI family (gemini `GEMINI_CLI_SYSTEM_SETTINGS_PATH`,
    qwen `QWEN_CODE_SYSTEM_SETTINGS_PATH`: *variable*; the system tier overrides the user's
    and the project's settings). The file starts as a copy of the system settings it
    replaces (the file the user's own *variable* names, else *default*, an administrator's
    `/etc/...`), so their other settings and MCP allow/deny lists still hold; only
    `mcpServers` becomes the call's. Each server is trusted (no confirmation: headless
    nothing can answer one); HTTP servers are `httpUrl` (streamable HTTP)."""
    base: dict[str, Any] = {}
    try:
        loaded = json.loads(Path(os.environ.get(variable) or default).read_text("utf-8"))
        base = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        pass
    servers: dict[str, Any] = {}
    for server in call.config.mcp_servers:
        entry = mcp_json(server, http_type=None)
        if server.is_http:
            entry = {"httpUrl": entry.pop("url"), **entry}
        timeout_ms = int(server.timeout_s * 1000)
        servers[server.name] = {**entry, "timeout": timeout_ms, "trust": True}
    return write_private(call.run_dir / "system-settings.json", base | {"mcpServers": servers})


def acp_server(server: McpServer) -> dict[str, Any]:
    """*server* in the Agent Client Protocol's `McpServer` shape (`session/new`): stdio
    `{name, command, args, env: [{name, value}]}`, HTTP `{type: "http", name, url,
    headers: [{name, value}]}`."""
    if server.url is not None:
        headers = [{"name": k, "value": v} for k, v in server.plain_headers().items()]
        return {"type": "http", "name": server.name, "url": server.url, "headers": headers}
    env = [{"name": k, "value": v} for k, v in server.plain_env().items()]
    return {
        "name": server.name,
        "command": server.command,
        "args": list(server.args),
        "env": env,
    }
