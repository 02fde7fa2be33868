"""The follow-up round: after the first pass, search for what the findings name but do not
answer (pure: no I/O).

One round of angles taken from the question's own words never reaches a second document
whose name only the first one gives ("X is a town in the Karsk region" -> the page about
the Karsk region: the bridge of a two-hop question), and one side of a comparison can use
up the fetch slots before the other side is read. `follow_up_angles` returns at most
`limit` new angles:

- every name the question gives that no claim and no source read so far mentions (the
  other side of a comparison): its name with the question's asked words;
- every name a claim gives that the question does not and whose document was not read
  (the bridge): a document title when the corpus has one by that name, else the name run;
  with the question's asked words;
- every document a claim links to (a reST `:doc:` role, a markdown link, a man page's
  `name(1)`) by its file name: the bridge named by its path, not its title
  ("See :doc:`/setuptools`" -> the document setuptools.rst, titled "Setuptools
  Integration");
- last, every name a claim writes as code that the question does not give (`` `nl2br` ``,
  ``` ``nargs=-1`` ```): another page says more of it (the index's table row giving
  `nl2br`'s dotted name), read where it is named (`_small.naming`).

A question asking for a person ("who wrote ...") is answered in documentation by an
author or maintainer line ("Written by ...", "Author: ..."), words the question does not
use: its follow-up queries carry them, so the bridge document's credit is what is found,
not the passage that repeats the first hop's words.

The round is bounded (`ResearchConfig.rounds`, `followup_angles`, `followup_fetches`)
and counted like the first: its searches, fetches and votes are agent calls in the plan,
the budget and `agentCalls`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ._corpus import STOP_WORDS, Corpus, query_terms
from ._run import Record, Run
from ._schemas import Angle
from ._small_qa import Ask, ask_of, carries, mentions, overlap, stems

__all__ = [
    "CODED",
    "LINKED",
    "bridge_of",
    "file_stems",
    "follow_up_angles",
    "follow_ups",
    "linked_titles",
]

_NAME_RUN = re.compile(r"\b[A-Z][\w\-]*(?:\s+(?:of\s+|the\s+)?[A-Z][\w\-]*)*")
_LABEL = "follow-up: "
LINKED = "linked by a finding, not answered yet"  # the rationale of an explicit link's angle
CODED = "named by a finding as code, not answered yet"  # the rationale of a code name's angle
# a link to another document: reST's :doc:`/path` or :doc:`text <path>`, a markdown
# link's target, a man page reference name(1)
_LINK = re.compile(
    r":doc:`(?:[^`<]*<)?/?([\w./-]+?)>?`|\]\(([^)#\s]+)(?:#[^)]*)?\)|\b([\w.-]+)\(\d\w?\)"
)
# a name a finding writes as code: `nl2br`, ``nargs=-1`` (no spaces)
_CODE_NAME = re.compile(r"`{1,2}([A-Za-z_][\w.=-]{2,40})`{1,2}")
# the words documentation uses for what a question of this answer type asks
_KIND_WORDS = {"person": ("author", "written", "maintainer")}


def linked_titles(claim: str, by_stem: Mapping[str, str]) -> list[str]:
    """The titles of the documents *claim* links to (`_LINK`), found by the link target's
    file name without folder and extension in *by_stem* (file stem, case-folded -> title)."""
    out: list[str] = []
    for m in _LINK.finditer(claim):
        target = next(g for g in m.groups() if g)
        stem = target.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0].casefold()
        title = by_stem.get(stem)
        if title and title not in out:
            out.append(title)
    return out


def bridge_of(angle: Angle) -> str:
    """The name a follow-up angle searches for (its bridge), or "" for any other angle."""
    return angle.label.removeprefix(_LABEL) if angle.label.startswith(_LABEL) else ""


def _asked(question: str, names: Sequence[str]) -> list[str]:
    name_words = {w.lower() for n in names for w in re.findall(r"\w+", n)}
    return [w for w in query_terms(question) if w not in name_words]


def _answers(ask: Ask, claim: str, name: str) -> bool:
    """True when *claim* states something the question asks about *name*: an asked word
    that is not part of the name ("region" in "the Karsk region" is no answer), or a value
    of the answer's type."""
    asked = set(ask.asked) - stems(name)
    return bool(overlap(asked, stems(claim))) or carries(ask.kind, claim, ask.question)


def _bridges(
    question: str,
    claim: str,
    own: str,
    titles: Sequence[str],
    by_stem: Mapping[str, str] | None,
) -> tuple[list[str], list[str]]:
    """The bridges *claim* (of the document titled *own*) names that *question* does not:
    (document titles it mentions, or name runs in web mode; titles it links to)."""
    if titles:
        # a bridge is another document: the claim's own was read
        bridges = [
            t for t in titles if t and t != own and mentions(claim, t) and not mentions(question, t)
        ]
    else:
        bridges = [
            m.group(0)
            for m in _NAME_RUN.finditer(claim)
            if m.start() > 0
            and m.group(0).lower() not in STOP_WORDS
            and not mentions(question, m.group(0))
        ]
    links = [
        t
        for t in (linked_titles(claim, by_stem) if by_stem else [])
        if t != own and not mentions(question, t)
    ]
    return bridges, links


