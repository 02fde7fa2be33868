"""The ACP client's pure parts: permission answers from a `ToolPolicy`, typed permission
requests, `session/update` notifications decoded to `AgentEvent`s, usage from a prompt's
result, the absolute cwd and the prompt text ACP needs. No I/O. Source:
agentclientprotocol.com (protocol version 1), checked against gemini-cli 0.61.0 `--acp`;
docs/backends/acp.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from returns.result import Failure, Result, Success

from ..core import (
    AgentEvent,
    BackendCapability,
    CompletionConfig,
    CompletionResponse,
    EventType,
    Message,
    OptionKind,
    PermissionOption,
    PermissionRequest,
    ProviderError,
    Sandbox,
    ToolPolicy,
    Usage,
    input_summary,
    permission_kind,
    prepare_messages,
)
from ..structured import complete_constrained
from ._spec import render_prompt

__all__ = [
    "absolute_cwd",
    "decode_update",
    "permission_allowed",
    "permission_request",
    "prompt_text",
    "schema_or_plain",
    "usage_of",
]

_READ_KINDS = frozenset({"read", "search", "think"})
_WRITE_KINDS = _READ_KINDS | {"edit", "delete", "move"}


# ---------------------------------------------------------------------- pure parts


def permission_allowed(
    tool_call: Mapping[str, Any], tools: ToolPolicy, cwd: Path, *, hook: bool = False
) -> bool:
    """Whether the caller's tool policy allows the tool an agent asks permission for.

    `allowed_tools` (when set) must name the tool: its ACP `kind` (read, edit, delete, move,
    search, execute, think, fetch, other), the start of its `toolCallId` (gemini:
    `run_shell_command__…`) or the first word of its `title`. Then the sandbox decides:
    `full` allows anything, `workspace_write` reads and edits whose `locations` stay inside
    *cwd*, `read_only` reads only. Without a sandbox, a named tool is allowed and otherwise
    only reads are (agentport's default: nothing that changes files or runs commands), and
    with neither (`ToolPolicy.cli_defaults()`: the agent would ask its user) a call with an
    approval *hook* lets the hook be that user.
    """
    kind = str(tool_call.get("kind") or "other").lower()
    if tools.allowed_tools is not None:
        names = {n.lower() for n in tools.allowed_tools}
        call_id = str(tool_call.get("toolCallId") or "").lower()
        title = str(tool_call.get("title") or "").lower().split(maxsplit=1)
        named = (
            kind in names
            or any(call_id.startswith(n) for n in names if n)
            or bool(title and title[0] in names)
        )
        if not named:
            return False
    sandbox = tools.sandbox
    if sandbox is Sandbox.full:
        return True
    if sandbox is Sandbox.workspace_write:
        root = cwd.resolve()
        paths = [
            Path(str(loc.get("path")))
            for loc in tool_call.get("locations") or []
            if isinstance(loc, dict) and loc.get("path")
        ]
        inside = all(
            (root / p).resolve().is_relative_to(root) for p in paths
        )  # relative paths are taken from the agent's cwd
        return kind in _WRITE_KINDS and inside
    if sandbox is Sandbox.read_only:
        return kind in _READ_KINDS
    return tools.allowed_tools is not None or kind in _READ_KINDS or hook


def permission_request(
    backend: str, tool_call: Mapping[str, Any], options: Any
) -> PermissionRequest:
    """A `session/request_permission`'s `toolCall` and `options` as a typed request: the tool
    is its `title` (else its `toolCallId`), the kind its ACP `kind`, the input its `rawInput`
    (summarised, redacted); an option of a kind ACP does not define keeps `kind=None` and is
    never chosen."""
    offered: list[PermissionOption] = []
    for raw in options if isinstance(options, list) else []:
        if not isinstance(raw, dict) or raw.get("optionId") is None:
            continue
        word = str(raw.get("kind") or "")
        kind = OptionKind(word) if word in OptionKind.__members__ else None
        offered.append(PermissionOption(str(raw["optionId"]), kind, str(raw.get("name") or "")))
    call_id = tool_call.get("toolCallId")
    return PermissionRequest(
        backend=backend,
        tool=str(tool_call.get("title") or call_id or "tool"),
        kind=permission_kind(tool_call.get("kind")),
        input_summary=input_summary(tool_call.get("rawInput")),
        options=tuple(offered),
        call_id=str(call_id) if call_id is not None else None,
    )


def _content_text(content: Any) -> str:
    """Text of an ACP content block, or of a list of tool-call content items."""
    if isinstance(content, dict):
        if content.get("type") == "text":
            return str(content.get("text", ""))
        if content.get("type") == "content":
            return _content_text(content.get("content"))
        if content.get("type") == "diff":
            return f"diff {content.get('path', '')}"
        return ""
    if isinstance(content, list):
        return "".join(_content_text(c) for c in content)
    return ""


def decode_update(update: Mapping[str, Any]) -> AgentEvent | None:
    """One `session/update` payload -> an event (None for plans, commands, modes, echoes)."""
    kind = update.get("sessionUpdate")
    if kind == "agent_message_chunk":
        return AgentEvent(type=EventType.text, content=_content_text(update.get("content")),
                          raw=dict(update))  # fmt: skip
    if kind == "agent_thought_chunk":
        return AgentEvent(type=EventType.reasoning, content=_content_text(update.get("content")),
                          raw=dict(update))  # fmt: skip
    meta = {"id": update.get("toolCallId"), "tool": update.get("kind")}
    if kind == "tool_call":
        meta["input"] = update.get("rawInput")
        return AgentEvent(type=EventType.tool_call, content=str(update.get("title") or ""),
                          raw=dict(update), metadata=meta)  # fmt: skip
    if kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
        output = _content_text(update.get("content"))
        if not output and update.get("rawOutput") is not None:
            raw_out = update["rawOutput"]
            output = raw_out if isinstance(raw_out, str) else json.dumps(raw_out)
        return AgentEvent(type=EventType.tool_result, content=output, raw=dict(update),
                          is_error=update.get("status") == "failed", metadata=meta)  # fmt: skip
    return None


def usage_of(result: Mapping[str, Any]) -> Usage:
    # ACP v1 has no usage field; gemini puts it in _meta.quota.token_count, the draft
    # "usage" RFD in result.usage (camelCase).
    usage = result.get("usage")
    if isinstance(usage, dict):
        return Usage(
            input_tokens=int(usage.get("inputTokens") or 0),
            output_tokens=int(usage.get("outputTokens") or 0),
            cached_tokens=int(usage.get("cachedReadTokens") or 0),
        )
    meta = result.get("_meta") or {}
    counts = (meta.get("quota") or {}).get("token_count") if isinstance(meta, dict) else None
    if isinstance(counts, dict):
        return Usage(
            input_tokens=int(counts.get("input_tokens") or 0),
            output_tokens=int(counts.get("output_tokens") or 0),
        )
    return Usage()


def absolute_cwd(path: str | Path) -> Path:
    # ACP requires an absolute cwd; no symlink resolution (no filesystem access needed)
    return Path(os.path.abspath(path))


def prompt_text(messages: Sequence[Message]) -> str:
    # ACP has no system role: the system prompt is folded in (TRANSLATED).
    return render_prompt(messages, fold_system=True)


async def schema_or_plain(
    capability: BackendCapability,
    messages: Sequence[Message],
    config: CompletionConfig,
    once: Callable[[list[Message]], Awaitable[Result[CompletionResponse, ProviderError]]],
) -> Result[CompletionResponse, ProviderError]:
    """One ACP completion: the catalog's parameter check, then *once* under the structured
    output loop (a schema TRANSLATED into the prompt and validated), warnings kept."""
    prepared = prepare_messages(capability, messages, config)
    if isinstance(prepared, Failure):
        return prepared
    messages, warnings = prepared.unwrap()
    result = await complete_constrained(once, messages, config, backend=capability.name)
    if warnings and isinstance(result, Success):
        response = result.unwrap()
        return Success(response.model_copy(update={"warnings": warnings + response.warnings}))
    return result
