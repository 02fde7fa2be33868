"""Corpus mode: a folder of documents indexed for full-text search (SQLite FTS5, BM25).

agentport does search and fetch here; the model only ranks, extracts, votes and
synthesises, so research works on ANY backend, including a small local model without web
tools. Documents are split into passages of at most `max_passage_chars`; each passage is a
"source" with a stable URL `corpus://<relative path>/<n>`.
"""

from __future__ import annotations

import re
import sqlite3
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

from returns.result import Failure, Result, Success

from ...core import ErrorKind, ProviderError
from ._units import is_rule

__all__ = ["CORPUS_SUFFIXES", "STOP_WORDS", "Corpus", "Passage", "load_corpus", "query_terms"]

CORPUS_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".htm"})
_MAX_FILE_BYTES = 5_000_000
_WORD = re.compile(r"\w+", re.UNICODE)
# bm25 column weights: title, section heading, prose, fenced code. Code weighs little: a
# page that shows a question in an example command does not answer it.
_WEIGHTS = (3.0, 5.0, 1.0, 0.3)
_FENCED = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*(```|~~~)[^\n]*$", re.MULTILINE | re.DOTALL)
# Question words that say nothing about the topic; searching for them ranks passages that
# merely quote a question ("How does ...?") above the ones that answer it.
STOP_WORDS = frozenset(
    """a about an and are as at be been but by can could do does did for from had has have
    how i if in into is it its me my of on or our should so than that the their them then
    there these they this those to use used using was we were what when where which while
    who why will with would you your""".split()  # noqa: SIM905 - a readable word list
)


def query_terms(text: str) -> list[str]:
    """The distinct lower-cased words of *text* without `STOP_WORDS`, in order (all words
    when every one is a stop word)."""
    words = list(dict.fromkeys(_WORD.findall(text.lower())))
    content = [w for w in words if w not in STOP_WORDS]
    return content or words


@dataclass(frozen=True, slots=True)
class Passage:
    """One searchable unit: `url` (`corpus://path/n`), document `path` (relative), `title`,
    `text`, its index `n` within the document, and the markdown `heading` of its section
    ("" before the first heading)."""

    url: str
    path: str
    title: str
    text: str
    n: int
    heading: str = ""


class _HTMLText(HTMLParser):
    """Visible text of an HTML page (no script/style, no navigation), block tags as line
    breaks; headings and definition terms (a Sphinx page's `<dt>` signature) become
    markdown heading lines, so a passage keeps the name it is about."""

    _BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "section", "pre", "dl", "dd", "table", "ul", "ol"}
    )
    _HEADINGS: ClassVar[dict[str, int]] = {
        "h1": 1,
        "h2": 2,
        "h3": 3,
        "h4": 4,
        "h5": 5,
        "h6": 6,
        "dt": 4,
    }
    _SKIP = frozenset({"script", "style", "nav", "header", "footer", "template"})
    _SKIP_CLASSES = frozenset({"related", "sphinxsidebar", "headerlink", "navigation", "footer"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skipping: list[str] = []  # the open tags whose content is not text
        self._in_title = False
        self._heading: list[str] | None = None
        self._level = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = set((dict(attrs).get("class") or "").split())
        if self._skipping or tag in self._SKIP or classes & self._SKIP_CLASSES:
            if tag not in ("br", "img", "hr", "meta", "link", "input"):
                self._skipping.append(tag)
        elif tag == "title":
            self._in_title = True
        elif tag in self._HEADINGS and self._heading is None:
            self._heading, self._level = [], self._HEADINGS[tag]
        elif tag in self._BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if self._skipping:
            if tag in self._skipping:
                while self._skipping and self._skipping.pop() != tag:
                    pass
            return
        if tag == "title":
            self._in_title = False
        elif tag in self._HEADINGS and self._heading is not None:
            text = " ".join("".join(self._heading).replace("¶", " ").split())
            if text:
                self.parts.append("\n\n" + "#" * self._level + " " + text + "\n\n")
            self._heading = None
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif self._skipping:
            return
        elif self._heading is not None:
            self._heading.append(data)
        else:
            self.parts.append(data)


def _title_of(text: str, fallback: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines[:40]):
        s = line.strip()
        if s.startswith("#"):
            return s.lstrip("#").strip() or fallback
        # reStructuredText: a title line underlined with =, - or ~
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if s and len(nxt) >= len(s) and set(nxt) <= set("=-~^*"):
            return s
    return fallback


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# reStructuredText: a description directive names what follows (".. function:: alarm(time)")
_RST_DIRECTIVE = re.compile(
    r"^\.\.\s+(?:py:|c:|cpp:|js:|std:)?(?:function|method|class|attribute|data|option|"
    r"envvar|module|exception|decorator|classmethod|staticmethod|describe|object)::\s*(.+)$"
)
_RST_LITERAL = re.compile(
    r"^\.\.\s+[\w:-]*(?:code|example|doctest|literal|testcode|run|ipython|highlight)[\w:-]*::"
)
_ATTRS = re.compile(r"\s*\{:?\s*[#.][^}]*\}")
_RST_RULE = re.compile(r"^([=\-~^*+#\"'`])\1{2,}$")
_MAN_HEADING = re.compile(r"^[A-Z][A-Z0-9 ,/&()\-]{2,40}$")
# a man page's sub-section (groff `.SS`, indented 3): "   EXIT status:"
_MAN_SUBHEADING = re.compile(r"^ {1,4}([A-Z][A-Za-z0-9 ,/&()\-]{1,38}):?$")
# a man page's running header or footer: "NICE(1)     User Commands     NICE(1)", repeated
# on every page and stating nothing
_MAN_RUNNING = re.compile(r"^\S.*?\s{3,}.*\s{3,}[\w.:-]+\(\w+\)\s*$")


def _heading_of(line: str, nxt: str, plain: bool) -> str | None:
    """The heading *line* opens (markdown `#`, a reST directive's name, a reST title over
    its underline *nxt*, a man page's upper-case section name when *plain*), or None."""
    stripped = line.strip()
    # an ATX heading is indented at most 3 spaces (CommonMark 4.2): deeper, "# ..." is a
    # comment in an indented code block ("        # define your extension here")
    if _indent(line) <= 3 and (m := _HEADING.match(stripped)) is not None:
        # markdown's attribute list is markup: "Dot Notation { #dot_notation }"
        return _ATTRS.sub("", m.group(2)).strip() or m.group(2).strip()
    if (m := _RST_DIRECTIVE.match(stripped)) is not None:
        return m.group(1).strip()
    under = nxt.strip()
    if stripped and _RST_RULE.match(under) and len(under) >= len(stripped) >= 2:
        return stripped
    if plain and line == stripped and _MAN_HEADING.match(stripped):
        return stripped.title() if stripped.isupper() and len(stripped) > 3 else stripped
    if (
        plain
        and (m := _MAN_SUBHEADING.match(line.rstrip())) is not None
        and m.group(1)[:2].isupper()
    ):
        return m.group(1).strip()
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _hangs(rows: Sequence[str], i: int, first: str) -> bool:
    """Plain text: True when the next non-blank line after *rows[i]* is indented deeper
    than *first* (the block's first line): a man page's option description goes on after
    a blank line under its option ("-k, --kill-after=DURATION" over its text)."""
    for row in rows[i + 1 :]:
        if row.strip():
            return _indent(row) > _indent(first) and not _MAN_RUNNING.match(row)
    return False


def _blocks(text: str, plain: bool = False, indented: bool = False) -> list[tuple[str, str]]:
    """(section heading, block) pairs: blank-line separated blocks with their lines kept
    (tables, lists, code), fenced code kept whole, headings (`_heading_of`) starting
    sections; a reST title's underline is dropped. In *plain* text (a man page), running
    headers and footers are dropped and a blank line inside a hanging indent (an option
    over its description) does not end the block. *indented*: lines keep their indent
    (a definition's or list item's indented paragraph stays under it, `_units`)."""
    out: list[tuple[str, str]] = []
    heading = ""
    lines: list[str] = []
    fence = False

    def flush() -> None:
        if indented:
            block = "\n".join(line.rstrip() for line in lines).strip("\n")
            block = block if block.strip() else ""
        else:
            block = "\n".join(line.strip() for line in lines).strip()
        if block:
            out.append((heading, block))
        lines.clear()

    rows = text.splitlines()
    skip_rule = False
    literal: int | None = None  # the indent of a reST line that opens a literal block
    in_literal = False
    for i, line in enumerate(rows):
        stripped = line.strip()
        if literal is not None and not fence:
            # reST: the indented block after "Example::" or `.. code-block::` is code
            indent = len(line) - len(line.lstrip())
            if not stripped:
                if in_literal:
                    lines.append("")
                continue
            if indent > literal:
                if not in_literal:
                    flush()
                    lines.append("```")
                    in_literal = True
                lines.append(line)
                continue
            if in_literal:
                lines.append("```")
                flush()
            literal, in_literal = None, False
        if skip_rule:
            skip_rule = False
            if _RST_RULE.match(stripped):
                continue
        if plain and _MAN_RUNNING.match(line):
            continue
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fence = not fence
        nxt = rows[i + 1] if i + 1 < len(rows) else ""
        found = None if fence else _heading_of(line, nxt, plain)
        if found is not None:
            flush()
            heading = found
            out.append(
                (heading, "#" * 2 + " " + found if not stripped.startswith("#") else stripped)
            )
            skip_rule = _RST_RULE.match(nxt.strip()) is not None
            continue
        if not fence and not stripped:
            if not (plain and lines and _hangs(rows, i, lines[0])):
                flush()
            continue
        lines.append(line)
        if not fence and (
            _RST_LITERAL.match(stripped)
            or (stripped.endswith("::") and not stripped.startswith(".."))
        ):
            literal = len(line) - len(line.lstrip())
    if in_literal:
        lines.append("```")
    flush()
    return _keep_items_whole(out) if indented else out


def _keep_items_whole(blocks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Join a block indented deeper than the block before it (a list item's or a
    definition's further paragraph) to that block, so packing never parts an item from
    its text; headings and code are never joined to."""
    out: list[tuple[str, str]] = []
    for heading, block in blocks:
        if out and out[-1][0] == heading:
            prev = out[-1][1]
            opener = prev.lstrip("\n")
            deeper = _indent(block) > _indent(opener)
            if deeper and not opener.lstrip().startswith(("#", "```", "~~~")):
                out[-1] = (heading, prev + "\n\n" + block)
                continue
        out.append((heading, block))
    return out


_LINE_END_SENTENCE = re.compile(r"[.!?:;][`*_)\"']*\n")


def _split_long(block: str, limit: int) -> list[str]:
    """Cut an oversized block at a line that ends a sentence, then at line ends, then at
    sentence ends, then hard. A pipe table's header and rule rows head each of its pieces:
    a row is read under its columns' names ("Dot Notation")."""
    first, _, rest = block.partition("\n")
    rule, _, body = rest.partition("\n")
    if len(block) > limit and "|" in first and is_rule(rule) and body:
        head = f"{first}\n{rule}\n"
        return [head + piece for piece in _split_long(body, max(limit - len(head), limit // 3))]
    pieces: list[str] = []
    while len(block) > limit:
        # a line that ends a sentence first: a cut inside one leaves a fragment each side
        ends = [m.end() - 1 for m in _LINE_END_SENTENCE.finditer(block, 0, limit)]
        cut = ends[-1] if ends and ends[-1] > limit // 3 else block.rfind("\n", 0, limit)
        if cut <= limit // 3:
            cut = block.rfind(". ", 0, limit)
            cut = cut + 1 if cut > limit // 3 else limit
        pieces.append(block[:cut].strip("\n").rstrip())
        block = block[cut:].strip("\n").rstrip()
    if block:
        pieces.append(block)
    return pieces


def _chunks(
    text: str, limit: int, plain: bool = False, indented: bool = False
) -> list[tuple[str, str]]:
    """(section heading, chunk) pairs: blocks packed into chunks of at most *limit*
    characters; a markdown heading always starts a new chunk, so a chunk never mixes
    sections and carries its section's heading. In *plain* text a heading joins a chunk
    under a third of *limit* (a man page's short sections); the chunk keeps its first
    heading and the heading lines inside it."""
    chunks: list[tuple[str, str]] = []
    for heading, block in _blocks(text, plain, indented):
        is_heading = "\n" not in block and _HEADING.match(block) is not None
        for piece in _split_long(block, limit):
            # a man page's short sections (NAME, AUTHOR, SEE ALSO) share a chunk: alone,
            # a two-line section outranks the page's body in BM25 (length normalisation)
            small = plain and chunks and len(chunks[-1][1]) < limit // 3
            fits = chunks and len(chunks[-1][1]) + 2 + len(piece) <= limit
            if fits and (not is_heading or small):
                chunks[-1] = (chunks[-1][0], chunks[-1][1] + "\n\n" + piece)
            else:
                chunks.append((heading, piece))
    return chunks


def _code_of(text: str) -> str:
    return "\n".join(m.group(0) for m in _FENCED.finditer(text))


def _title_key(title: str) -> str:
    return " ".join(title.casefold().split())


def _normalise(text: str) -> str:
    """Case-folded words joined by single spaces (quote grounding ignores punctuation)."""
    return " ".join(_WORD.findall(text.casefold()))


class Corpus:
    """An in-memory FTS5 index over passages. Build it with `load_corpus`.

    `search(query, k)` returns at most *k* passages by BM25 rank; `passage(url)` looks one
    up; `titled(title)` gives a document's passages by its title, `titles` every title;
    `grounded(quote, url)` says whether *quote* occurs (ignoring case, punctuation and
    spacing) in the document the passage comes from.
    """

    def __init__(self, root: Path, passages: Sequence[Passage], skipped: Sequence[str]) -> None:
        self.root = root
        self.passages = list(passages)
        # derived indexes built on first use by the phases that need them (`_rank`)
        self.cache: dict[str, object] = {}
        self.skipped = list(skipped)
        self._by_url = {p.url: p for p in self.passages}
        self._by_title: dict[str, list[Passage]] = {}
        for p in self.passages:
            self._by_title.setdefault(_title_key(p.title), []).append(p)
        # as written, in corpus order (a stable order: hop links are taken in it)
        self.titles = tuple(dict.fromkeys(p.title for p in self.passages))
        self._doc_text: dict[str, str] = {}
        for p in self.passages:
            self._doc_text[p.path] = self._doc_text.get(p.path, "") + " " + _normalise(p.text)
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE passages USING fts5(title, heading, body, code, "
            "tokenize='porter unicode61')"
        )
        self._db.executemany(
            "INSERT INTO passages(rowid, title, heading, body, code) VALUES (?, ?, ?, ?, ?)",
            [
                (i, p.title, p.heading, _FENCED.sub(" ", p.text), _code_of(p.text))
                for i, p in enumerate(self.passages)
            ],
        )

    @property
    def documents(self) -> int:
        return len(self._doc_text)

    def search(self, query: str, k: int, *, exclude: Sequence[str] = ()) -> list[Passage]:
        """Up to *k* passages matching any word of *query* (stop words ignored), best BM25
        first; a match in the document title or the section heading weighs more than one in
        the body (`_WEIGHTS`)."""
        words = query_terms(query)
        if not words or k <= 0:
            return []
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        rows = self._db.execute(
            "SELECT rowid FROM passages WHERE passages MATCH ? "
            "ORDER BY bm25(passages, ?, ?, ?, ?) LIMIT ?",
            (match, *_WEIGHTS, k + len(exclude)),
        ).fetchall()
        hits = [self.passages[r[0]] for r in rows]
        return [p for p in hits if p.url not in exclude][:k]

    def doc_share(self, word: str) -> float:
        """The share (0..1) of documents that contain *word* (case-insensitive, whole word)."""
        needle = " " + " ".join(_WORD.findall(word.casefold())) + " "
        if needle.strip() == "" or not self._doc_text:
            return 0.0
        hits = sum(1 for text in self._doc_text.values() if needle in text + " ")
        return hits / len(self._doc_text)

    def section_opening(self, passage: Passage) -> Passage | None:
        """The first passage of *passage*'s section (same document and heading), or None
        before the first heading."""
        if not passage.heading:
            return None
        for p in self.passages:
            if p.path == passage.path and p.heading == passage.heading:
                return p
        return None

    def passage(self, url: str) -> Passage | None:
        return self._by_url.get(url)

    def titled(self, title: str) -> list[Passage]:
        """The passages, in order, of the documents whose title is *title* (case and
        spacing ignored): the documents about a name the question gives."""
        return list(self._by_title.get(_title_key(title), ()))

    def grounded(self, quote_text: str, url: str) -> bool:
        """True when every `...`-separated part of the quote occurs in the source document."""
        passage = self._by_url.get(url)
        if passage is None:
            return False
        doc = self._doc_text[passage.path]
        parts = [_normalise(p) for p in re.split(r"\.\.\.|…", quote_text)]
        parts = [p for p in parts if p]
        return bool(parts) and all(p in doc for p in parts)

    def close(self) -> None:
        self._db.close()


def passage_url(path: str, n: int) -> str:
    """`corpus://<relative path>/<n>`: unique per passage, stable across runs (resume)."""
    return f"corpus://{quote(path, safe='/')}/{n}"


def _unsafe(file: Path, root: Path) -> str | None:
    """Why *file* must not be read: a symlink leading out of the corpus (to
    `/proc/self/environ`, `~/.ssh`, ...) or not a regular file (fifo, device, socket)."""
    try:
        real = file.resolve(strict=True)
        info = real.stat()
    except (OSError, RuntimeError):
        return "broken symlink or unreadable; skipped"
    if not real.is_relative_to(root):
        return "symlink out of the corpus folder; skipped"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (fifo, device or socket); skipped"
    return None


def load_corpus(
    root: Path | str, *, max_passage_chars: int = 2000
) -> Result[Corpus, ProviderError]:
    """Index every md/markdown/txt/rst/html/htm file under *root* (hidden folders skipped).

    Failure(`ErrorKind.config`) with one line naming the folder when it does not exist, is
    not a folder, or holds no readable document (unreadable/undecodable/oversized files are
    skipped and listed in `Corpus.skipped`).
    """
    folder = Path(root).expanduser()
    if not folder.exists():
        return Failure(
            ProviderError(ErrorKind.config, f"corpus folder {str(folder)!r} does not exist")
        )
    if not folder.is_dir():
        return Failure(ProviderError(ErrorKind.config, f"corpus {str(folder)!r} is not a folder"))
    passages: list[Passage] = []
    skipped: list[str] = []
    files = sorted(
        f
        for f in folder.rglob("*")
        if f.suffix.lower() in CORPUS_SUFFIXES
        and not f.is_dir()
        and not any(part.startswith(".") for part in f.relative_to(folder).parts)
    )
    real_root = folder.resolve()
    for file in files:
        rel = file.relative_to(folder).as_posix()
        if (problem := _unsafe(file, real_root)) is not None:
            skipped.append(f"{rel}: {problem}")
            continue
        try:
            if file.stat().st_size > _MAX_FILE_BYTES:
                skipped.append(f"{rel}: larger than {_MAX_FILE_BYTES} bytes")
                continue
            raw = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append(f"{rel}: {exc.__class__.__name__}")
            continue
        if file.suffix.lower() in (".html", ".htm"):
            parser = _HTMLText()
            parser.feed(raw)
            text = "".join(parser.parts)
            title = " ".join(parser.title.split()) or _title_of(text, file.stem)
        else:
            text = raw
            title = _title_of(text, file.stem)
        suffix = file.suffix.lower()
        chunks = _chunks(
            text,
            max_passage_chars,
            plain=suffix == ".txt",
            indented=suffix not in (".html", ".htm"),
        )
        if not chunks:
            skipped.append(f"{rel}: empty")
            continue
        passages += [
            Passage(passage_url(rel, n), rel, title, chunk, n, heading)
            for n, (heading, chunk) in enumerate(chunks)
        ]
    if not passages:
        kinds = ", ".join(sorted(CORPUS_SUFFIXES))
        return Failure(
            ProviderError(
                ErrorKind.config,
                f"corpus folder {str(folder)!r} has no readable document ({kinds})",
                details={"skipped": skipped[:20]},
            )
        )
    return Success(Corpus(folder, passages, skipped))