def follow_up_angles(
    question: str,
    found: Sequence[tuple[str, str]],
    read_titles: Sequence[str],
    titles: Sequence[str] = (),
    done: Sequence[str] = (),
    limit: int = 2,
    common: frozenset[str] = frozenset(),
    by_stem: Mapping[str, str] | None = None,
) -> list[Angle]:
    """The follow-up angles for *question* after the first pass found the (claim, source
    title) pairs *found* in documents titled *read_titles* (see the module docstring).
    *titles* are the corpus's document titles (empty in web mode); *done* the queries
    already searched; *common* words say nothing (in most documents). A name counts as
    answered when a claim that mentions it (or comes from its document) states an asked
    word or a value of the answer's type. *by_stem* maps document file stems to titles
    (`linked_titles`). At most *limit* angles, the question's unanswered names first."""
    ask = ask_of(question, common)
    asked = _asked(question, ask.names)
    asked += [w for w in _KIND_WORDS.get(ask.kind or "", ()) if w not in asked]

    def answered(name: str, own_document: bool = False) -> bool:
        # a bridge is answered only by its own document, with a value of the type asked
        # (a year, a quantity, a person) when the question asks for one: the first hop's
        # sentence that names it shares the question's words without answering about it
        return any(
            (mentions(title, name) or (not own_document and mentions(claim, name)))
            and _answers(ask, claim, name)
            and (not own_document or ask.kind is None or carries(ask.kind, claim, question))
            for claim, title in found
        )

    # (name, why, the words searched with it)
    wanted: list[tuple[str, str, list[str]]] = [
        (name, "named in the question, not answered yet", asked)
        for name in ask.names
        if not answered(name)
    ]
    linked: list[tuple[str, str, list[str]]] = []
    coded: list[tuple[str, str, list[str]]] = []
    for claim, own in found:
        bridges, links = _bridges(question, claim, own, titles, by_stem)
        # the words the first hop's sentence already matched would find it again
        fresh = [w for w in asked if not overlap(stems(w), stems(claim))] or asked
        # an explicit link (`:doc:`, a markdown link, name(1)) names the bridge surely
        linked += [(b, LINKED, fresh) for b in links]
        wanted += [
            (b, "named by a finding, not answered yet", fresh)
            for b in bridges
            if b not in links and not answered(b, True)
        ]
        # a name written as code is a bridge when no document is one: what another page
        # says of it (a table row giving `nl2br`'s dotted name) is searched last
        coded += [
            (b, CODED, fresh)
            for b in dict.fromkeys(_CODE_NAME.findall(claim))
            if not mentions(question, b) and not answered(b, True)
        ]
    names_first = len([w for w in wanted if w[1].startswith("named in")])
    wanted[names_first:names_first] = [
        w for w in linked if not answered(w[0], True) and w[0] not in [x[0] for x in wanted]
    ]
    wanted += coded
    out: list[Angle] = []
    for name, why, words in wanted:
        query = " ".join([name, *words])
        if query in done or any(a.query == query for a in out):
            continue
        out.append(Angle(label=_LABEL + name, query=query, rationale=why))
        if len(out) >= limit:
            break
    return out


def follow_ups(
    question: str, run: Run, angles: Sequence[Angle], per_angle: Sequence[Sequence[Record | None]]
) -> list[Angle]:
    """`follow_up_angles` for a run after a round: the claims and sources it holds."""
    sources = [s for sub in per_angle for s in sub if s is not None]
    corpus = run.corpus
    common = frozenset(
        w for w in query_terms(question) if corpus is not None and corpus.doc_share(w) > 0.75
    )
    return follow_up_angles(
        question,
        # a claim's subject is part of what it says: a man page's SEE ALSO entry "tac(1)"
        # heads the sentence under it; the best claims' bridges first (the code's score)
        [(_said(c), str(s.get("title", ""))) for s, c in _best_first(sources)],
        [str(s.get("title", "")) for s in sources],
        corpus.titles if corpus is not None else (),
        [a.query for a in angles],
        run.config.followup_angles,
        common if corpus is not None and corpus.documents >= 4 else frozenset(),
        file_stems(corpus) if corpus is not None else None,
    )


def _best_first(sources: Sequence[Record]) -> list[tuple[Record, Record]]:
    pairs = [(s, c) for s in sources for c in s["claims"]]
    return sorted(pairs, key=lambda sc: -float(sc[1].get("_score") or 0))


def _said(claim: Record) -> str:
    text, subject = str(claim.get("claim", "")), str(claim.get("subject") or "")
    return f"{subject} {text}" if subject and not mentions(text, subject) else text


def file_stems(corpus: Corpus) -> dict[str, str]:
    """File stem (case-folded) -> title of each document of *corpus*; a stem two documents
    share names neither."""
    memo = corpus.cache.get("followup-stems")
    if isinstance(memo, dict):
        return memo
    seen: dict[str, set[str]] = {}
    for p in corpus.passages:
        stem = p.path.rsplit("/", 1)[-1].split(".", 1)[0].casefold()
        seen.setdefault(stem, set()).add(p.title)
    out = {stem: next(iter(t)) for stem, t in seen.items() if len(t) == 1}
    corpus.cache["followup-stems"] = out
    return out
