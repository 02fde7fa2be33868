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
_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"


@dataclass(frozen=True, slots=True)
class Unit:
    """One quotable unit: `text`, a contiguous span of the passage (whitespace aside, so a
    verbatim quote), and `subject`, the heading, signature or option name it sits under
    ("" when there is none)."""

    text: str
    subject: str = ""


def is_markup(line: str) -> bool:
    """True for a line that is markup, not prose: a link definition, a table separator
    row, or a navigation line made only of links and separators."""
    s = line.strip()
    if not s:
        return False
    if _LINK_DEF.match(s) or (_TABLE_RULE.match(s) and set(s) & set("-=")):
        return True
    return bool(_NAV_LINK.search(s)) and bool(_NAV_REST.match(_NAV_LINK.sub("", s)))


def _name_of(item: str) -> str:
    m = _ITEM_NAME.match(item)
    if m is None:
        return ""
    return (m.group(1) or m.group(2) or "").strip()


def _clean_heading(text: str) -> str:
    return text.strip().strip("#").strip()


def units_of(text: str, heading: str = "") -> list[Unit]:
    """The quotable units of *text* in reading order, each with its subject (*heading*, the
    passage's section heading, until a heading, signature or named list item inside the
    passage says otherwise): prose sentences, list items and table rows; headings, code
    blocks, markup (`is_markup`, HTML comments), colon-ended fragments and units under 4
    words are left out, except a `Default:` line, which is kept with its option's name.
    A sentence opening with a pronoun ("It never ...") stays with the sentence before it in
    its paragraph. A unit over 400 characters is cut at a word and ends with `…` (the
    grounding check treats `…` as a gap)."""
    units: list[tuple[str, str, bool]] = []  # (text, subject, is_item)
    prose: list[str] = []
    subject = section = _clean_heading(heading)
    term = described = False  # under an option term (man page), and its description seen
    item_subject = ""
    fence = False
    comment = False

    def flush() -> None:
        if not prose:
            return
        owner = item_subject or subject
        for n, piece in enumerate(_SENTENCE_END.split(" ".join(prose))):
            last = units[-1] if units else None
            if last is not None and not last[2] and last[0].endswith(_ABBREVIATIONS):
                units[-1] = (last[0] + " " + piece, last[1], False)  # "e.g. X" is one
            elif last is not None and n and _PRONOUN.match(piece):
                units[-1] = (last[0] + " " + piece, last[1], False)  # keeps its referent
            else:
                units.append((piece, owner, False))
        prose.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if comment:
            if _COMMENT_CLOSE in line:
                comment = False
            continue
        if line.startswith(_COMMENT_OPEN):
            flush()
            comment = _COMMENT_CLOSE not in line
            continue
        if line.startswith("```") or line.startswith("~~~"):
            flush()
            fence = not fence
            continue
        if fence or not line:
            flush()
            item_subject = ""
            if term and described:  # an option term's description ended
                subject, term, described = section, False, False
            continue
        if (m := _HEADING.match(line)) is not None:
            flush()
            subject = section = _clean_heading(m.group(2))
            item_subject, term = "", False
            continue
        if is_markup(line):
            flush()
            continue
        if not prose and _OPTION_TERM.match(line):
            flush()
            subject, term, described = line, True, False
            item_subject = ""
            continue
        if (
            not prose
            and _SIGNATURE.match(line)
            and not line.endswith((".", ";"))
            and "  " not in line
        ):
            flush()
            subject, term = line.strip("`*").strip(), False
            item_subject = ""
            continue
        if (m := _OPTION_INLINE.match(line)) is not None:
            flush()
            item_subject = m.group(1)
            prose.append(line)
            continue
        described = True
        if line.startswith("|"):
            flush()
            units.append((line.strip("|").strip(), subject, True))
            continue
        if _LIST_MARK.match(line):
            flush()
            item = _LIST_MARK.sub("", line)
            item_subject = _name_of(item)
            prose.append(item)
            continue
        if _DEFAULT.match(line):
            flush()
            units.append((line, item_subject or subject, True))
            continue
        prose.append(line)
    flush()
    out: list[Unit] = []
    for body, owner, _ in units:
        body = body.strip()
        is_default = _DEFAULT.match(body) is not None and owner != ""
        if body.endswith(":") or (len(_WORD.findall(body)) < _MIN_WORDS and not is_default):
            continue
        if len(body) > _MAX_SENTENCE_CHARS:
            body = body[: body.rfind(" ", 0, _MAX_SENTENCE_CHARS)].rstrip() + " …"
        out.append(Unit(body, owner))
    return out


def sentences(text: str) -> list[str]:
    """The texts of `units_of(text)`."""
    return [u.text for u in units_of(text)]
