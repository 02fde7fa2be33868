"""What corpus mode reads of a corpus, as a seam: `CorpusSource`.

Corpus mode (not small-model mode) reads a corpus three ways: a full-text search (an
angle's candidates, a claim's counter-passages), a passage a search returned, and whether a
quote occurs in its document. In one process that is `InMemoryCorpus` over a loaded
`Corpus`. On Temporal the corpus stays on the workers' disk and each search and quote
check is an activity (`agentport.temporal`): workflow history carries the passages a
search returned, never the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ._corpus import Corpus, Passage

__all__ = [
    "CorpusSource",
    "InMemoryCorpus",
    "SearchedPassages",
    "passage_from_row",
    "passage_row",
]


@runtime_checkable
class CorpusSource(Protocol):
    """The corpus reads of one research run. `skipped`: files the load skipped (warned)."""

    @property
    def skipped(self) -> list[str]: ...

    def passage(self, url: str) -> Passage | None:
        """A passage an earlier `search` returned (its url as the model quotes it), or None."""
        ...

    async def search(self, query: str, k: int, *, exclude: Sequence[str] = ()) -> list[Passage]:
        """`Corpus.search`: up to *k* passages by BM25 rank, none of *exclude*."""
        ...

    async def grounded(self, quote_text: str, url: str) -> bool:
        """`Corpus.grounded`: whether *quote_text* occurs in *url*'s document."""
        ...


@dataclass(frozen=True)
class InMemoryCorpus:
    """`CorpusSource` over a `Corpus` this process loaded."""

    corpus: Corpus

    @property
    def skipped(self) -> list[str]:
        return self.corpus.skipped

    def passage(self, url: str) -> Passage | None:
        return self.corpus.passage(url)

    async def search(self, query: str, k: int, *, exclude: Sequence[str] = ()) -> list[Passage]:
        return self.corpus.search(query, k, exclude=exclude)

    async def grounded(self, quote_text: str, url: str) -> bool:
        return self.corpus.grounded(quote_text, url)


@dataclass
class SearchedPassages:
    """The passages searches returned so far, by url: a remote source's `passage`."""

    by_url: dict[str, Passage] = field(default_factory=dict)

    def keep(self, rows: Sequence[dict[str, Any]]) -> list[Passage]:
        found = [passage_from_row(row) for row in rows]
        self.by_url.update((p.url, p) for p in found)
        return found


def passage_row(passage: Passage) -> dict[str, Any]:
    """*passage* as JSON data (the form it crosses a wire in)."""
    return {
        "url": passage.url,
        "path": passage.path,
        "title": passage.title,
        "text": passage.text,
        "n": passage.n,
        "heading": passage.heading,
    }


def passage_from_row(row: dict[str, Any]) -> Passage:
    """`passage_row`'s inverse; `ValueError` on a row without those fields."""
    try:
        return Passage(
            str(row["url"]),
            str(row["path"]),
            str(row["title"]),
            str(row["text"]),
            int(row["n"]),
            str(row.get("heading") or ""),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a passage: {exc}") from None
