"""Which encoding a fetched page is in, the way a browser decides (pure, no I/O).

Labels are resolved by the WHATWG Encoding Standard through `webencodings` (the Python
implementation of its label table and BOM sniffing, used by html5lib and WeasyPrint), never
by Python's codec names: `iso-8859-1`, `latin1` and `ascii` are windows-1252, `gb2312` is GBK,
`shift_jis` is Microsoft's cp932, `x-cp1251` and `koi8` are known labels, and a label Python
knows but the web does not (`hex`, `rot13`, `idna`, `utf-7`) is ignored. The order is HTML's
"encoding sniffing algorithm": a byte order mark; the HTTP `Content-Type` charset; for HTML,
the `<meta>` prescan of the first 1024 bytes (HTML section 13.2.3.2, below: a `charset`
attribute, or `http-equiv="content-type"` with a `content` charset; UTF-16 there means UTF-8,
`x-user-defined` windows-1252); else UTF-8 when the bytes are valid UTF-8, else windows-1252
(a browser's default for an undeclared Western page).
"""

from __future__ import annotations

import codecs
import re
from functools import cache
from types import ModuleType
from typing import Any

__all__ = ["decode_page", "prescan"]

_PRESCAN_BYTES = 1024  # HTML: the prescan looks at no more than the first 1024 bytes
_SPACE = b"\t\n\x0c\r "
_ATTRIBUTE = re.compile(
    rb"""[\t\n\x0c\r /]*(?P<name>[^\t\n\x0c\r />][^\t\n\x0c\r /=>]*)[\t\n\x0c\r ]*"""
    rb"""(?:=[\t\n\x0c\r ]*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\t\n\x0c\r >]*)))?"""
)
_CHARSET_IN_CONTENT = re.compile(
    rb"""charset[\t\n\x0c\r ]*=[\t\n\x0c\r ]*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'"""
    rb"""|(?P<bare>[^\t\n\x0c\r ;"']+))""",
    re.I,
)


@cache
def _we() -> ModuleType:
    """webencodings, imported on first use: it comes with the `web` extra."""
    try:
        import webencodings
    except ImportError as exc:
        raise ImportError(
            "decoding web pages needs the web extra: pip install 'agentport[web]'"
        ) from exc
    module: ModuleType = webencodings
    return module


@cache
def _gbk() -> Any:
    # The Encoding Standard's GBK decoder is its gb18030 decoder (a GBK page may hold the
    # four-byte sequences); webencodings hands Python's narrower `gbk` codec for it.
    return _we().Encoding("gbk", codecs.lookup("gb18030"))


def _lookup(label: bytes | str | None) -> Any:
    """The WHATWG encoding (a `webencodings.Encoding`) a label names, or None."""
    if label is None:
        return None
    text = label.decode("ascii", "replace") if isinstance(label, bytes) else label
    found = _we().lookup(text)
    return _gbk() if found is not None and found.name == "gbk" else found


def _meta_charset(attributes: dict[bytes, bytes]) -> Any:
    """HTML's rules for one `<meta>` element's attributes (first occurrence of each wins)."""
    if b"charset" in attributes:
        found = _lookup(attributes[b"charset"])
    elif attributes.get(b"http-equiv", b"").lower() == b"content-type":
        content = _CHARSET_IN_CONTENT.search(attributes.get(b"content", b""))
        value = content and (content["dq"] or content["sq"] or content["bare"])
        found = _lookup(value) if value else None
    else:
        return None
    if found is not None and found.name in ("utf-16be", "utf-16le"):
        return _lookup("utf-8")  # a document that can carry a <meta> is not UTF-16
    if found is not None and found.name == "x-user-defined":
        return _lookup("windows-1252")
    return found


def _attributes(head: bytes, at: int) -> tuple[dict[bytes, bytes], int]:
    """The attributes of the tag whose name ends at *at*, and the index past its `>`."""
    found: dict[bytes, bytes] = {}
    while at < len(head):
        while at < len(head) and head[at] in _SPACE + b"/":
            at += 1
        if at >= len(head) or head[at : at + 1] == b">":
            return found, at + 1
        match = _ATTRIBUTE.match(head, at)
        if match is None or match.end() == at:
            return found, at + 1
        value = match["dq"] if match["dq"] is not None else match["sq"]
        value = value if value is not None else (match["bare"] or b"")
        found.setdefault(match["name"].lower(), value)
        at = match.end()
    return found, at


def prescan(head: bytes) -> Any:
    """The encoding the `<meta>` elements of the first 1024 bytes of an HTML page declare
    (HTML section 13.2.3.2) as a `webencodings.Encoding`, or None. Comments and other tags are
    skipped as the spec says."""
    head = head[:_PRESCAN_BYTES]
    at = 0
    while (at := head.find(b"<", at)) >= 0:
        if head.startswith(b"<!--", at):
            end = head.find(b"-->", at + 2)  # `<!-->` closes itself
            if end < 0:
                return None
            at = end + 3
            continue
        name = re.match(rb"</?([A-Za-z][^\t\n\x0c\r />]*)", head[at:])
        if name is not None:
            attributes, at = _attributes(head, at + name.end())
            if name.group(0).lower() == b"<meta" and (found := _meta_charset(attributes)):
                return found
            continue
        if head[at + 1 : at + 2] in (b"!", b"/", b"?"):
            end = head.find(b">", at)
            if end < 0:
                return None
            at = end + 1
            continue
        at += 1
    return None


def decode_page(body: bytes, header_charset: str | None, *, html: bool) -> tuple[str, str]:
    """(text, WHATWG encoding name) of a page's *body*: a BOM first, then *header_charset*
    (the Content-Type label as sent, resolved by the WHATWG table; an unknown label is
    ignored), then for *html* the `<meta>` prescan, else UTF-8 when valid, else windows-1252.
    Undecodable bytes become U+FFFD. Raises ImportError without the `web` extra."""
    declared = _lookup(header_charset) or (prescan(body) if html else None)
    if declared is None:
        try:
            body.decode("utf-8")
            declared = _lookup("utf-8")
        except UnicodeDecodeError:
            declared = _lookup("windows-1252")
    text, used = _we().decode(body, declared, errors="replace")
    return str(text), str(used.name)
