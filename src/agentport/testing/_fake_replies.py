"""What `FakeModelServer` records (`RecordedRequest`) and what it can answer with: replies
(`TextReply`, `JsonReply`, `ToolCallReply`, `LargeReply`) and faults (`HttpFault`,
`DropConnection`, `CutStream`, `Hang`), plus the rules that answer CLIs' side requests."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pydantic import BaseModel

from ._fake_wire import (
    ApiKind,
    TokenUsage,
    images_in,
    system_text,
    tool_names,
    tool_results,
    user_text,
)

__all__ = [
    "DEFAULT_SIDE_RULES",
    "CutStream",
    "DropConnection",
    "Hang",
    "HttpFault",
    "JsonReply",
    "LargeReply",
    "RecordedRequest",
    "ReplyLike",
    "ServerReply",
    "SideRule",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
]

_SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "cookie",
        "openai-organization",
        "chatgpt-account-id",
    }
)


@dataclass(frozen=True, slots=True, repr=False)
class RecordedRequest:
    """One request the server received. `headers` keeps real values (names lower-cased) so
    a test can check that a key was sent; `repr()` redacts the secret ones."""

    seq: int
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    raw: bytes
    api: ApiKind
    stream: bool
    model: str | None
    received_at: float
    side: str | None = None  # name of the SideRule that answered it; None = a scripted turn
    served: str = ""  # short description of the answer given

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)

    @property
    def is_side(self) -> bool:
        return self.side is not None

    @property
    def user_text(self) -> str:
        """Text of the last user message."""
        return user_text(self.api, self.body)

    @property
    def system_text(self) -> str:
        """System / developer instructions, joined."""
        return system_text(self.api, self.body)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Names of the tools the request offers the model."""
        return tool_names(self.api, self.body)

    @property
    def tool_results(self) -> tuple[str, ...]:
        """Tool results at the end of the conversation (what this request follows up)."""
        return tool_results(self.api, self.body)

    @property
    def images(self) -> tuple[tuple[str, bytes], ...]:
        """Every image the request carries: (media type, bytes), in any wire format."""
        return images_in(self.body)

    @property
    def has_tool_result(self) -> bool:
        return bool(self.tool_results)

    def redacted_headers(self) -> dict[str, str]:
        return {k: ("<redacted>" if k in _SECRET_HEADERS else v) for k, v in self.headers.items()}

    def __repr__(self) -> str:
        q = f"?{self.query}" if self.query else ""
        return (
            f"RecordedRequest(#{self.seq} {self.method} {self.path}{q} api={self.api.value} "
            f"stream={self.stream} model={self.model!r} side={self.side!r} "
            f"served={self.served!r} body={len(self.raw)} bytes "
            f"headers={self.redacted_headers()!r})"
        )


# ----------------------------------------------------------------------------- replies


@dataclass(frozen=True, kw_only=True)
class ServerReply:
    """Base of every reply and fault. `delay`: seconds to wait before answering (cut short
    when the server stops)."""

    delay: float = 0.0

    def describe(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class TextReply(ServerReply):
    """Answer with `text`. Streamed answers are cut in `chunk_size`-character deltas
    (default: three pieces, or 64 KiB pieces for long texts), `chunk_delay` seconds apart.
    `usage` defaults to about len/4 tokens each way. `headers` are added to the response
    (rate-limit headers, say)."""

    text: str
    usage: TokenUsage | None = None
    chunk_size: int | None = None
    chunk_delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)  # extra response headers

    def describe(self) -> str:
        t = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return f"TextReply({t!r})"


STRUCTURED_TOOLS = ("StructuredOutput", "structured_output")


