"""What a question asks, and which sentences can answer it (small-model mode, pure: no I/O).

A small model picks well among few good candidates and badly among many near-misses, so
the code decides which sentences are candidates, from the question alone:

- `Ask.names`: the names the question is about (capitalised words past its first word,
  runs kept whole: "Port Velmora"); a candidate must mention one, in the sentence or in its
  document's title or section heading;
- `Ask.asked`: the other content words (what is asked about the names); a candidate must
  share one, carry a year or a quantity the question asks for, or be the sentence that
  links a name to a hop's document;
- `Ask.kind`: the answer's type from the question's form (classic question classification:
  "when" / "which year" -> year, "how many" / "how large" / "more ... or" -> quantity,
  "who" -> person); a sentence carrying it ranks first;
- `hop_titles`: a second hop: the titles of other documents that a sentence about the
  names mentions where it shares an asked word ("X is a town in the Kundova region" ->
  the document titled "Kundova region"), so a two-document answer is reachable;
- `conflicts`: sentences of different documents that differ in one word only (a planted
  near-copy: "founded in 1608" against "founded in 1578"); neither is a finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ._corpus import STOP_WORDS, query_terms
from ._sides import about_side, says, sides_of

__all__ = [
    "Ask",
    "ask_of",
    "asked_head",
    "asks_for_name",
    "best_about",
    "conflicts",
    "credits",
    "extends",
    "hop_titles",
    "mentions",
    "names_identifier",
    "overlap",
    "stem",
    "stems",
    "unit_score",
]

_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"\d[\d,.\u202f]*\d|\w+", re.UNICODE)  # "125,400" is one value
_NAME_RUN = re.compile(r"\b[A-Z][\w.\-]*(?:\s+[A-Z][\w.\-]*)*")
# values, not names: "set to None", "when permalink is True"
_LITERALS = frozenset({"None", "True", "False", "Null", "NULL", "TRUE", "FALSE", "NONE"})
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_QUANTITY = re.compile(r"\b\d{1,3}(?:[,.\u202f]\d{3})+\b|\b\d{5,}\b|\b\d+(?:\.\d+)?\s*%")
# two capitalised words not opening a sentence (an initial's period opens none: "Written
# by H. Peter Anvin")
_PERSON = re.compile(r"(?<!^)(?<![a-z0-9)][.!?]\s)\b[A-Z][a-z]+\s+[A-Z][a-z]+\b")
# the words documentation credits a person with: "Written by ...", "Author: ...",
# "Maintained by ..."
_CREDIT = re.compile(
    r"\b(?:writt?en|wrote|author(?:s|ed)?|maintain(?:s|ed|ers?)|created|developed)\b", re.I
)
_KINDS = (
    ("year", re.compile(r"^\s*when\b|\b(?:which|what) year\b|\bin which year\b", re.I)),
    (
        "quantity",
        re.compile(
            r"\bhow (?:many|much|large|big|long|far|old|tall|high|wide)\b|"
            r"\b(?:more|fewer|larger|smaller|bigger|less)\b.*\bor\b",
            re.I,
        ),
    ),
    ("person", re.compile(r"^\s*who(?:m|se)?\b", re.I)),
)


@dataclass(frozen=True, slots=True)
class Ask:
    """A question taken apart: `names` (as written), `asked` (stems of the other content
    words, minus the ones most documents contain), `kind` (year, quantity, person or
    None), `hops` (titles of the second hop's documents, found by the scope phase), `sides`
    (the two things a comparison sets side by side, `_sides.sides_of`)."""

    names: tuple[str, ...]
    asked: frozenset[str]
    kind: str | None
    hops: tuple[str, ...] = ()
    question: str = ""
    sides: tuple[str, ...] = ()

    @property
    def every_name(self) -> tuple[str, ...]:
        """The names a candidate must mention: the question's and the hops'."""
        return (*self.names, *self.hops)


_SUFFIXES = (
    ("ies", "y"),
    ("ied", "y"),
    ("sses", "ss"),
    ("shes", "sh"),
    ("ches", "ch"),
    ("xes", "x"),
    ("ing", ""),
    ("ed", ""),
    ("ss", "ss"),
    ("s", ""),
)


def stem(word: str) -> str:
    """A light English stem, so "retry", "retries" and "retried" meet (and "source" and
    "sources")."""
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 3:
            base = word[: -len(suffix)] + repl
            doubled = len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz"
            if suffix in ("ing", "ed") and doubled:  # "splitting" -> "split", "falling" stays
                base = base[:-1]
            return base
    return word


def stems(text: str, ignore: frozenset[str] = frozenset()) -> set[str]:
    return {stem(w) for w in query_terms(text) if len(w) > 2 and w not in ignore}


# What may follow a stem in a derived word: "fail" -> "failure", "retry" -> "retryable";
# not "list" -> "listen" or "port" -> "portal".
DERIVATIONS = frozenset(
    """s es ed er ers or ors ing ings ure ures able ible ably ion ions ation ations al ally
    ly ment ments ness ity ities ive y ies ied ful less ize ise ized ised ic ical ance ence
    ant ants ent ents ee ees ery ary age""".split()  # noqa: SIM905
)


def extends(short: str, long: str) -> bool:
    """True when *long* is *short* (4+ letters) plus a derivational ending (`DERIVATIONS`)."""
    return (
        len(short) >= 4
        and len(long) > len(short)
        and long.startswith(short)
        and long[len(short) :] in DERIVATIONS
    )


def overlap(terms: set[str], words: set[str]) -> int:
    """How many of *terms* meet one of *words*: equal stems, or one derived from the other
    (`extends`: "fail" and "failure", "retry" and "retryable"; not "list" and "listen")."""
    return sum(1 for t in terms if t in words or any(extends(t, w) or extends(w, t) for w in words))


def ask_of(question: str, common: Iterable[str] = ()) -> Ask:
    """Take *question* apart (see `Ask`); *common* words never count as asked."""
    names: list[str] = []
    ignore_words = set(common)
    for m in _NAME_RUN.finditer(question):
        words = m.group(0).split()
        if m.start() == len(question) - len(question.lstrip()):
            words = words[1:]  # the question's first word is capitalised anyway
        words = [w for w in words if w.lower() not in STOP_WORDS and w not in _LITERALS]
        # a leading word most documents contain is the scope, not the name
        # ("Python-Markdown Meta-Data" in the Python-Markdown docs: "Meta-Data")
        while words and all(x.lower() in ignore_words for x in _WORD.findall(words[0])):
            words = words[1:]
        if words:
            names.append(" ".join(words).rstrip(".-"))
    name_words = {w.lower() for n in names for w in _WORD.findall(n)}
    ignore = set(common)
    asked = frozenset(
        stem(w)
        for w in query_terms(question)
        if w not in name_words and w not in ignore and len(w) > 2 and not w.isdigit()
    ) | frozenset(w for w in _WORD.findall(question) if w.isdigit())
    kind = next((k for k, rx in _KINDS if rx.search(question)), None)
    return Ask(
        tuple(dict.fromkeys(names)), asked, kind, question=question, sides=sides_of(question)
    )


def best_about(ask: Ask, texts: Sequence[str], side: str) -> int | None:
    """The index of the text of *texts* about *side* alone (`_sides.about_side`) that
    shares most of what the question asks besides its sides ("`baselevel` Defaults to
    `1`." over "The `baselevel` setting allows ..." for "what are the default values of
    baselevel and toc_depth?"); the earlier on a tie (*texts* come best first); None when
    no text is about it."""
    asked = set(ask.asked) - {stem(w) for s in ask.sides for w in _WORD.findall(s.lower())}
    fits = [
        (overlap(asked, stems(t)), -i, i)
        for i, t in enumerate(texts)
        if about_side(t, side, ask.sides)
    ]
    return max(fits)[2] if fits else None


def _norm(text: str) -> str:
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


def mentions(text: str, name: str) -> bool:
    """True when *name* occurs in *text* as whole words (case ignored)."""
    needle = _norm(name)
    return needle.strip() != "" and needle in _norm(text)


def credits(kind: str | None, unit: str, question: str) -> bool:
    """True when *kind* is person and *unit* credits one the question does not name ("Written
    by H. Peter Anvin."): the answer to "who wrote ...?" shares no word with the question
    but its answer type."""
    return kind == "person" and _CREDIT.search(unit) is not None and carries(kind, unit, question)


def carries(kind: str | None, unit: str, question: str) -> bool:
    """True when *unit* holds a value of the answer's *kind* that the question does not."""
    if kind == "year":
        found = set(_YEAR.findall(unit))
    elif kind == "quantity":
        found = {m.group(0) for m in _QUANTITY.finditer(unit)}
    elif kind == "person":
        found = {m.group(0) for m in _PERSON.finditer(unit)}
    else:
        return False
    return any(not mentions(question, v) for v in found)


# "Which click function ...?", "Which sort option ...?": the answer is a name
_ASKS_NAME = re.compile(
    r"^\s*(?:which|what)\s+(?:[\w.'-]+\s+){0,3}?(?:function|method|option|argument|parameter|"
    r"decorator|class|extension|command|setting|keyword|flag|variable|attribute|field|"
    r"module|exception|type)s?\b",
    re.I,
)
# an identifier as documentation writes one: `code`, :role:`target`, --long-option, -x,
# snake_case, dotted.name, call()
_IDENTIFIER = re.compile(
    r"`+([^`\s][^`]{0,60})`+|(?<![\w-])(--?[A-Za-z][\w-]*)|\b([a-z]\w*_\w+|\w+\.\w[\w.]*|\w+\(\))"
)


_AUX = r"(?:does|do|did|is|are|was|were|can|could|may|might|must|will|would|should|has|have)"
# "which internal encoding does ...", "what port does ...", "what block size does ...",
# "which option of ...": the noun the answer is a value of
_HEAD = re.compile(
    rf"\b(?:which|what)\s+(?!{_AUX}\b)(?:[\w.-]+\s+){{0,3}}?([A-Za-z][\w-]*)\s+(?:{_AUX}|of)\b",
    re.I,
)


def asked_head(question: str) -> str:
    """The stem of the noun a "which / what ... ?" *question* asks a value of ("which
    internal encoding does the stream use?" -> "encoding", "what port does it set?" ->
    "port"), "" when it asks none ("what does X do?")."""
    m = _HEAD.search(question)
    if m is None:
        return ""
    word = m.group(1).casefold()
    if word in STOP_WORDS or re.fullmatch(_AUX, word):
        return ""
    return stem(word)


def asks_for_name(question: str) -> bool:
    """True when *question* asks which function, option, class ... does something: its
    answer is a name."""
    return _ASKS_NAME.search(question) is not None


def names_identifier(text: str, question: str) -> bool:
    """True when *text* holds an identifier (`_IDENTIFIER`) that *question* does not."""
    for m in _IDENTIFIER.finditer(text):
        found = next(g for g in m.groups() if g)
        if not mentions(question, found):
            return True
    return False


def unit_score(ask: Ask, unit: str, context: str) -> int:
    """How well *unit* (a sentence; *context* its document title and section heading) may
    answer: 0 = not a candidate. It must mention one of `ask.every_name` (any unit when
    there is none) and share an asked word, carry a year or a quantity the question asks
    for, or link a question's name to a hop's document; the score is the shared asked
    words (at least 1 for a link) plus 2 for the answer's type."""
    names = ask.every_name
    if names and not any(mentions(unit, n) or mentions(context, n) for n in names):
        return 0
    shared = overlap(set(ask.asked), stems(unit)) if ask.asked else 1
    if any(mentions(unit, h) for h in ask.hops) and any(
        mentions(unit, n) or mentions(context, n) for n in ask.names
    ):
        shared = max(shared, 1)  # the link itself: "Velmora is a town in the Karsk region"
    if any(says(unit, side) for side in ask.sides):
        shared = max(shared, 1)  # a comparison's side: "-I  prompt once before removing ..."
    typed = carries(ask.kind, unit, ask.question)
    # a year or a quantity is specific enough to stand alone ("how many people live" ->
    # "has a population of 48,200"); any sentence naming someone holds a person
    if not shared and not (typed and ask.kind in ("year", "quantity")):
        return 0
    return shared + 2 * typed


def hop_titles(
    ask: Ask, units: Sequence[str], context: str, titles: Iterable[str], own: str
) -> list[str]:
    """Titles (of *titles*, other than *own* and the names) that a unit about the names
    mentions whole where it shares an asked word, and that share an asked word themselves:
    the documents of a second hop."""
    out: list[str] = []
    candidates = [t for t in titles if t and t != own and t not in ask.names]
    for unit in units:
        if ask.names and not any(mentions(unit, n) or mentions(context, n) for n in ask.names):
            continue
        if not overlap(set(ask.asked), stems(unit)):
            continue
        # "the Karsk region" answers "the region that ...", "the river Isker" does not
        out += [
            t
            for t in candidates
            if mentions(unit, t) and t not in out and overlap(set(ask.asked), stems(t))
        ]
    return out


def conflicts(claims: Sequence[tuple[str, str]]) -> set[int]:
    """Indexes of (sentence, document) pairs that contradict a pair of another document:
    the same words but one, where the two differing words hold a digit or a capital (a
    value, not a rewording)."""
    words = [_TOKEN.findall(text) for text, _ in claims]
    out: set[int] = set()
    for i, (_, doc_i) in enumerate(claims):
        for j in range(i + 1, len(claims)):
            if claims[j][1] == doc_i or len(words[i]) != len(words[j]):
                continue
            diff = [(a, b) for a, b in zip(words[i], words[j], strict=True) if a != b]
            if len(diff) == 1 and all(
                any(ch.isdigit() for ch in w) or w[:1].isupper() for w in diff[0]
            ):
                out |= {i, j}
    return out
