"""Corpus mode: a folder of documents indexed for full-text search (SQLite FTS5, BM25).

agentport does search and fetch here; the model only ranks, extracts, votes and
synthesises, so research works on ANY backend, including a small local model without web
tools. Documents are split into passages of at most `max_passage_chars`; each passage is a
"source" with a stable URL `corpus://<relative path>/<n>`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

from returns.result import Failure, Result, Success

from ...core import ErrorKind, ProviderError

__all__ = ["CORPUS_SUFFIXES", "Corpus", "Passage", "load_corpus"]

CORPUS_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".htm"})
_MAX_FILE_BYTES = 5_000_000
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Passage:
    """One searchable unit: `url` (`corpus://path/n`), document `path` (relative), `title`,
    `text`, and its index `n` within the document."""

    url: str
    path: str
    title: str
    text: str
    n: int


class _HTMLText(HTMLParser):
    """Visible text of an HTML page (no script/style), block tags as line breaks."""

    _BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "pre"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        elif tag == "title":
            self._in_title = False
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
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


def _chunks(text: str, limit: int) -> list[str]:
    """Paragraphs packed into chunks of at most *limit* characters; an oversized paragraph
    is cut at sentence ends, then hard-cut."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    pieces: list[str] = []
    for p in paragraphs:
        if not p:
            continue
        while len(p) > limit:
            cut = p.rfind(". ", 0, limit)
            cut = cut + 1 if cut > limit // 3 else limit
            pieces.append(p[:cut].strip())
            p = p[cut:].strip()
        if p:
            pieces.append(p)
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + 2 + len(piece) <= limit:
            chunks[-1] += "\n\n" + piece
        else:
            chunks.append(piece)
    return chunks


def _normalise(text: str) -> str:
    """Case-folded words joined by single spaces (quote grounding ignores punctuation)."""
    return " ".join(_WORD.findall(text.casefold()))


class Corpus:
    """An in-memory FTS5 index over passages. Build it with `load_corpus`.

    `search(query, k)` returns at most *k* passages by BM25 rank; `passage(url)` looks one
    up; `grounded(quote, url)` says whether *quote* occurs (ignoring case, punctuation and
    spacing) in the document the passage comes from.
    """

    def __init__(self, root: Path, passages: Sequence[Passage], skipped: Sequence[str]) -> None:
        self.root = root
        self.passages = list(passages)
        self.skipped = list(skipped)
        self._by_url = {p.url: p for p in self.passages}
        self._doc_text: dict[str, str] = {}
        for p in self.passages:
            self._doc_text[p.path] = self._doc_text.get(p.path, "") + " " + _normalise(p.text)
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE passages USING fts5(title, body, tokenize='porter unicode61')"
        )
        self._db.executemany(
            "INSERT INTO passages(rowid, title, body) VALUES (?, ?, ?)",
            [(i, p.title, p.text) for i, p in enumerate(self.passages)],
        )

    @property
    def documents(self) -> int:
        return len(self._doc_text)

    def search(self, query: str, k: int, *, exclude: Sequence[str] = ()) -> list[Passage]:
        """Up to *k* passages matching any word of *query*, best BM25 first."""
        words = list(dict.fromkeys(_WORD.findall(query.lower())))
        if not words or k <= 0:
            return []
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        rows = self._db.execute(
            "SELECT rowid FROM passages WHERE passages MATCH ? ORDER BY bm25(passages) LIMIT ?",
            (match, k + len(exclude)),
        ).fetchall()
        hits = [self.passages[r[0]] for r in rows]
        return [p for p in hits if p.url not in exclude][:k]

    def passage(self, url: str) -> Passage | None:
        return self._by_url.get(url)

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
        and f.is_file()
        and not any(part.startswith(".") for part in f.relative_to(folder).parts)
    )
    for file in files:
        rel = file.relative_to(folder).as_posix()
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
        chunks = _chunks(text, max_passage_chars)
        if not chunks:
            skipped.append(f"{rel}: empty")
            continue
        passages += [
            Passage(passage_url(rel, n), rel, title, chunk, n) for n, chunk in enumerate(chunks)
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
