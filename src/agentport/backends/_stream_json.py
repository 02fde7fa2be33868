"""Message lines of Claude Code's `--output-format stream-json`, which Qwen Code copies.

`assistant` lines carry content blocks (`text`, `thinking`, `tool_use`); `user` lines carry the
`tool_result` blocks the CLI fed back (Claude Code 2.1.197, qwen-code 0.15.10). Each backend
keeps its own
`system` / `result` handling; this module only decodes the shared message shapes.
"""

from __future__ import annotations

from typing import Any

from ..core import AgentEvent, EventType
from ._spec import as_dict

__all__ = ["decode_message"]


def _blocks(obj: dict[str, Any]) -> list[dict[str, Any]]:
    content = as_dict(obj.get("message")).get("content") or []
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _joined(blocks: list[dict[str, Any]], kind: str, key: str) -> str:
    return "".join(str(b.get(key, "")) for b in blocks if b.get("type") == kind)


def decode_message(obj: dict[str, Any]) -> AgentEvent | None:
    """An `assistant` or `user` line -> tool_call, text, reasoning or tool_result; else None.

    Only the first tool_use / tool_result block of a line becomes an event (the CLIs send one
    per line headless).
    """
    kind = obj.get("type")
    blocks = _blocks(obj)
    if kind == "assistant":
        tools = [b for b in blocks if b.get("type") == "tool_use"]
        if tools:
            first = tools[0]
            call = {"tool": first.get("name"), "id": first.get("id"), "input": first.get("input")}
            return AgentEvent(
                type=EventType.tool_call, content=str(first.get("name")), raw=obj, metadata=call
            )
        text = _joined(blocks, "text", "text")
        if text:
            return AgentEvent(type=EventType.text, content=text, raw=obj)
        thinking = _joined(blocks, "thinking", "thinking")
        return AgentEvent(type=EventType.reasoning, content=thinking, raw=obj) if thinking else None
    if kind == "user":
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if not results:
            return None
        first = results[0]
        content = first.get("content")
        if isinstance(content, list):
            content = "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        return AgentEvent(
            type=EventType.tool_result,
            content=str(content or ""),
            raw=obj,
            is_error=bool(first.get("is_error")),
            metadata={"id": first.get("tool_use_id")},
        )
    return None
