"""The API-independent answer `FakeModelServer` replays (`Turn`, `ToolCallSpec`,
`TokenUsage`) and the SSE framing every wire format shares. Private: import the public names
from `agentport.testing`."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from ._fake_webcall import WebCall

__all__ = ["Event", "TokenUsage", "ToolCallSpec", "Turn"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts, rendered in each API's own usage shape. `input_tokens` includes
    `cached_input_tokens` (OpenAI's convention); for Anthropic the server reports
    `input_tokens - cached_input_tokens` as `input_tokens` and the rest as
    `cache_read_input_tokens`. `reasoning_tokens` are part of `output_tokens`."""

    input_tokens: int = 10
    output_tokens: int = 5
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    name: str
    arguments: str  # JSON text
    call_id: str
    namespace: str | None = None  # Responses API: the `namespace` tool holding `name`

    @property
    def arguments_obj(self) -> Any:
        try:
            return json.loads(self.arguments) if self.arguments else {}
        except ValueError:
            return {"_raw": self.arguments}


@dataclass(frozen=True, slots=True)
class Turn:
    """One model answer, independent of the API: optional text, then tool calls."""

    text: str | None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str = "fake-model"
    chunk_size: int | None = None  # None: short texts in 3 pieces, long ones in 64 KiB
    web: tuple[WebCall, ...] = ()  # server-side web tool calls made before the answer

    def chunks(self) -> list[str]:
        text = self.text or ""
        if not text:
            return []
        size = self.chunk_size
        if size is None:
            size = 65536 if len(text) > 65536 else max(1, -(-len(text) // 3))
        return [text[i : i + size] for i in range(0, len(text), size)]


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# One SSE event, already framed, and whether it carries answer content (a "delta").
Event = tuple[bytes, bool]


def _sse(data: Any, event: str | None = None, *, delta: bool = False) -> Event:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return (f"{head}data: {payload}\n\n".encode(), delta)