@dataclass(frozen=True)
class JsonReply(ServerReply):
    """Answer with `value` serialised as JSON text.

    `structured_tool=True` (default): when the request offers a structured-output tool (Claude
    Code's `StructuredOutput` for `--json-schema`, qwen's `structured_output`), the value is
    sent as a call of that tool instead, which is how those CLIs expect a schema answer."""

    value: Any
    structured_tool: bool = True
    usage: TokenUsage | None = None
    chunk_size: int | None = None
    chunk_delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)  # extra response headers

    @property
    def text(self) -> str:
        v = self.value.model_dump(mode="json") if isinstance(self.value, BaseModel) else self.value
        return json.dumps(v)

    def describe(self) -> str:
        t = self.text
        return f"JsonReply({t if len(t) <= 40 else t[:37] + '...'})"


@dataclass(frozen=True)
class ToolCallReply(ServerReply):
    """Answer with a call of tool `name` (in the API's own shape), optionally after `text`.

    `then`: the reply for the follow-up request that carries the tool result. It goes to the
    FRONT of the queue, matched to the same API and to requests whose conversation ends with
    a tool result, so a tool round trip is `server.reply(ToolCallReply("bash", {...},
    then="done"))`. Without `then` the follow-up takes the next queued reply or the default.

    `namespace`: on the Responses API, the `namespace` tool that holds `name` (codex offers
    each MCP server's tools as `{"type": "namespace", "name": "mcp__<server>", "tools":
    [...]}` and resolves a call by `namespace` + `name`); other APIs ignore it."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None
    then: ReplyLike | None = None
    text: str | None = None
    usage: TokenUsage | None = None
    namespace: str | None = None

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)

    def describe(self) -> str:
        return f"ToolCallReply({self.name!r}, {self.arguments_json[:40]})"


@functools.lru_cache(maxsize=4)
def _large_text(size: int, as_json: bool) -> str:
    if as_json:
        inner = max(0, size - len('{"data": ""}'))
        return json.dumps({"data": _large_text(inner, False).replace("\n", " ")})
    line_len = 64
    lines = []
    n = -(-size // line_len)
    for i in range(n):
        head = f"line {i:07d} "
        lines.append(head + "x" * (line_len - len(head) - 1) + "\n")
    return "".join(lines)[:size]


@dataclass(frozen=True)
class LargeReply(ServerReply):
    """A large answer (default 8 MiB of ASCII text, so bytes == characters), streamed in
    `chunk_size` pieces. `as_json=True` makes it one JSON object `{"data": "..."}` of that
    size. `.text` is the exact answer, to compare with what a client received."""

    size: int = 8 * 1024 * 1024
    chunk_size: int = 64 * 1024
    as_json: bool = False
    usage: TokenUsage | None = None
    chunk_delay: float = 0.0

    @property
    def text(self) -> str:
        return _large_text(self.size, self.as_json)

    def describe(self) -> str:
        return f"LargeReply(size={self.size})"


# ----------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class HttpFault(ServerReply):
    """Answer with HTTP `status` and the API's own error JSON (`message` inside), or `body`
    verbatim when given. `retry_after` (seconds) sets the `Retry-After` header (and
    `retry-after-ms`, which Anthropic's SDK prefers)."""

    status: int
    message: str | None = None
    retry_after: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None

    @classmethod
    def unauthorized(cls, message: str = "fake: invalid api key") -> HttpFault:
        return cls(401, message)

    @classmethod
    def rate_limited(
        cls, retry_after: float | None = 1, message: str = "fake: rate limited"
    ) -> HttpFault:
        return cls(429, message, retry_after=retry_after)

    @classmethod
    def server_error(cls, message: str = "fake: internal server error") -> HttpFault:
        return cls(500, message)

    @classmethod
    def overloaded(cls, message: str = "fake: overloaded") -> HttpFault:
        return cls(529, message)

    @property
    def error_message(self) -> str:
        if self.message is not None:
            return self.message
        return {
            401: "fake: invalid api key",
            429: "fake: rate limited",
            500: "fake: internal server error",
        }.get(self.status, f"fake: HTTP {self.status}")

    def describe(self) -> str:
        return f"HttpFault({self.status})"


@dataclass(frozen=True)
class DropConnection(ServerReply):
    """Read the request, then close the connection without any response (`reset=True`:
    send a TCP RST instead of a clean FIN)."""

    reset: bool = False


@dataclass(frozen=True)
class CutStream(ServerReply):
    """Start a normal answer of `text`, then close the connection mid-way: a streamed
    request gets the status line, headers, the opening events and the first `after_deltas`
    content deltas (the chunked body never terminates); a non-streamed one gets the headers
    and half the JSON body."""

    text: str = "This answer is cut off before"
    after_deltas: int = 1


@dataclass(frozen=True)
class Hang(ServerReply):
    """Accept the request and never finish answering until the server stops (then the
    connection is closed). `after_deltas=None`: not a byte is sent. `after_deltas=N`: the
    headers, the opening events and N deltas of `text` are sent first, then it stalls."""

    after_deltas: int | None = None
    text: str = "This answer stalls after"


ReplyLike: TypeAlias = (
    "ServerReply | str | dict[str, Any] | list[Any] | BaseModel | "
    "Callable[[RecordedRequest], ReplyLike]"
)


def coerce_reply(reply: ReplyLike, request: RecordedRequest | None = None) -> ServerReply:
    """str → TextReply; dict/list/BaseModel → JsonReply; a callable is called with the
    request (when one is given) and its result coerced."""
    if isinstance(reply, ServerReply):
        return reply
    if isinstance(reply, str):
        return TextReply(reply)
    if isinstance(reply, dict | list | BaseModel):
        return JsonReply(reply)
    if callable(reply):
        if request is None:
            raise TypeError("a callable reply needs the request")
        return coerce_reply(reply(request), request)
    raise TypeError(f"not a reply: {reply!r}")


def check_reply(reply: ReplyLike) -> None:
    """Fail fast (at scripting time) on something that can never be a reply."""
    if isinstance(reply, ServerReply | str | dict | list | BaseModel) or callable(reply):
        return
    raise TypeError(f"not a reply: {reply!r}")


# ----------------------------------------------------------------------------- side requests


@dataclass(frozen=True)
class SideRule:
    """Answers a background request of some CLI without consuming the script. `match`
    gets the recorded request; the request is recorded with `side=name`."""

    name: str
    match: Callable[[RecordedRequest], bool]
    reply: ReplyLike


def _system_contains(pattern: str) -> Callable[[RecordedRequest], bool]:
    rx = re.compile(pattern)

    def match(req: RecordedRequest) -> bool:
        return bool(rx.search(req.system_text[:4000]))

    return match


def _is_gemini_router(req: RecordedRequest) -> bool:
    if req.api is not ApiKind.GEMINI or not isinstance(req.body, dict):
        return False
    gc = req.body.get("generationConfig")
    if not isinstance(gc, dict):
        return False
    schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(props, dict) and "complexity_score" in props


def _is_claude_quota_probe(req: RecordedRequest) -> bool:
    return (
        req.api is ApiKind.ANTHROPIC
        and isinstance(req.body, dict)
        and req.body.get("max_tokens") == 1
        and req.user_text.strip() == "quota"
    )


DEFAULT_SIDE_RULES: tuple[SideRule, ...] = (
    # opencode: a title-generation chat call (no tools) before the real one.
    SideRule(
        "opencode-title",
        _system_contains(r"You are a title generator"),
        TextReply("Fake conversation title"),
    ),
    # qwen: a "managed memory" extraction call after every answer.
    SideRule(
        "qwen-memory",
        _system_contains(r"managed memory extraction"),
        TextReply("Nothing durable to save."),
    ),
    # gemini-cli without -m: a router call asking for a complexity score (JSON schema).
    SideRule(
        "gemini-router",
        _is_gemini_router,
        JsonReply({"complexity_reasoning": "fake router", "complexity_score": 1}),
    ),
    # Claude Code's quota probe (max_tokens 1, "quota"), sent unless nonessential traffic
    # is disabled.
    SideRule("claude-quota", _is_claude_quota_probe, TextReply("ok")),
)
