"""Pure NDJSON framing: bytes in arbitrary chunks -> complete lines -> JSON values or noise.

No I/O. `LineFramer.feed` never strips at chunk seams; a line is complete only at `\\n`
(a trailing `\\r` is dropped). `parse_line` turns one line into a `Frame`: a JSON value, or the
text of a non-JSON line (kept for diagnostics, never parsed as protocol). The line cap is the
caller's: a fixed small one (1 MiB in anthropics/claude-agent-sdk-python#98, asyncio's 64 KiB
in agentclientprotocol/python-sdk#62) kills the reader on one big tool result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "MAX_JSON_DEPTH",
    "Frame",
    "LineFramer",
    "LineTooLongError",
    "NestingTooDeepError",
    "parse_line",
]

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_JSON_DEPTH = 200
"""Deepest JSON nesting accepted on one line. Real CLI events nest about 10 levels (a tool
call's arguments inside a message inside an event); Python's own parser and every recursive
consumer after it fail with RecursionError near 1000."""


class NestingTooDeepError(Exception):
    """A JSON line nested deeper than `MAX_JSON_DEPTH`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"an output line nests JSON deeper than {limit} levels")


class LineTooLongError(Exception):
    """A line grew past `limit` bytes without a newline."""

    def __init__(self, limit: int, size: int) -> None:
        self.limit = limit
        self.size = size
        super().__init__(f"an output line exceeded {limit} bytes (got at least {size})")


class LineFramer:
    """Reassemble lines from chunks.

    `feed(chunk)` returns the lines completed by *chunk* (without the newline); `close()` returns
    the unterminated tail (a truncated last line) as a final line, if any. Lines are `bytes`, or
    the framer's own `bytearray` for a line that spanned chunks (handed over, not copied).
    Raises `LineTooLongError` when a pending line exceeds `max_line_bytes`.
    """

    __slots__ = ("_pending", "max_line_bytes")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes <= 0:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._pending = bytearray()

    @property
    def pending_bytes(self) -> int:
        return len(self._pending)

    def feed(self, chunk: bytes) -> list[bytes | bytearray]:
        if not chunk:
            return []
        cut = chunk.find(b"\n")
        if cut < 0:
            self._pending += chunk
            self._check(self._pending)
            return []
        first: bytes | bytearray
        if self._pending:
            self._pending += chunk[:cut]
            first, self._pending = self._pending, bytearray()
        else:
            first = chunk[:cut]
        self._check(first)
        lines: list[bytes | bytearray] = [_strip_cr(first)]
        parts = chunk[cut + 1 :].split(b"\n")
        tail = parts.pop()
        for part in parts:
            self._check(part)
            lines.append(_strip_cr(part))
        if tail:
            self._pending += tail
            self._check(self._pending)
        return lines

    def close(self) -> list[bytes | bytearray]:
        """The truncated last line (no final newline), or nothing."""
        if not self._pending:
            return []
        tail, self._pending = self._pending, bytearray()
        return [_strip_cr(tail)]

    def _check(self, line: bytes | bytearray) -> None:
        if len(line) > self.max_line_bytes:
            size = len(line)
            self._pending = bytearray()
            raise LineTooLongError(self.max_line_bytes, size)


def _strip_cr(line: bytes | bytearray) -> bytes | bytearray:
    if line.endswith(b"\r"):
        if isinstance(line, bytearray):
            del line[-1:]
            return line
        return line[:-1]
    return line


@dataclass(frozen=True, slots=True)
class Frame:
    """One parsed line: `value` (the JSON value) when `is_json`, else `text` (the noise)."""

    is_json: bool
    value: Any = None
    text: str = ""


def _deeper_than(value: Any, limit: int) -> bool:
    """True when *value* nests containers more than *limit* deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        items = node.values() if isinstance(node, dict) else node
        stack.extend((v, depth + 1) for v in items if isinstance(v, dict | list))
    return False


def parse_line(line: bytes | bytearray, max_depth: int = MAX_JSON_DEPTH) -> Frame | None:
    """A JSON value, or the decoded text of a non-JSON line; None for a blank line.

    Invalid UTF-8 is replaced (U+FFFD), never an error. A `bytearray` argument is consumed
    (cleared after decoding) so a huge line is held at most twice in memory (decoded text +
    parsed value), never three times. Raises `NestingTooDeepError` for JSON nested deeper than
    *max_depth* (checked only when the line holds more brackets than that).
    """
    text = line.decode("utf-8", errors="replace")
    if isinstance(line, bytearray):
        line.clear()
    stripped = text.strip()
    if not stripped:
        return None
    if stripped[0] in "{[":
        try:
            value = json.loads(stripped)
        except ValueError:
            return Frame(False, text=text)
        except RecursionError:
            raise NestingTooDeepError(max_depth) from None
        if isinstance(value, dict | list) and (
            stripped.count("{") + stripped.count("[") > max_depth and _deeper_than(value, max_depth)
        ):
            raise NestingTooDeepError(max_depth)
        return Frame(True, value)
    return Frame(False, text=text)
