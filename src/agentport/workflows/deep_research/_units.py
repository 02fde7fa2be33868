"""The quotable units of a passage, each with the subject it sits under (pure: no I/O).

On reference pages the name a sentence is about lives above it: a heading, a signature
line (`alarm(time)` above "If time is non-zero, this function requests ..."), an option
name opening a list item (`` * `shell` {boolean} If `true`, ... ``). A unit keeps that
name as its `subject`, so retrieval and candidate choice can match it and the report can
show it with the quote. `**Default:** value` under an option is a unit of its own carrying
the option's name.

Markup that is not prose never becomes a unit: markdown link definitions
(`[x]: #anchor`), HTML comments (a YAML change log in `<!-- ... -->`), table separator
rows, navigation lines made only of links, and fragments that end in a colon (they
introduce a table or a list; they state nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Unit", "is_markup", "sentences", "units_of"]

_MIN_WORDS = 4
_MAX_SENTENCE_CHARS = 400
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_\[(\"'])")
_TABLE_RULE = re.compile(r"^[|\s:\-+=]+$")
_LIST_MARK = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_WORD = re.compile(r"\w+", re.UNICODE)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "...", "…")
_PRONOUN = re.compile(r"(?:It|Its|This|That|These|Those|They|Their|Them)\b")
_LINK_DEF = re.compile(r"^\[[^\]]+\]:\s*\S")
_NAV_LINK = re.compile(r"\[[^\]]*\]\([^)]*\)|\[[^\]]*\]\[[^\]]*\]|<[^>]+>")
_NAV_REST = re.compile(r"^[\s|·•/>«»←→<\-–—,:]*$")
# A signature line: a dotted name with a parameter list, alone on its line, maybe in
# backticks or bold, maybe with a return annotation ("signal.alarm(time)").
_SIGNATURE = re.compile(
    r"^[`*]*(?:(?:class|def|function|method|async)\s+)?[A-Za-z_][\w.]*\s*\(.*\)"
    r"(?:\s*(?:->|:)\s*[^.]*)?[`*]*$"
)
# A list item or line that opens with a name: `` `shell` {boolean} ... ``, ``--flag``,
# "**name**: ...".
_ITEM_NAME = re.compile(
    r"^(?:`{1,2}([^`\s][^`]{0,60})`{1,2}|\*\*([^*]{1,60})\*\*)\s*(?:[:{(—–-]|$)"
)
# A man page's or reST option list's term line: "-n, --number", "--shell=NAME".
_OPT = r"(?:-{1,2}[A-Za-z0-9][\w-]*(?:\[?=[\w\[\]|,-]+\]?)?|[A-Z][A-Z_]*|\[[^\]\s]+\])"
_OPTION_TERM = re.compile(rf"^-{{1,2}}[A-Za-z0-9][\w-]*(?:\[?=[\w\[\]|,-]+\]?)?(?:,? {_OPT})*$")
# a man page's option with its description on the same line: "-i     prompt before every removal"
_OPTION_INLINE = re.compile(rf"^(-{{1,2}}[A-Za-z0-9][\w-]*(?:,? {_OPT})*)\s{{2,}}\S")
_DEFAULT = re.compile(
    r"(?:\*{0,2}Default:\*{0,2}|\*\*Default\*\*:?|Defaults? (?:to|is)\b"
    r"|The default (?:value )?is\b)\s*\S",
    re.IGNORECASE,
)
# a markdown definition: ":   The encoding of the source text file."
_DEFINITION = re.compile(r"^:\s+(\S.*)$")
_ATTR_LIST = re.compile(r"\s*\{:?\s*[#.][^}]*\}|\{:[^}]*\}")
# Python-Markdown's marker of an indented code block: ":::python"
_CODE_MARK = re.compile(r"^:::[\w+-]+$")
_ITEM_CHARS = 320
_TAGGED = re.compile(r"^[^\s.,;:]{1,12}\s{3,}\S")
_EMPHASIS = re.compile(r"__|\*\*|`")
_ADMONITION = re.compile(r"^(?:!!!|\?\?\?\+?)\s*\w")
_RUNNING = re.compile(r"^\S.*?\s{3,}.*\s{3,}[\w.:-]+\(\w+\)$")
_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"


@dataclass(frozen=True, slots=True)
class Unit:
    """One quotable unit: `text`, a contiguous span of the passage (whitespace aside, so a
    verbatim quote), `subject`, the heading, signature or option name it sits under
    ("" when there is none), and `item`: it is a list item, table row, definition or
    option line rather than a sentence of prose."""

    text: str
    subject: str = ""
    item: bool = False  # a list item, table row, definition or option line, not prose


def is_markup(line: str) -> bool:
    """True for a line that is markup, not prose: a link definition, a table separator
    row, a man page's running header or footer ("NICE(1)   User Commands   NICE(1)"), or a
    navigation line made only of links and separators."""
    s = line.strip()
    if not s:
        return False
    if _LINK_DEF.match(s) or (_TABLE_RULE.match(s) and set(s) & set("-=")):
        return True
    if _RUNNING.match(s):
        return True
    return bool(_NAV_LINK.search(s)) and bool(_NAV_REST.match(_NAV_LINK.sub("", s)))


def _name_of(item: str) -> str:
    m = _ITEM_NAME.match(item)
    if m is None:
        return ""
    return (m.group(1) or m.group(2) or "").strip()


def _clean_heading(text: str) -> str:
    return _ATTR_LIST.sub("", text).strip().strip("#").strip() or text.strip().strip("#").strip()


def _open(outline: list[tuple[int, str]], indent: int) -> str:
    """Close the items of *outline* at *indent* or deeper; the subject of the one left
    open (a nested item's parent), "" when none."""
    while outline and outline[-1][0] >= indent:
        outline.pop()
    return outline[-1][1] if outline else ""


def _term_of(line: str) -> str:
    """The name a markdown definition-list term line gives ("__encoding__{: #encoding }"
    -> "encoding"), "" for a line that is not one short name."""
    name = _EMPHASIS.sub("", _ATTR_LIST.sub("", line)).strip().strip(":").strip()
    return name if name and len(name) <= 60 and len(name.split()) <= 4 else ""


def units_of(text: str, heading: str = "") -> list[Unit]:
    """The quotable units of *text* in reading order, each with its subject (*heading*, the
    passage's section heading, until a heading, signature, option term, definition term
    or named list item inside the passage says otherwise): prose sentences, list items
    and table rows; headings, code blocks, markup (`is_markup`, HTML comments),
    colon-ended fragments and units under 4 words are left out, except a `Default:` line,
    which is kept with its option's name.

    A list item, a definition or an option's description of at most 320 characters is one
    unit, so a name's description keeps its default ("CSS class used for the title ...
    Defaults to `toctitle`."); a longer one is cut into sentences. A paragraph indented
    deeper than the item before it goes on under that item's subject. A sentence opening
    with a pronoun ("It never ...") stays with the sentence before it in its paragraph. A
    unit over 400 characters is cut at a word and ends with `…` (the grounding check
    treats `…` as a gap)."""
    units: list[tuple[str, str, bool]] = []  # (text, subject, is_item)
    prose: list[str] = []
    subject = section = _clean_heading(heading)
    term = described = False  # under an option term (man page), and its description seen
    item_subject = ""
    item = False  # the prose is one list item, definition or option description
    item_indent: int | None = None  # the indent of the line that opened the last item
    outline: list[tuple[int, str]] = []  # the open list items: (indent, subject)
    last_line = ""  # the previous paragraph when it was one line (a definition's term)
    fence = False
    comment = False
    code_indent: int | None = None  # inside an indented code block opened by ":::lang"

    def flush() -> None:
        nonlocal item
        if not prose:
            item = False
            return
        owner = item_subject or subject
        joined = " ".join(prose)
        prose.clear()
        if item and len(joined) <= _ITEM_CHARS and not joined.endswith(":"):
            units.append((joined, owner, True))
            item = False
            return
        item = False
        for n, piece in enumerate(_SENTENCE_END.split(joined)):
            last = units[-1] if units else None
            if last is not None and not last[2] and last[0].endswith(_ABBREVIATIONS):
                units[-1] = (last[0] + " " + piece, last[1], False)  # "e.g. X" is one
            elif last is not None and n and _PRONOUN.match(piece):
                units[-1] = (last[0] + " " + piece, last[1], False)  # keeps its referent
            else:
                units.append((piece, owner, False))

    rows = text.splitlines()

    def goes_on(i: int) -> bool:
        """The item's text goes on past the blank line *i*: the next line is indented
        deeper than the line that opened it (and opens no list item, heading or code)."""
        nxt = next((r for r in rows[i + 1 :] if r.strip()), "")
        deeper = item_indent is not None and len(nxt) - len(nxt.lstrip()) > item_indent
        plain = not (_LIST_MARK.match(nxt.strip()) or _HEADING.match(nxt.strip()))
        return bool(item and prose and deeper and plain and not _CODE_MARK.match(nxt.strip()))

    for i, raw in enumerate(rows):
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if comment:
            if _COMMENT_CLOSE in line:
                comment = False
            continue
        if code_indent is not None:
            if not line or indent >= code_indent:
                continue
            code_indent = None
        if _CODE_MARK.match(line):
            flush()
            code_indent = indent
            continue
        if line.startswith(_COMMENT_OPEN):
            flush()
            comment = _COMMENT_CLOSE not in line
            continue
        if line.startswith("```") or line.startswith("~~~"):
            flush()
            fence = not fence
            continue
        if not fence and not line and goes_on(i):
            continue
        if fence or not line:
            one_line = len(prose) == 1 and not item
            last_line = prose[0] if one_line else ("" if prose else last_line)
            flush()
            item_subject, item_indent = "", None
            if term and described:  # an option term's description ended
                subject, term, described = section, False, False
            continue
        if not prose and not item_subject:
            # a paragraph's first line: one indented deeper than an open list item or
            # definition goes on under its subject; a shallower one closes it
            while outline and outline[-1][0] >= indent:
                outline.pop()
            if outline and not _LIST_MARK.match(line) and not _DEFINITION.match(line):
                item_subject = outline[-1][1]
        if _ADMONITION.match(line):
            flush()  # "!!! Note": the note is not the item's text
            continue
        if (m := _HEADING.match(line)) is not None:
            flush()
            subject = section = _clean_heading(m.group(2))
            item_subject, term, item_indent = "", False, None
            outline.clear()
            continue
        if is_markup(line):
            flush()
            continue
        if not prose and _OPTION_TERM.match(line):
            flush()
            subject, term, described = line, True, False
            item_subject, item_indent = "", indent
            outline.clear()
            continue
        if (
            not prose
            and _SIGNATURE.match(line)
            and not line.endswith((".", ";"))
            and "  " not in line
        ):
            flush()
            subject, term = line.strip("`*").strip(), False
            item_subject, item_indent = "", None
            outline.clear()
            continue
        if (m := _OPTION_INLINE.match(line)) is not None:
            flush()
            item_subject, item_indent, item = m.group(1), indent, True
            prose.append(line)
            continue
        if not prose and _TAGGED.match(line) and not _LIST_MARK.match(line):
            flush()  # a man page's tagged entry: "127    if COMMAND cannot be found"
            item_indent, item = indent, True
            prose.append(line)
            continue
        if (m := _DEFINITION.match(line)) is not None:
            flush()
            parent = _open(outline, indent)
            item_subject = _term_of(last_line) or parent
            item_indent, item = indent, True
            outline.append((indent, item_subject))
            prose.append(m.group(1))
            continue
        if term and not described:
            item = True  # an option's description, under its term
        described = True
        if line.startswith("|"):
            flush()
            units.append((line.strip("|").strip(), subject, True))
            continue
        if _LIST_MARK.match(line):
            flush()
            body = _LIST_MARK.sub("", line)
            item_subject = _name_of(body) or _open(outline, indent)
            item_indent, item = indent, True
            outline.append((indent, item_subject))
            prose.append(body)
            continue
        if _DEFAULT.match(line) and not (prose and item):
            flush()
            units.append((line, item_subject or subject, True))
            continue
        prose.append(line)
    flush()
    out: list[Unit] = []
    for body, owner, is_item in units:
        body = body.strip()
        is_default = _DEFAULT.search(body) is not None and owner != ""
        if body.endswith(":") or (len(_WORD.findall(body)) < _MIN_WORDS and not is_default):
            continue
        if len(body) > _MAX_SENTENCE_CHARS:
            body = body[: body.rfind(" ", 0, _MAX_SENTENCE_CHARS)].rstrip() + " …"
        out.append(Unit(body, owner, is_item))
    return out


def sentences(text: str) -> list[str]:
    """The texts of `units_of(text)`."""
    return [u.text for u in units_of(text)]
