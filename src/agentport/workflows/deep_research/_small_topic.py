"""Small-model mode: is a confirmed claim about what the question asks? (pure helpers)

A corpus that cannot answer a question still holds sentences sharing a word with it, and
a small model confirms almost any sentence it is shown: without a check the report of an
unanswerable question is a list of off-topic "findings". The check is the question's own
specific words: a claim is on topic when the words it meets, in its sentence or in what
it sits under (document title, section heading, its subject), carry at least `ON_TOPIC`
of the question's rarity-weighted words (inverse document frequency over the corpus's
sentences, `_rank.UnitIndex.idf`). A word no document holds weighs most: a question about
an option the documents never name ("collapse_depth") is not answered by a sentence about
the extension's other options. When no confirmed claim is on topic the report abstains,
saying how much of the corpus was read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ._corpus import Corpus, query_terms
from ._rank import index_of, meets_any, term_stems

__all__ = [
    "ON_TOPIC",
    "common_words",
    "context_of",
    "coverage",
    "key_terms",
    "not_on_topic",
    "owners",
    "quotes_question",
    "unknown_names",
]

ON_TOPIC = 1 / 3  # the share of the question's weighted words an answer must meet
_COMMON = 0.75  # a question word in more than this share of the documents says little
_FEW_DOCUMENTS = 4  # ...unless there are so few documents that every word is in most


def common_words(corpus: Corpus, question: str) -> frozenset[str]:
    """The question's words that more than 75 % of the documents contain (none in a corpus
    of fewer than 4 documents, where a share says nothing)."""
    if corpus.documents < _FEW_DOCUMENTS:
        return frozenset()
    return frozenset(w for w in query_terms(question) if corpus.doc_share(w) > _COMMON)


def unknown_names(corpus: Corpus, question: str) -> list[str]:
    """The identifiers of *question* (words joined by `_`) that no document of *corpus*
    holds: the documents never name what the question asks about."""
    return [w for w in query_terms(question) if "_" in w.strip("_") and corpus.doc_share(w) == 0]


def coverage(corpus: Corpus, question: str, text: str, common: frozenset[str]) -> float:
    """The share (0..1) of *question*'s content words (minus *common*), weighted by their
    rarity in *corpus*, that *text* (a claim and its context) meets, in the best of the
    question's parts (a question asking several things, "what did X cost, how much does it
    produce and how has it affected wildlife", is answered one part per sentence): 0.0 when
    the question names an identifier no document holds (`unknown_names`), 1.0 for a
    question with no content word."""
    if unknown_names(corpus, question):
        return 0.0
    index = index_of(corpus)
    met = term_stems(text)
    shares = []
    for part in _parts(question):
        terms = [t for t in term_stems(part) if t not in common]
        total = sum(index.idf(t) for t in terms)
        if total > 0:
            hit = meets_any(terms, met)
            shares.append(sum(index.idf(t) for t in terms if t in hit) / total)
    return max(shares, default=1.0)


def _parts(question: str) -> list[str]:
    """The clauses of *question* (split at commas, semicolons, "and" and question marks);
    the whole question when it has one."""
    pieces = [p for p in re.split(r"[,;?]|\band\b", question) if p.strip()]
    return pieces or [question]


def key_terms(corpus: Corpus, question: str, common: frozenset[str]) -> list[str]:
    """*question*'s content words (minus *common*): the ones no document names first, then
    the rarest in *corpus*."""
    index = index_of(corpus)
    unknown = unknown_names(corpus, question)

    def rarity(word: str) -> float:
        return max((index.idf(t) for t in term_stems(word)), default=0.0)

    words = [w for w in query_terms(question) if w not in common and w not in unknown]
    return [*unknown, *sorted(words, key=lambda w: -rarity(w))]


def context_of(corpus: Corpus, claim: dict[str, Any]) -> str:
    """A confirmed claim's sentence with its document title, section heading and subject."""
    passage = corpus.passage(str(claim.get("sourceUrl") or ""))
    where = f"{passage.title} {passage.heading}" if passage is not None else ""
    return f"{claim.get('claim') or ''} {claim.get('subject') or ''} {where}"


def not_on_topic(read: int, total: int, terms: Sequence[str]) -> str:
    """The summary when no confirmed claim is on topic: *read* passages of *total*;
    *terms* the question's specific words, the rarest first (`key_terms`)."""
    words = ", ".join(f"'{t}'" for t in terms[:4])
    return (
        f"Not found in the {read} of {total} passage(s) read: none of their sentences is "
        f"about what the question asks (they do not meet its specific words {words}). "
        "The passages not read may still answer it."
    )


_WORDS = re.compile(r"\w+", re.UNICODE)


def quotes_question(question: str, text: str) -> bool:
    """True when *text* holds *question* itself, word for word (case and punctuation
    aside; a question of 3 words or more): a sentence that quotes the question talks
    about it (an example, a benchmark's prose), it does not answer it."""
    asked = " ".join(_WORDS.findall(question.casefold()))
    said = " ".join(_WORDS.findall(text.casefold()))
    return len(asked.split()) >= 3 and f" {asked} " in f" {said} "


_POSSESSIVE = re.compile(r"([\w.-]+)'s\b")
_ASKS = re.compile(r"\b(?:what|which|who|whom|whose|how|when|where|why)\b", re.IGNORECASE)


def owners(question: str, stems: dict[str, str]) -> list[str]:
    """The documents *question* names as the owner of what it asks ("split's --compress
    option" -> the document of file stem "split"): titles from *stems* (file stem ->
    title, `_followup.file_stems`) of the words before a possessive "'s" in the clause
    that asks (the one with the question word; "sort's option refers to another command;
    which option of that command ...?" asks about the other command, not sort)."""
    clauses = [c for c in re.split(r"[;?]", question) if _ASKS.search(c)] or [question]
    words = [w.casefold() for w in _POSSESSIVE.findall(clauses[-1])]
    return list(dict.fromkeys(stems[w] for w in words if w in stems))
