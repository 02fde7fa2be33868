"""Which of two disagreeing pages to believe: a page that says it is not current (archived,
superseded, an older version) yields to one that does not (pure helpers, and the lookup of
a stale sentence's current version in a corpus).

Documentation keeps old copies: an `archive/` folder, "(archived notes)" in a title, "This
page is obsolete" at the top. When a sentence of such a page and a sentence of a current
page are the same words with one value changed, the current page's value is the answer
and the old one is not a finding; dropping both sides (the rule for two current pages that
disagree) would leave the question unanswered although the documents answer it. A stale
page's sentence that no current page contradicts stays a finding, marked as coming from an
old page and ranked after the current ones; where the corpus holds the current version of
that very sentence (the same words, one value changed, on a current page), the current
version is stated in its place.

The signals are what a reader sees on the page (its folder, its title, its opening lines),
never anything about how the documents were assembled.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._corpus import Corpus, Passage

__all__ = ["STALE_FOLDERS", "current_version", "one_value_apart", "stale_page", "stale_url"]

# folder names that hold old copies of documentation
STALE_FOLDERS = frozenset(
    {"archive", "archives", "archived", "attic", "obsolete", "outdated", "superseded"}
)
_TITLE = re.compile(
    r"\b(?:archived?|superseded|obsolete|outdated|out[- ]of[- ]date|"
    r"(?:older|previous|old) (?:version|release|notes))\b",
    re.IGNORECASE,
)
# the opening lines must say it of the page itself ("the obsolete -s option" is no signal)
_OPENING = re.compile(
    r"\b(?:this|the) (?:page|document|documentation|version|copy) (?:is|has been|was) "
    r"(?:now )?(?:archived|superseded|obsolete|outdated|out of date|no longer (?:maintained|"
    r"current|updated))\b|\b(?:archived|superseded|obsolete|outdated) "
    r"(?:page|document|documentation|notes|copy)\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"\d[\d,.\u202f]*\d|\w+", re.UNICODE)  # "125,400" is one value
_OPENING_CHARS = 400


def stale_page(path: str, title: str = "", opening: str = "") -> bool:
    """True when a page says it is not current: a folder of *path* is an archive
    (`STALE_FOLDERS`), its *title* says archived / superseded / obsolete / outdated / an
    older version, or its *opening* text says so of the page itself ("This page is
    obsolete", "archived notes")."""
    folders = [f.casefold() for f in path.replace("\\", "/").split("/")[:-1]]
    return (
        any(f in STALE_FOLDERS for f in folders)
        or bool(_TITLE.search(title))
        or bool(_OPENING.search(opening[:_OPENING_CHARS]))
    )


def _opening(corpus: Corpus, path: str) -> Passage | None:
    return next((p for p in corpus.passages if p.path == path), None)


def stale_url(corpus: Corpus | None, url: str) -> bool:
    """`stale_page` for the document of passage *url* (False when unknown); memoised per
    document in the corpus's cache."""
    if corpus is None:
        return False
    passage = corpus.passage(url)
    if passage is None:
        return False
    memo = corpus.cache.setdefault("stale-pages", {})
    assert isinstance(memo, dict)
    if passage.path not in memo:
        first = _opening(corpus, passage.path)
        memo[passage.path] = stale_page(passage.path, passage.title, first.text if first else "")
    return bool(memo[passage.path])


def _value(word: str) -> bool:
    return any(ch.isdigit() for ch in word) or word[:1].isupper() or "_" in word


def one_value_apart(a: Sequence[str], b: Sequence[str]) -> bool:
    """True when token lists *a* and *b* are the same but for at most one token, and a
    differing pair holds a value (a digit, a capital, an identifier's underscore): the
    same statement with one value changed, or the same statement."""
    if len(a) != len(b):
        return False
    diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    return len(diff) == 0 or (len(diff) == 1 and _value(diff[0][0]) and _value(diff[0][1]))


def current_version(corpus: Corpus, sentence: str, url: str, k: int = 8) -> tuple[str, str] | None:
    """The current version of *sentence* (from the stale page of passage *url*): a span of
    a passage of a current page, verbatim, that is the same words as *sentence* with at
    most one value changed (`one_value_apart`), with its passage url; None when the
    corpus's *k* best matches hold none. The sentence itself must be 3+ words."""
    found = list(_TOKEN.finditer(sentence))
    words = [m.group(0) for m in found]
    n = len(words)
    if n < 3:
        return None
    head = sentence[: found[0].start()].lstrip()  # "(" before the first word, ")." after
    tail = sentence[found[-1].end() :].rstrip()
    for p in corpus.search(sentence, k, exclude=[url]):
        if stale_url(corpus, p.url):
            continue
        tokens = list(_TOKEN.finditer(p.text))
        for s in range(len(tokens) - n + 1):
            window = tokens[s : s + n]
            if one_value_apart(words, [m.group(0) for m in window]):
                start, end = window[0].start(), window[-1].end()
                if head and p.text[:start].endswith(head):
                    start -= len(head)
                if tail and p.text[end:].startswith(tail):
                    end += len(tail)
                return " ".join(p.text[start:end].split()), p.url
    return None
