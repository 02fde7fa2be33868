"""Retrieval beyond literal terms, for small-model mode (pure, apart from reading a loaded
`Corpus`).

- `expand`: the question's terms plus what its words are also written as: platform and OS
  synonyms ("Linux" -> non-Windows, POSIX, Unix), identifiers split and joined
  (`total_timeout_s` <-> "total timeout"), `x=True` -> the `x` parameter.
- `UnitIndex`: every quotable unit of the corpus (`_units.units_of`) with its context (the
  document title, section heading and the unit's own subject); `score` weighs a term met
  in the sentence 1, in its subject or heading 0.6, by the term's rarity (idf).
- `rrf`: reciprocal rank fusion of several rankings (Cormack et al., 2009), so the passage
  ranking of BM25 and the ranking by each passage's best unit both count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TypeVar

from ._corpus import STOP_WORDS, Corpus, Passage, query_terms
from ._small_qa import DERIVATIONS, stem
from ._units import Unit, units_of

__all__ = [
    "UnitIndex",
    "expand",
    "expansion",
    "importance",
    "index_of",
    "meets_any",
    "own_terms",
    "rrf",
    "search",
    "term_stems",
    "weighted_terms",
    "word_pairs",
]

K = TypeVar("K", bound=Hashable)

_WORD = re.compile(r"\w+", re.UNICODE)
_IDENT = re.compile(r"`?([A-Za-z_][\w.]*)\s*=\s*(?:True|False|true|false|None|null)\b`?")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# What a platform question's word is also written as in documentation.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "linux": ("posix", "unix", "windows"),  # "on non-Windows platforms"
    "macos": ("darwin", "posix", "unix", "windows"),
    "mac": ("darwin", "macos", "posix"),
    "unix": ("posix", "linux", "windows"),
    "posix": ("unix", "linux", "windows"),
    "windows": ("win32", "nt", "posix"),
}
_CONTEXT_WEIGHT = 0.6
# a term met in the unit's own subject (its option name or signature) as well as in the
# sentence: the unit is about that name ("--suffix-length" over "generate suffixes of
# length N (default 2)")
_SUBJECT_WEIGHT = 0.5
# each word pair of the question met as adjacent words in the unit or its subject: the
# sentence says what the question says ("127 if COMMAND cannot be found" for "when the
# command cannot be found"; "126 ... is found but cannot be invoked" meets one pair)
_PHRASE_WEIGHT = 0.4
# a term met in the document's title: the unit is in the document the question is about
# ("Table of Contents extension" -> the toc page's `title_class`, not CodeHilite's
# `css_class`)
_TITLE_WEIGHT = 0.5
# a word the question is also written as (`expand`) is evidence, weaker than its own words
_EXPANSION_WEIGHT = 0.5
_OFF_TOPIC = 0.5
_K1 = 1.2
_MIN_PREFIX = 4


def rrf(rankings: Iterable[Sequence[K]], k: int = 60) -> list[K]:
    """Reciprocal rank fusion: items ordered by the sum of 1 / (k + rank) over *rankings*
    (rank from 1); ties keep the order of first appearance. Every item of every ranking
    appears once."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(dict.fromkeys(ranking), 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = list(scores)
    return sorted(order, key=lambda item: (-scores[item], order.index(item)))


def expand(question: str) -> list[str]:
    """The extra words to search for *question* (lower case, not in its own terms):
    platform synonyms, identifiers split at `_`, `.` and camelCase and their parts joined,
    and the name of each `x=True` form."""
    own = query_terms(question)
    extra: list[str] = []
    for word in own:
        extra += _SYNONYMS.get(word, ())
    for m in _IDENT.finditer(question):
        extra.append(m.group(1).lower())
    for raw in re.findall(r"[A-Za-z_][\w.]*", question):
        parts = [p.lower() for p in re.split(r"[_.]+", _CAMEL.sub("_", raw)) if p]
        if len(parts) > 1:
            extra += parts
    plain = [w for w in own if w.isalpha()]
    extra += ["_".join(plain[i : i + 2]) for i in range(len(plain) - 1)]
    return [w for w in dict.fromkeys(extra) if w and w not in own]


def _prefixes(word: str) -> set[str]:
    """The stems *word* derives from (`_small_qa.extends`)."""
    return {word[:n] for n in range(_MIN_PREFIX, len(word)) if word[n:] in DERIVATIONS}


def _no_prefix(word: str) -> frozenset[str]:
    return frozenset(_prefixes(word))


