"""The approval prompt a CLI asks over MCP (claude `--permission-prompt-tool`): one MCP
server per call, served by this process on 127.0.0.1 with a per-call bearer token, whose one
tool asks the caller's hook (`_approvals.decide`) and answers in the CLI's shape.

Claude Code calls the tool named by `--permission-prompt-tool mcp__<server>__<tool>` with
`tool_name`, `input` and `tool_use_id` whenever a tool needs permission, and reads one text
block of JSON back: `{"behavior": "allow", "updatedInput": {...}}` or
`{"behavior": "deny", "message": "..."}` (code.claude.com docs, "CLI reference" and the
Agent SDK's permission prompt tool).

Served by the official MCP SDK (the `mcp` extra) through `transport.serve_mcp` (loopback,
a per-call bearer token, a thread with its own loop, so the call's loop may be asyncio or
trio); the hook runs on the call's loop (`transport.on_caller`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import (
    AgentEvent,
    CompletionConfig,
    Deny,
    ErrorKind,
    PermissionKind,
    PermissionRequest,
    ProviderError,
    Sandbox,
    ToolPolicy,
    input_summary,
)
from ._approvals import decide, denied_event

__all__ = [
    "PROMPT_TOOL",
    "ApprovalEndpoint",
    "approval_server",
    "claude_kind",
    "claude_policy_allows",
]

SERVER = "agentport_approvals"
TOOL = "approve"
PROMPT_TOOL = f"mcp__{SERVER}__{TOOL}"
_START_S = 10.0  # the server's start-up bound

_KINDS = {
    "Read": PermissionKind.read, "Glob": PermissionKind.read, "Grep": PermissionKind.read,
    "LS": PermissionKind.read, "NotebookRead": PermissionKind.read,
    "Edit": PermissionKind.edit, "MultiEdit": PermissionKind.edit,
    "Write": PermissionKind.edit, "NotebookEdit": PermissionKind.edit,
    "Bash": PermissionKind.execute, "BashOutput": PermissionKind.execute,
    "KillShell": PermissionKind.execute,
    "WebFetch": PermissionKind.fetch, "WebSearch": PermissionKind.fetch,
}  # fmt: skip


def claude_kind(tool: str) -> PermissionKind:
    """What a Claude Code tool does; an MCP tool or one not listed is `other`."""
    return _KINDS.get(tool, PermissionKind.other)


def claude_policy_allows(tool: str, tool_input: Any, tools: ToolPolicy, cwd: Path | None) -> bool:
    """Whether the call's `ToolPolicy` allows what claude asks about, so the hook can only
    narrow it: a listed tool only (when listed); under `read_only` reads only; under
    `workspace_write` reads and edits whose path stays inside *cwd*; `full` or the CLI's
    default: anything."""
    if tools.allowed_tools is not None and tool not in tools.allowed_tools:
        return False
    kind = claude_kind(tool)
    if tools.sandbox is Sandbox.read_only:
        return kind is PermissionKind.read
    if tools.sandbox is Sandbox.workspace_write:
        if kind is PermissionKind.read:
            return True
        if kind is not PermissionKind.edit or cwd is None:
            return False
        args = tool_input if isinstance(tool_input, dict) else {}
        path = args.get("file_path") or args.get("notebook_path")
        root = cwd.resolve()
        return isinstance(path, str) and (root / path).resolve().is_relative_to(root)
    return True


@dataclass(frozen=True, slots=True)
class ApprovalEndpoint:
    """Where the call's approval server listens, and the token it requires."""

    url: str
    token: str

    def mcp_config(self) -> str:
        """The `--mcp-config` JSON naming this server (HTTP, the bearer token header)."""
        server = {
            "type": "http",
            "url": self.url,
            "headers": {"Authorization": f"Bearer {self.token}"},
        }
        return json.dumps({"mcpServers": {SERVER: server}}, separators=(",", ":"))


Emit = Callable[[AgentEvent], Awaitable[None]]


@asynccontextmanager
async def approval_server(
    backend: str, config: CompletionConfig, emit: Emit, cwd: Path | None = None
) -> AsyncIterator[ApprovalEndpoint]:
    """Serve the approval tool for one call; yields its endpoint, stops it on exit. Denials
    go to *emit* as `permission_denied` events. Raises `ProviderError(not_installed)` when
    the `mcp` extra is missing."""
    try:
        from mcp.server.mcpserver import MCPServer

        from ..transport import Served, on_caller, serve_mcp
    except ImportError:
        raise ProviderError(
            ErrorKind.not_installed,
            "approvals on this backend are served over MCP: pip install 'agentport[mcp]'",
            retryable=False,
            request_sent=False,
        ) from None
    serving: list[Served] = []

    async def on_host(tool_name: str, tool_input: Any, tool_use_id: str | None) -> dict[str, Any]:
        request = PermissionRequest(
            backend=backend,
            tool=tool_name,
            kind=claude_kind(tool_name),
            input_summary=input_summary(tool_input),
            call_id=tool_use_id,
        )
        allows = claude_policy_allows(tool_name, tool_input, config.tools, cwd)
        decision = await decide(request, config, policy_allows=allows)
        if isinstance(decision, Deny):
            await emit(denied_event(request, decision.reason))
            return {"behavior": "deny", "message": decision.reason}
        return {"behavior": "allow", "updatedInput": tool_input}

    async def approve(
        tool_name: str, input: dict[str, Any] | None = None, tool_use_id: str | None = None
    ) -> str:
        """Whether the agent may run *tool_name* with *input* (asked by the CLI)."""
        call = functools.partial(on_host, tool_name, input or {}, tool_use_id)
        return json.dumps(await on_caller(serving[0], call))

    def build(port: int) -> Any:
        mcp = MCPServer("agentport-approvals", log_level="WARNING")
        # one text block and nothing else (no structuredContent): claude refuses anything more
        mcp.add_tool(
            approve, name=TOOL, description="agentport's approval prompt (not for the model)",
            structured_output=False,
        )  # fmt: skip
        return mcp.streamable_http_app(host="127.0.0.1")

    try:
        async with serve_mcp("agentport-approvals", build) as served:
            serving.append(served)
            yield ApprovalEndpoint(served.url, served.token)
    except RuntimeError as exc:  # it did not start
        raise ProviderError(ErrorKind.process_failed, f"the approval server: {exc}") from None
