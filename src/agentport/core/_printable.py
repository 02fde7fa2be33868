"""Terminal-safe text: the one sanitiser every line printed from outside text goes through.

A server's error body, a CLI's stderr, a model's answer, a web page's title or a label in a
project's graph can carry terminal controls: OSC sequences set the window title or write the
clipboard (OSC 52), a CR returns to the line's start and overwrites the real error, bidi
overrides reorder what is shown. `printable` removes whole escape sequences (CSI, OSC, DCS,
SOS, PM, APC, in their 7-bit and 8-bit forms, and two-byte ESC sequences) and writes every
other control character visibly as an escape (`\\r`, `\\u001b`, `\\u202e`), so what the
terminal shows is what the text says. Escapes are JSON's, so a JSON document stays valid.
"""

from __future__ import annotations

import re

__all__ = ["printable", "without_sequences"]

# ESC-introduced or 8-bit C1 control strings, ended by BEL or ST (ESC \ or 0x9c)
_STRING = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
# CSI: parameters, intermediates, one final byte (ECMA-48 5.4)
_CSI = r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
# any other ESC sequence: intermediates and a final byte (charset selection, ESC 7, ESC c)
_ESC = r"\x1b[\x20-\x2f]*[\x30-\x7e]"
_SEQUENCE = re.compile(f"{_STRING}|{_CSI}|{_ESC}")
# what is left to escape: C0 but TAB (and LF, CR LF where lines are allowed), DEL, C1, lone
# surrogates (no encoding writes them), bidi controls, the Unicode line separators
_C0 = "\x00-\x08\x0b\x0c\x0e-\x1f"
_OTHER = "\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_LINES = re.compile(f"\r(?!\n)|[{_C0}{_OTHER}]")
_ONE_LINE = re.compile(f"[\r\n{_C0}{_OTHER}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or f"\\u{ord(char):04x}"


def without_sequences(text: str) -> str:
    """*text* without its terminal escape sequences (the colours and cursor moves of a CLI
    that writes for a terminal); other characters kept as they are."""
    return _SEQUENCE.sub("", text) if "\x1b" in text or not text.isascii() else text


def printable(text: str, *, newlines: bool = True) -> str:
    """*text* safe to write to a terminal: escape sequences removed, every other control
    character escaped as JSON does (`\\r`, `\\u001b`), TAB kept, and LF (and CR LF) kept
    when *newlines* (multi-line output), else escaped as `\\n` (one line).

    The result has no C0 control but TAB and LF, no DEL, no C1 control, no lone surrogate
    and no bidi control; `printable(printable(t)) == printable(t)`.
    """
    if text.isprintable():  # the common case: nothing to do
        return text
    out = without_sequences(text)
    return (_LINES if newlines else _ONE_LINE).sub(_escape, out)
