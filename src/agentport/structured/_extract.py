"""Finding the JSON value in a model's answer text (pure, no schema)."""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["NOTHING", "extract_json", "find_json"]

_FENCE_OPEN = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n")
# strict=False: control characters (raw newlines, tabs) inside strings are accepted, which is
# what small models emit under grammar constraints.
_DECODER = json.JSONDecoder(strict=False)
# After `{` or `[` (and blanks), what can start a JSON object member / array element.
_OBJECT_NEXT = frozenset('"}')
_ARRAY_NEXT = frozenset('"{[]-0123456789tfn')


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Final = _Nothing()
"""`find_json`'s answer when the text holds no JSON value (JSON `null` is a value)."""


def _loads(text: str) -> Any:
    """The one JSON value *text* is (blanks around it allowed), or NOTHING."""
    text = text.strip()
    if not text:
        return NOTHING
    try:
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):  # nesting past the parser's depth is not an answer
        return NOTHING
    return value if end == len(text) else NOTHING


def _looks_like_json(text: str, start: int) -> bool:
    rest = text[start + 1 : start + 65].lstrip()
    if not rest:
        return True  # cut right after the opener: a truncated value
    return rest[0] in (_OBJECT_NEXT if text[start] == "{" else _ARRAY_NEXT)


def _block_end(text: str, start: int) -> int | None:
    """The index just past the bracket closing the one at *start* (strings and escapes
    respected), or None when the text ends first."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _fenced_value(text: str, start: int) -> Any:
    """The JSON value of the fenced block whose body begins at *start*, or NOTHING. The
    block ends at the first ```` ``` ```` after which the body is one JSON value: a string
    value may hold a fence of its own (```` "```" ````), which is not the block's end."""
    close = text.find("```", start)
    while close != -1:
        value = _loads(text[start:close])
        if value is not NOTHING:
            return value
        close = text.find("```", close + 3)
    return NOTHING


def find_json(text: str) -> Any:
    """The JSON value of an answer, or `NOTHING`.

    In order: the whole text (any JSON value); else the first fenced block (```` ```json ````
    or bare ```` ``` ````) that is one JSON value; else the first OUTERMOST object or array in
    the prose. Only outermost values are candidates: a bracketed block that does not parse is
    skipped whole (its inner objects are never taken for the answer), and an opener that is
    never closed (a cut answer) ends the search with `NOTHING`. Raw control characters inside
    strings are accepted.
    """
    value = _loads(text)
    if value is not NOTHING:
        return value
    for opener in _FENCE_OPEN.finditer(text):
        value = _fenced_value(text, opener.end())
        if value is not NOTHING:
            return value
    i = 0
    while i < len(text):
        if text[i] not in "{[" or not _looks_like_json(text, i):
            i += 1
            continue
        end = _block_end(text, i)
        if end is None:
            return NOTHING  # everything after an unclosed opener is inside it
        value = _loads(text[i:end])
        if value is not NOTHING:
            return value
        i = end
    return NOTHING


def extract_json(text: str) -> Any | None:
    """`find_json`, with None for "no JSON value" (so a bare `null` answer is None too)."""
    value = find_json(text)
    return None if value is NOTHING else value
