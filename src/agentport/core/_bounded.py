"""JSON parsing with a nesting bound: a hostile file or answer ends in a typed error.

`json.loads` on 200,000 nested `[` raises `RecursionError`, which no caller expects. `loads`
turns that (and, with `max_depth`, any nesting deeper than asked) into `JSONTooDeep`, a
`json.JSONDecodeError` (so a `ValueError`): every handler that reports invalid JSON with its
line reports this one too, e.g. `trace.json: not valid JSON (line 1: nested deeper than 100
levels)`. Pure; no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["DEFAULT_MAX_DEPTH", "JSONTooDeep", "depth_exceeds", "loads"]

DEFAULT_MAX_DEPTH = 200
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JSONTooDeep(json.JSONDecodeError):
    """JSON nested deeper than the bound (or than Python's parser can go)."""


def _position(doc: str, limit: int) -> int:
    """Offset where nesting first passes *limit* (a linear scan, only on the error path)."""
    depth = 0
    for match in _TOKEN.finditer(doc):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return match.start()
        elif token in "]}":
            depth -= 1
    return 0


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether *value* nests lists/dicts deeper than *limit* (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads(data: str | bytes | bytearray, *, max_depth: int | None = None, **kwargs: Any) -> Any:
    """`json.loads`, but nesting past *max_depth* (or past what the parser can recurse,
    about 1000 levels) raises `JSONTooDeep` instead of `RecursionError`.

    With *max_depth* the parsed value is walked once more (linear in its containers)."""
    try:
        value = json.loads(data, **kwargs)
    except RecursionError:
        doc = data if isinstance(data, str) else bytes(data).decode("utf-8", errors="replace")
        limit = max_depth or DEFAULT_MAX_DEPTH
        raise JSONTooDeep(
            f"nested deeper than {limit} levels", doc, _position(doc, limit)
        ) from None
    if max_depth is not None and depth_exceeds(value, max_depth):
        doc = data if isinstance(data, str) else bytes(data).decode("utf-8", errors="replace")
        raise JSONTooDeep(f"nested deeper than {max_depth} levels", doc, _position(doc, max_depth))
    return value
