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

__all__ = ["Unit", "is_markup", "is_rule", "sentences", "units_of"]

_MIN_WORDS = 4
_MAX_SENTENCE_CHARS = 400
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_\[(\"'])")
_TABLE_RULE = re.compile(r"^[|\s:\-+=]+$")
_LIST_MARK = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_WORD = re.compile(r"\w+", re.UNICODE)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "...", "…")
# a person's initial ends no sentence: "Written by H. Peter Anvin."
_INITIAL = re.compile(r"(?:^|[\s(])[A-Z]\.$")
# a sentence that leans on the one before it ("It never ...", "In this case the stream ...")
_PRONOUN = re.compile(
    r"(?:It|Its|This|That|These|Those|They|Their|Them|In (?:this|that|such a|either) case)\b"
)
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


def is_rule(line: str) -> bool:
    """True for a pipe table's rule row ("|---|:--:|", "--- | ---")."""
    s = line.strip()
    return "|" in s and "-" in s and _TABLE_RULE.match(s) is not None


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
    reader = _Reader(text.splitlines(), _clean_heading(heading))
    for i, raw in enumerate(reader.rows):
        reader.feed(i, raw)
    reader.flush()
    return _kept(reader.units)


def _kept(units: list[tuple[str, str, bool]]) -> list[Unit]:
    """The units worth quoting: no colon-ended fragment, none under `_MIN_WORDS` words but a
    default line with its owner, each cut at a word past `_MAX_SENTENCE_CHARS`."""
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