def _stem_list(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for w in re.findall(r"\w+", text.lower()):
        out += [stem(p) for p in {w, *w.split("_")} if len(p) > 2]
    return tuple(out)


def term_stems(text: str) -> set[str]:
    """The light stems (`_small_qa.stem`) of *text*'s content words of 3+ letters, with
    identifiers also split into their parts."""
    out: set[str] = set()
    for w in query_terms(text):
        if len(w) > 2:
            out.add(stem(w))
        out |= {stem(p) for p in w.split("_") if len(p) > 2}
    return out


def word_pairs(text: str) -> frozenset[tuple[str, str]]:
    """The adjacent pairs of *text*'s light-stemmed words (stop words kept, identifiers
    split at `_` and `-`), the phrase signal of `UnitIndex.score`."""
    seq = [stem(w) for w in re.findall(r"[^\W_]+", text.lower())]
    return frozenset(pairwise(seq))


@dataclass(frozen=True, slots=True)
class _Entry:
    passage: int
    unit: Unit
    stems: tuple[str, ...]  # in order, repeated: term frequency
    words: frozenset[str]
    prefixes: frozenset[str]
    context: frozenset[str]
    context_prefixes: frozenset[str]
    subject: frozenset[str] = frozenset()
    pairs: frozenset[tuple[str, str]] = frozenset()
    title: frozenset[str] = frozenset()


def _entry(passage: int, p: Passage, unit: Unit) -> _Entry:
    words = frozenset(term_stems(unit.text))
    context = frozenset(term_stems(f"{p.title} {p.heading} {unit.subject}"))
    own = unit.subject if unit.subject != p.heading else ""
    return _Entry(
        passage,
        unit,
        _stem_list(unit.text),
        words,
        frozenset(x for w in words for x in _prefixes(w)),
        context,
        frozenset(x for w in context for x in _prefixes(w)),
        frozenset(term_stems(own)),
        word_pairs(unit.text) | word_pairs(own),
        frozenset(term_stems(p.title)),
    )


def _meets(term: str, words: frozenset[str], prefixes: frozenset[str]) -> bool:
    """Equal stems, or one derived from the other ("fail" / "failure"); a joined
    identifier ("retry_after") only matches itself."""
    if "_" in term:
        return term in words
    return (
        term in words
        or term in prefixes
        or any(term[:n] in words for n in range(_MIN_PREFIX, len(term)) if term[n:] in DERIVATIONS)
    )


def meets_any(terms: Iterable[str], words: Iterable[str]) -> set[str]:
    """The *terms* (stems) that *words* (stems) meet (`_meets`: equal or derived)."""
    found = frozenset(words)
    prefixes = frozenset(x for w in found for x in _prefixes(w))
    return {t for t in terms if _meets(t, found, prefixes)}


class UnitIndex:
    """Every unit of a corpus with its context, and the rarity of each stem."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.entries: list[_Entry] = []
        df: dict[str, int] = {}
        for i, p in enumerate(corpus.passages):
            for unit in units_of(p.text, p.heading):
                entry = _entry(i, p, unit)
                self.entries.append(entry)
                for w in entry.words | entry.context:
                    df[w] = df.get(w, 0) + 1
        self._df = df
        self._n = max(len(self.entries), 1)
        self.by_passage: dict[int, list[_Entry]] = {}
        for e in self.entries:
            self.by_passage.setdefault(e.passage, []).append(e)

    def idf(self, term: str) -> float:
        return math.log(1 + self._n / (1 + self._df.get(term, 0)))

    def score(
        self,
        terms: Iterable[str],
        entry: _Entry,
        pairs: frozenset[tuple[str, str]] = frozenset(),
        extra: frozenset[str] = frozenset(),
    ) -> float:
        """How well *entry* meets *terms* (stems): idf-weighted, 1 for a term in the
        sentence, `_CONTEXT_WEIGHT` for one only in its title, heading or subject, plus
        `_SUBJECT_WEIGHT` for one in its own subject too and `_TITLE_WEIGHT` for one in its
        document's title too, plus `_PHRASE_WEIGHT` for each of
        the question's word *pairs* (`word_pairs`) the unit holds; a term of *extra* (the
        question's expansion) weighs `_EXPANSION_WEIGHT` of that."""
        total = 0.0
        on_topic = False
        for a, b in pairs & entry.pairs:
            rare = max((self.idf(w) for w in (a, b) if w not in STOP_WORDS), default=0.0)
            total += _PHRASE_WEIGHT * rare
        for t in terms:
            idf = self.idf(t) * (_EXPANSION_WEIGHT if t in extra else 1.0)
            if _meets(t, entry.subject, frozenset()):
                total += _SUBJECT_WEIGHT * idf
            if _meets(t, entry.title, frozenset()):
                total += _TITLE_WEIGHT * idf
            in_context = _meets(t, entry.context, entry.context_prefixes)
            on_topic |= in_context
            if _meets(t, entry.words, entry.prefixes):
                # BM25's saturating term frequency: the sentence that keeps returning to
                # the asked thing ("retries ... RetryPolicy ... retry_after") is about it
                tf = sum(1 for w in entry.stems if _meets(t, frozenset((w,)), _no_prefix(w)))
                total += idf * (tf * (_K1 + 1)) / (max(tf, 1) + _K1)
            elif in_context:
                total += _CONTEXT_WEIGHT * idf
        # a section whose title and headings meet none of the question's words is about
        # something else ("copilot retries failed model calls 5 times" under "copilot ›
        # Surprises" for a question about the library's own retries)
        return total if on_topic else total * _OFF_TOPIC

    def score_unit(
        self,
        terms: Iterable[str],
        passage: Passage,
        unit: Unit,
        pairs: frozenset[tuple[str, str]] = frozenset(),
        extra: frozenset[str] = frozenset(),
    ) -> float:
        """`score` of *unit* of *passage* (one not indexed, or indexed)."""
        return self.score(terms, _entry(-1, passage, unit), pairs, extra)

    def best_passages(
        self,
        terms: Iterable[str],
        k: int,
        pairs: frozenset[tuple[str, str]] = frozenset(),
        extra: frozenset[str] = frozenset(),
    ) -> list[Passage]:
        """The *k* passages whose best unit scores highest for *terms* and *pairs* (score >
        0)."""
        wanted = list(terms)
        best: dict[int, float] = {}
        for e in self.entries:
            s = self.score(wanted, e, pairs, extra)
            if s > best.get(e.passage, 0.0):
                best[e.passage] = s
        order = sorted(best, key=lambda i: (-best[i], i))[:k]
        return [self.corpus.passages[i] for i in order]


def importance(index: UnitIndex, question: str, score: float) -> str:
    """ "central" when *score* (`UnitIndex.score`) reaches half of what a sentence meeting
    each of the question's own words once would score (by rarity), else "supporting".
    Monotone in the score, so the claims rank in the code's score order across passages
    (the seed ranks by importance first)."""
    ideal = sum(index.idf(t) for t in own_terms(question))
    return "central" if ideal > 0 and score >= 0.5 * ideal else "supporting"


def index_of(corpus: Corpus) -> UnitIndex:
    """The corpus's `UnitIndex`, built on first use and kept with it."""
    found = corpus.cache.get("units")
    if not isinstance(found, UnitIndex):
        found = UnitIndex(corpus)
        corpus.cache["units"] = found
    return found


def weighted_terms(question: str, ignore: frozenset[str] = frozenset()) -> list[str]:
    """The stems to search for *question*: its own content words (minus *ignore*), then
    `expand`'s."""
    own = own_terms(question, ignore)
    extra = [stem(w) for w in expand(question) if stem(w) not in own]
    return [*own, *extra]


def own_terms(question: str, ignore: frozenset[str] = frozenset()) -> list[str]:
    """The stems of *question*'s own content words (minus *ignore*), without `expand`'s and
    without the literal values of its `x=True` forms."""
    # `shell=True` asks about the `shell` parameter: its literal value is no search word
    values = {m.group(0).rsplit("=", 1)[1].strip("` ").lower() for m in _IDENT.finditer(question)}
    return [w for w in term_stems(question) if w not in ignore and w not in values]


def expansion(question: str, ignore: frozenset[str] = frozenset()) -> frozenset[str]:
    """The stems `weighted_terms` adds to the question's own (`own_terms`)."""
    return frozenset(weighted_terms(question, ignore)) - frozenset(own_terms(question, ignore))


def search(
    corpus: Corpus, query: str, k: int, ignore: frozenset[str] = frozenset()
) -> list[Passage]:
    """The *k* best passages for *query*: BM25 over the query and its expansion, fused
    (`rrf`) with the ranking by each passage's best unit (`UnitIndex`)."""
    if k <= 0:
        return []
    expanded = " ".join([query, *expand(query)])
    bm25 = corpus.search(expanded, 3 * k)
    units = index_of(corpus).best_passages(
        weighted_terms(query, ignore), 3 * k, word_pairs(query), expansion(query, ignore)
    )
    fused = rrf([[p.url for p in bm25], [p.url for p in units]])
    by_url = {p.url: p for p in (*bm25, *units)}
    return [by_url[u] for u in fused[:k]]