class _Reader:
    """`units_of`'s line-by-line state: the units so far, the open paragraph (`prose`), the
    subject it sits under, and the open blocks (code, comment, fence, list items)."""

    def __init__(self, rows: list[str], heading: str) -> None:
        self.rows = rows
        self.units: list[tuple[str, str, bool]] = []  # (text, subject, is_item)
        self.prose: list[str] = []
        self.subject = self.section = heading
        self.term = self.described = False  # under an option term, its description seen
        self.item_subject = ""
        self.item = False  # the prose is one list item, definition or option description
        self.tagged = False  # that item is a man page's tagged entry
        self.item_indent: int | None = None  # the indent of the line that opened the item
        self.outline: list[tuple[int, str]] = []  # the open list items: (indent, subject)
        self.last_line = ""  # the previous paragraph when it was one line (a term)
        self.fence = False
        self.comment = False
        self.code_indent: int | None = None  # inside an indented block opened by ":::lang"
        self.table: str | None = None  # inside a pipe table: its header row ("" for none)

    def flush(self) -> None:
        """The open paragraph as units: one when it is a short item, else its sentences."""
        units, prose = self.units, self.prose
        self.tagged = False
        if not prose:
            self.item = False
            return
        owner = self.item_subject or self.subject
        joined = " ".join(prose)
        prose.clear()
        if self.item and len(joined) <= _ITEM_CHARS and not joined.endswith(":"):
            units.append((joined, owner, True))
            self.item = False
            return
        self.item = False
        for n, piece in enumerate(_SENTENCE_END.split(joined)):
            last = units[-1] if units else None
            if (
                last is not None
                and not last[2]
                and (last[0].endswith(_ABBREVIATIONS) or _INITIAL.search(last[0]))
            ):
                units[-1] = (last[0] + " " + piece, last[1], False)  # "e.g. X" is one
            elif last is not None and n and _PRONOUN.match(piece):
                units[-1] = (last[0] + " " + piece, last[1], False)  # keeps its referent
            else:
                units.append((piece, owner, False))

    def goes_on(self, i: int) -> bool:
        """The item's text goes on past the blank line *i*: the next line is indented
        deeper than the line that opened it (and opens no list item, heading or code)."""
        nxt = next((r for r in self.rows[i + 1 :] if r.strip()), "")
        indent = self.item_indent
        deeper = indent is not None and len(nxt) - len(nxt.lstrip()) > indent
        plain = not (_LIST_MARK.match(nxt.strip()) or _HEADING.match(nxt.strip()))
        opened = self.item and self.prose
        return bool(opened and deeper and plain and not _CODE_MARK.match(nxt.strip()))

    def feed(self, i: int, raw: str) -> None:
        """Line *i* (*raw*, as in the text)."""
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if self._table(i, line, indent) or self._block(i, line, indent):
            return
        if not self._structure(line, indent):
            self._body(line, indent)

    def _table(self, i: int, line: str, indent: int) -> bool:
        """A pipe table's header row (the subject of the rows under it, not a unit) or one
        of its rows (a unit): True when taken. Code and comments hold no table."""
        code = self.code_indent is not None and indent >= self.code_indent
        if "|" not in line or self.fence or self.comment or code:
            return False
        if is_rule(self.rows[i + 1] if i + 1 < len(self.rows) else ""):
            self.flush()
            self.table = " ".join(line.strip("|").split())
            return True
        if self.table is not None and not is_rule(line):
            self.flush()
            self.units.append((line.strip("|").strip(), self.table or self.subject, True))
            return True
        return False

    def _block(self, i: int, line: str, indent: int) -> bool:
        """Comments, code and blank lines: True when *line* is taken."""
        if self.comment:
            if _COMMENT_CLOSE in line:
                self.comment = False
            return True
        if self.code_indent is not None:
            if not line or indent >= self.code_indent:
                return True
            self.code_indent = None
        if _CODE_MARK.match(line):
            self.flush()
            self.code_indent = indent
            return True
        if line.startswith(_COMMENT_OPEN):
            self.flush()
            self.comment = _COMMENT_CLOSE not in line
            return True
        if line.startswith("```") or line.startswith("~~~"):
            self.flush()
            self.fence = not self.fence
            return True
        if not self.fence and not line and self.goes_on(i):
            return True
        if self.fence or not line:
            self.table = None  # a blank line ends a table
            one_line = len(self.prose) == 1 and not self.item
            self.last_line = self.prose[0] if one_line else ("" if self.prose else self.last_line)
            self.flush()
            self.item_subject, self.item_indent = "", None
            if self.term and self.described:  # an option term's description ended
                self.subject, self.term, self.described = self.section, False, False
            return True
        if not self.prose and not self.item_subject:
            # a paragraph's first line: one indented deeper than an open list item or
            # definition goes on under its subject; a shallower one closes it
            while self.outline and self.outline[-1][0] >= indent:
                self.outline.pop()
            if self.outline and not _LIST_MARK.match(line) and not _DEFINITION.match(line):
                self.item_subject = self.outline[-1][1]
        return False

    def _structure(self, line: str, indent: int) -> bool:
        """Headings, markup, option terms and signatures (a new subject): True when taken."""
        if _ADMONITION.match(line):
            self.flush()  # "!!! Note": the note is not the item's text
            return True
        if (m := _HEADING.match(line)) is not None:
            self._new_subject(_clean_heading(m.group(2)), None)
            self.section = self.subject
            return True
        if is_markup(line):
            self.flush()
            if "|" in line and self.table is None:
                self.table = ""  # a table with no header row
            return True
        if not self.prose and _OPTION_TERM.match(line):
            self._new_subject(line, indent)
            self.term, self.described = True, False
            return True
        if (
            not self.prose
            and _SIGNATURE.match(line)
            and not line.endswith((".", ";"))
            and "  " not in line
        ):
            self._new_subject(line.strip("`*").strip(), None)
            return True
        return self._item(line, indent)

    def _new_subject(self, subject: str, indent: int | None) -> None:
        self.flush()
        self.subject, self.term = subject, False
        self.item_subject, self.item_indent = "", indent
        self.outline.clear()

    def _item(self, line: str, indent: int) -> bool:
        """An inline option, a man page's tagged entry or a definition: True when taken."""
        if (m := _OPTION_INLINE.match(line)) is not None:
            self.flush()
            self.item_subject, self.item_indent, self.item = m.group(1), indent, True
            self.prose.append(line)
            return True
        # a list's introduction ("DIGEST determines ... format:") or the entry before
        # ends where a tagged entry starts, and a tagged entry where a line at its tag's
        # indent starts ("sha224 (equivalent to sha224sum)": a long tag, one space)
        after = not self.prose or self.prose[-1].endswith(":")
        next_tag = self.tagged and self.item and indent == self.item_indent
        if (next_tag or (after and _TAGGED.match(line))) and not _LIST_MARK.match(line):
            self.flush()  # a man page's tagged entry: "127    if COMMAND cannot be found"
            self.item_indent, self.item, self.tagged = indent, True, True
            self.prose.append(line)
            return True
        if (m := _DEFINITION.match(line)) is not None:
            self.flush()
            parent = _open(self.outline, indent)
            self.item_subject = _term_of(self.last_line) or parent
            self.item_indent, self.item = indent, True
            self.outline.append((indent, self.item_subject))
            self.prose.append(m.group(1))
            return True
        return False

    def _body(self, line: str, indent: int) -> None:
        """Table rows, list items, default lines and prose."""
        if self.term and not self.described:
            self.item = True  # an option's description, under its term
        self.described = True
        if line.startswith("|"):
            self.flush()
            self.units.append((line.strip("|").strip(), self.subject, True))
        elif _LIST_MARK.match(line):
            self.flush()
            body = _LIST_MARK.sub("", line)
            self.item_subject = _name_of(body) or _open(self.outline, indent)
            self.item_indent, self.item = indent, True
            self.outline.append((indent, self.item_subject))
            self.prose.append(body)
        elif _DEFAULT.match(line) and not (self.prose and self.item):
            self.flush()
            self.units.append((line, self.item_subject or self.subject, True))
        else:
            self.prose.append(line)


def sentences(text: str) -> list[str]:
    """The texts of `units_of(text)`."""
    return [u.text for u in units_of(text)]
