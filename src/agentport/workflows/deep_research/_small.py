"""Small-model mode: the model only makes choices the code can check.

A small model cannot write reliable prose or JSON, but it can choose among options the code
builds, and every answer it gives is one the code can check. The phases and the report are
the seed's; what each phase asks of the model changes:

- scope: angles are built by code from the question's own terms; the model only picks
  document sections (an enum of the section names retrieval found), and a picked section
  becomes an angle only when it retrieves a passage;
- search: BM25 over the corpus ranks the passages, no model call;
- extract: the passage is split into sentences with ids; the model picks ids (an enum of the
  ids present), so every quote is a verbatim span of its source by construction;
- verify: each vote is one of two allowed answers (`CompletionConfig.choices`);
- synthesis: the model picks the confirmed claims that answer the question best (an enum of
  their ids); code assembles the report from those claims, and from all of them in rank
  order when the choice fails twice.

Pure helpers (`sentences`, `pick_sentences`, `ids_schema`, `finding_confidence`) have no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from ._core import norm_url
from ._corpus import Corpus, Passage, query_terms
from ._followup import CODED, bridge_of, file_stems, linked_titles
from ._lead import carries_value
from ._rank import expansion, importance, index_of, weighted_terms, word_pairs
from ._rank import search as fused_search
from ._run import Run, cap
from ._schemas import Angle, Scope
from ._sides import about_side, says
from ._small_qa import (
    Ask,
    ask_of,
    asked_head,
    asks_for_name,
    best_about,
    credits,
    hop_titles,
    mentions,
    names_identifier,
    overlap,
    stems,
    unit_score,
)
from ._small_report import (
    chosen,
    finding_confidence,
    ids_schema,
    no_answer,
    place,
    small_report,
    synth_prompt,
)
from ._small_topic import common_words, quotes_question
from ._small_votes import SMALL_VOTES, run_vote, scored_pick, verdict_of, verify_prompt
from ._units import Unit, sentences, units_of

__all__ = [
    "SMALL_VOTES",
    "angle_queries",
    "extract_prompt",
    "finding_confidence",
    "ids_schema",
    "pick_sentences",
    "run_vote",
    "scope_prompt",
    "sections_for",
    "sentences",
    "small_report",
    "synth_prompt",
    "verdict_of",
    "verify_prompt",
]

Record = dict[str, Any]

_WORD = re.compile(r"\w+", re.UNICODE)
_OPENING = 1.25
_NAMES = 1.3
_SIDES = 1.3
# a page named by its file: "the ls man page", "mkdir's", "the arguments page"
_OWNER = re.compile(r"\b([\w.-]+)(?:'s\b|\s+(?:man\s+)?page\b)")


def pick_sentences(
    question: str, units: Sequence[str], limit: int = 8, *, ignore: frozenset[str] = frozenset()
) -> list[str]:
    """The units worth offering to the model, at most *limit*: those sharing a content word
    with *question* (words in *ignore*, e.g. ones most documents contain, do not count),
    the largest overlap first, then reading order. A small model tends to pick the first
    ids it is shown, so the code puts the likeliest answers there. Empty when no unit shares
    a word (the passage is skipped without a call)."""
    terms = stems(question, ignore)
    scored = [(overlap(terms, stems(u)), i, u) for i, u in enumerate(units)]
    relevant = [s for s in scored if s[0] > 0]
    return [u for _, _, u in sorted(relevant, key=lambda s: (-s[0], s[1]))[:limit]]


def relevance(question: str, unit: str, ignore: frozenset[str] = frozenset()) -> int:
    """`overlap` of the question's content words (minus *ignore*) with *unit*'s."""
    return overlap(stems(question, ignore), stems(unit))


def importance_of(question: str, unit: str, ignore: frozenset[str] = frozenset()) -> str:
    """central when the unit meets at least half of the question's content words (minus
    *ignore*), otherwise supporting."""
    terms = stems(question, ignore)
    if not terms:
        return "supporting"
    return "central" if 2 * overlap(terms, stems(unit)) >= len(terms) else "supporting"


# ── scope ──


def angle_queries(question: str, common: frozenset[str] = frozenset()) -> list[Angle]:
    """The code's angles: all content words of the question, then its two longest words
    that are not *common* (e.g. in most documents), so one frequent word cannot drown the
    specific ones."""
    terms = query_terms(question)
    rare = [w for w in terms if w not in common] or terms
    key = sorted(rare, key=lambda w: (-len(w), terms.index(w)))[:2]
    angles = [Angle(label="question terms", query=" ".join(terms), rationale="the question")]
    if key and key != terms:
        angles.append(Angle(label="key terms", query=" ".join(key), rationale="longest words"))
    return angles


def sections_for(corpus: Corpus, question: str, k: int = 12) -> list[str]:
    """Distinct "title › heading" names of the sections retrieval finds for *question*."""
    names: list[str] = []
    for p in fused_search(corpus, question, k, common_words(corpus, question)):
        name = f"{p.title} › {p.heading}" if p.heading and p.heading != p.title else p.title
        if name not in names:
            names.append(name)
    return names[:8]


def scope_prompt(question: str, sections: Sequence[str]) -> str:
    listing = "\n".join(f"H{i}: {s}" for i, s in enumerate(sections, 1))
    return (
        "Question: " + question + "\n\n"
        "Sections of the documents:\n" + listing + "\n\n"
        "Which sections most likely answer the question? Give 1 or 2 ids."
    )


def small_scope(question: str, angles: list[Angle]) -> Scope:
    # Built by code; the seed's minimum of 3 angles does not apply to code-built angles.
    return Scope.model_construct(
        question=question,
        summary="small-model mode: the question's own terms, then the sections the model picked",
        angles=angles,
    )


# ── extract ──


def shown(unit: Unit, heading: str = "") -> str:
    """A unit as the model and the reader see it: prefixed with its subject when that is
    not the section *heading* (shown apart) and the sentence does not name it
    ("alarm(time): If time is non-zero, ...")."""
    if unit.subject and unit.subject != heading and not mentions(unit.text, unit.subject):
        return f"{unit.subject}: {unit.text}"
    return unit.text


def extract_prompt(question: str, title: str, path: str, units: Sequence[str]) -> str:
    listing = "\n".join(f"S{i}: {u}" for i, u in enumerate(units, 1))
    return (
        "Question: " + question + "\n\n"
        "Sentences from " + title + " (" + path + "):\n" + listing + "\n\n"
        "Which sentences help answer the question? Give 1 to 3 ids, best first."
    )


# ── the phases (async; every model call goes through `Run.call`) ──


async def run_scope(question: str, run: Run) -> Scope:
    """The code's angles: first the documents titled with a name the question gives and
    those a sentence about the names links to (a second hop, `_small_qa.hop_titles`), then
    the question's terms, then up to 2 sections the model picks; a picked section becomes
    an angle only when its query's best hits include a passage of that section."""
    assert run.corpus is not None
    corpus = run.corpus
    common = common_words(corpus, question)
    ask = ask_of(question, common)
    named = [n for n in ask.names if corpus.titled(n)]
    by_file = [t for t in documents_named(question, corpus) if t not in named]
    # a hop leaves from a name the question gives: without one, nothing links
    seen = [p for n in (*named, *by_file) for p in corpus.titled(n)] + (
        corpus.search(question, 4) if ask.names else []
    )
    hops: list[str] = []
    linking = ask_of(question)  # a link may be a word most documents share ("region")
    for p in seen:
        links = hop_titles(linking, sentences(p.text), _context(p), corpus.titles, p.title)
        hops += [t for t in links if t not in hops and t not in named]
    run.ask = replace(ask, hops=tuple(hops[:2]))
    angles = [
        Angle(label=f"document: {t}", query=t, rationale="named" if t in named else "link")
        for t in (*named, *hops[:2])
    ]
    angles += [
        Angle(label=f"document: {t}", query=t, rationale="named by its file")
        for t in by_file
        if t not in hops[:2]
    ]
    angles += [
        Angle(label=f"document: {t}", query=t, rationale="a side's document")
        for t in compared_documents(ask, corpus)
        if t not in named and t not in hops[:2] and t not in by_file
    ]
    angles += angle_queries(question, common)
    sections = sections_for(corpus, question)
    if len(sections) > 1:
        ids = [f"H{i}" for i in range(1, len(sections) + 1)]
        parsed = await run.call(
            "scope",
            scope_prompt(question, sections),
            schema=ids_schema(ids, max_items=2),
            max_tokens=48,
        )
        for pick in chosen(parsed, ids):
            name = sections[ids.index(pick)]
            query = name.replace("›", " ") + " " + " ".join(query_terms(question))
            hits = corpus.search(query, 3)
            if any(name.endswith(p.heading or p.title) for p in hits):
                angles.append(Angle(label=f"section: {name}", query=query, rationale="picked"))
    return small_scope(question, angles)


def compared_documents(ask: Ask, corpus: Corpus) -> list[str]:
    """For a comparison (`Ask.sides`), the titles of the documents the question names by
    their file name ("fmt or fold" -> fmt.1 and fold.1, "rm -i and rm -I" -> rm.1, "click
    arguments and click options" -> arguments.rst and options.rst), at most 2: each side
    is read where it is defined, whatever words its sentences use."""
    if not ask.sides:
        return []
    by_stem = file_stems(corpus)
    titles = [by_stem[w] for w in re.findall(r"[\w-]+", ask.question.casefold()) if w in by_stem]
    return list(dict.fromkeys(titles))[:2]


def documents_named(question: str, corpus: Corpus) -> list[str]:
    """The titles of the documents *question* names by their file name as a page or an
    owner ("the ls man page", "mkdir's --mode", "on the arguments page" -> ls.1, mkdir.1,
    arguments.rst), at most 2: the first hop is read where the question says it is."""
    by_stem = file_stems(corpus)
    found = [by_stem.get(m.group(1).casefold()) for m in _OWNER.finditer(question)]
    return list(dict.fromkeys(t for t in found if t))[:2]


def best_of_document(ask: Ask, passages: Sequence[Passage], share: int) -> list[Passage]:
    """The *share* passages of one document whose best sentence `unit_score` rates
    highest (none rated 0): the document's answer, wherever its words are."""
    rated = [
        (
            max(
                (unit_score(ask, u.text, _context(p, u)) for u in units_of(p.text, p.heading)),
                default=0,
            ),
            i,
            p,
        )
        for i, p in enumerate(passages)
    ]
    return [p for s, _, p in sorted(rated, key=lambda x: (-x[0], x[1])) if s > 0][:share]


def by_candidates(angle: Angle, corpus: Corpus) -> bool:
    """True when a follow-up *angle*'s bridge is a document of *corpus*: it is read where
    `candidates` rates it best (`best_of_bridge`), not where its search words are (with
    the question's words, the first hop's page that names the bridge wins again: cksum's
    "bsd (equivalent to sum -r)" for the bridge sum; for "who wrote ...?" the bridge's SEE
    ALSO line that repeats its name wins over its credit line)."""
    return bool(corpus.titled(bridge_of(angle)))


def best_of_bridge(
    question: str, run: Run, bridge: str, fetched: Collection[Passage] = ()
) -> list[Passage]:
    """The passage of the document titled *bridge* (a follow-up angle's) whose best
    candidate (`candidates`) scores highest, one not *fetched* yet first: the second hop
    is read where the code would find its answer ("Written by ..." under AUTHOR), not
    where its name recurs most (its SEE ALSO line)."""
    assert run.corpus is not None
    common = common_words(run.corpus, question)
    rated = []
    for i, p in enumerate(run.corpus.titled(bridge)):
        found = candidates(question, run, p, common, bridge)
        # a credit line is the answer's type: its passage first
        typed = any(_credit(question, run, p, u, bridge) for u in found)
        score = max(found.values(), default=0.0)
        if score > 0:
            rated.append((p in fetched, not typed, -score, i, p))
    return [r[-1] for r in sorted(rated, key=lambda r: r[:4])][:1]


def naming(
    run: Run, question: str, bridge: str, fetched: Collection[Passage] = ()
) -> list[Passage]:
    """The passages that name *bridge* in a sentence, in documents none of whose passages
    was *fetched* first, best first by that sentence's score for *question*
    (`_rank.UnitIndex.score`): a bridge is read where it is named ("`nl2br`" in the
    index's table row under "Dot Notation"), not where only the question's words recur."""
    assert run.corpus is not None
    index, terms, pairs = index_of(run.corpus), weighted_terms(question), word_pairs(question)
    old = {p.path for p in fetched}
    rated = []
    for i, p in enumerate(run.corpus.search(bridge, 24)):
        said = [u for u in units_of(p.text, p.heading) if mentions(_own(p, u), bridge)]
        if said:
            best = max(index.score_unit(terms, p, u, pairs) for u in said)
            rated.append((p.path in old, -best, i, p))
    return [p for *_, p in sorted(rated, key=lambda r: r[:3])]


def ranked_candidates(run: Run, angle: Angle, read: Collection[str] = ()) -> list[Record]:
    """BM25 results for *angle*, relevance by rank (2 high, 2 medium, the rest low). A
    follow-up angle's bridge is read where it is named, at a passage not read yet (*read*:
    the fetched passages' URLs as `_core.norm_url` keys them) when one names it."""
    assert run.corpus is not None
    levels = ["high", "high", "medium", "medium"]
    # Each angle gets a share of the fetch budget, so the later angles add something.
    share = {"question terms": 3, "key terms": 2}.get(angle.label, 1)
    bridge = bridge_of(angle)
    fetched = {p for p in run.corpus.passages if norm_url(p.url) in read} if bridge else set()
    hits: list[Passage] = []
    if angle.label.startswith("document: ") and run.ask is not None:
        hits = best_of_document(run.ask, run.corpus.titled(angle.query), share=2)
    elif bridge and run.ask is not None and by_candidates(angle, run.corpus):
        hits = best_of_bridge(run.ask.question, run, bridge, fetched)
    else:
        k = min(share, run.config.corpus_candidates)
        if angle.rationale == CODED and run.ask is not None:
            hits = naming(run, run.ask.question, bridge, fetched)[:k]
        if not hits:
            common = common_words(run.corpus, run.ask.question if run.ask else angle.query)
            hits = fused_search(run.corpus, angle.query, k, common)
    if bridge:
        run.followed.update(h.title for h in hits)
    if hits and angle.label == "question terms":
        # A section states its point first: the best hits' sections come with their
        # opening passage (one slot more than the angle's share).
        opened: list[Passage] = []
        for hit in hits[:2]:
            opening = run.corpus.section_opening(hit)
            if opening is not None and opening not in hits and opening not in opened:
                opened.append(opening)
            opened.append(hit)
        hits = list(dict.fromkeys([*opened, *hits]))[: share + 1]
    return [
        {
            "url": h.url,
            "title": h.title,
            "snippet": cap(h.text, run.config.snippet_chars),
            "relevance": levels[i] if i < len(levels) else "low",
        }
        for i, h in enumerate(hits)
    ]


def _context(passage: Passage, unit: Unit | None = None) -> str:
    """What a unit sits under: its document's title, its section heading and its own
    subject (a signature or option name inside the section)."""
    subject = unit.subject if unit is not None and unit.subject != passage.heading else ""
    return f"{passage.title} {passage.heading} {subject}".strip()


def _own(passage: Passage, unit: Unit) -> str:
    """A unit's text with its own subject (not the section heading every unit shares)."""
    return unit.text if unit.subject == passage.heading else f"{unit.subject} {unit.text}"


def _namesake(passage: Passage, names: Sequence[str], titles: Sequence[str]) -> bool:
    """True when *passage*'s document is about a longer namesake ("Port Velmora") of a name
    that has a document of its own ("Velmora"): a hard negative, never a candidate."""
    return any(passage.title != n and mentions(passage.title, n) and n in titles for n in names)


def _credit_counts(question: str, passage: Passage, bridge: str) -> bool:
    """A credit line answers "who wrote ...?" only in a document the question names or a
    finding leads to (*bridge*, a follow-up angle's): every man page has one."""
    return mentions(question, passage.title) or (bool(bridge) and mentions(passage.title, bridge))


def _credit(question: str, run: Run, passage: Passage, unit: Unit, bridge: str) -> bool:
    kind = run.ask.kind if run.ask is not None else None
    return _credit_counts(question, passage, bridge) and credits(kind, unit.text, question)


def candidates(
    question: str, run: Run, passage: Passage | None, common: frozenset[str], bridge: str = ""
) -> dict[Unit, float]:
    """The units of *passage* offered to the model (at most 8, best first) with the
    code's score of each (`_rank.UnitIndex.score`: the question's words and their
    expansion met in the sentence, or in its title, heading or subject, by rarity): with
    no names known, those meeting a content word of the question in the sentence or in
    its subject; with names, only those `_small_qa.unit_score` accepts too (a name, and an
    asked word or the answer's type), on a document that is not a namesake's. A section's
    opening prose weighs `_OPENING`; for a "which function / option ...?" question a unit
    naming an identifier weighs `_NAMES`, and for another "which / what <noun> ...?" one
    (`_small_qa.asked_head`) so does a unit giving that noun a value (`_gives`)."""
    if passage is None:
        return {}
    assert run.corpus is not None
    index = index_of(run.corpus)
    # every word of the question counts, a frequent one by its low rarity (idf)
    terms, extra = weighted_terms(question), expansion(question)
    pairs = word_pairs(question)
    # a sentence quoting the question talks about it (an example run), it does not answer
    units = [
        u for u in units_of(passage.text, passage.heading) if not quotes_question(question, u.text)
    ]
    ask = run.ask
    credited = _credit_counts(question, passage, bridge)
    scored: list[tuple[float, int, Unit]] = []
    if ask is None or not ask.every_name:
        own = stems(question, common)
        sides = ask.sides if ask is not None else ()
        for i, u in enumerate(units):
            credit = credited and credits(ask.kind if ask else None, u.text, question)
            if (
                overlap(own, stems(u.text))
                or overlap(own, stems(u.subject))
                or any(says(_own(passage, u), x) for x in sides)
                or credit
            ):
                # the answer's type counts as `unit_score` counts it
                bonus = 2.0 * credit
                scored.append((bonus + index.score_unit(terms, passage, u, pairs, extra), i, u))
    else:
        if _namesake(passage, ask.every_name, run.corpus.titles):
            return {}
        for i, u in enumerate(units):
            fit = unit_score(ask, _own(passage, u), _context(passage, u))
            if not fit and credited and credits(ask.kind, u.text, question):
                fit = 2  # the answer's type, as `unit_score` counts it
            if fit > 0:
                scored.append((fit + index.score_unit(terms, passage, u, pairs, extra), i, u))
    if run.corpus.section_opening(passage) == passage:
        # a section states its point first: its opening sentences weigh a little more
        # (its own prose, not an option list's items, each about its own name)
        scored = [
            (s * (_OPENING if i < 3 and not u.item and u.subject == passage.heading else 1.0), i, u)
            for s, i, u in scored
        ]
    head = asked_head(question)
    if asks_for_name(question):
        # "which function ...?": a unit naming one (in its text or as its subject) answers
        scored = [
            (s * (_NAMES if names_identifier(_own(passage, u), question) else 1.0), i, u)
            for s, i, u in scored
        ]
    elif head:
        # "which encoding does ...?": a unit giving the asked noun a value answers
        # ("... the encoding for that stream is set to ``utf-8``")
        scored = [
            (s * (_NAMES if _gives(head, _own(passage, u), question) else 1.0), i, u)
            for s, i, u in scored
        ]
    if ask is not None and ask.sides:
        # a comparison: a unit about one of its sides ("-I  prompt once ...") answers half
        scored = [
            (s * (_SIDES if any(says(_own(passage, u), x) for x in ask.sides) else 1.0), i, u)
            for s, i, u in scored
        ]
    best = sorted(scored, key=lambda x: (-x[0], x[1]))[:8]
    return {u: score for score, _, u in best}


def _gives(head: str, text: str, question: str) -> bool:
    """True when *text* names the asked noun (*head*, a stem) and carries a value the
    question does not hold (`_lead.carries_value`)."""
    return head in stems(text) and carries_value(text, question)


def cover_sides(ask: Ask | None, texts: Sequence[str], order: Sequence[int]) -> list[int]:
    """*order* (indexes of the chosen *texts*) with, for each side of a comparison none of
    them is about, the text about it that fits the question best (`_small_qa.best_about`):
    a pick of one sentence answers one side, and the passage often holds the other's too."""
    out = list(order)
    if ask is None:
        return out
    for side in ask.sides:
        if any(about_side(texts[i], side, ask.sides) for i in out):
            continue
        if (best := best_about(ask, texts, side)) is not None:
            out.append(best)
    return out


def cover_links(links: Sequence[Sequence[str]], order: Sequence[int]) -> list[int]:
    """*order* (indexes of the chosen units) with the first unit that links to another
    document (*links*: the titles each unit links to, `_followup.linked_titles`) when no
    chosen one does: the bridge of a two-hop question ("Use the dircolors(1) command to
    set it.") is what the follow-up round reads next, whichever sentence the pick took."""
    out = list(order)
    if not any(links[i] for i in out):
        out += [i for i, titles in enumerate(links) if titles and i not in out][:1]
    return out


def abstention(question: str, run: Run, read: int) -> str:
    """The summary when no passage read held a candidate: the whole corpus is checked
    for one with the same rule (`candidates`), so "the documents do not answer" is said
    only when none of its passages has one (`_small_report.no_answer`)."""
    assert run.corpus is not None
    common = common_words(run.corpus, question)
    anywhere = any(candidates(question, run, p, common) for p in run.corpus.passages)
    return no_answer(read, len(run.corpus.passages), anywhere)


async def run_extract(
    question: str, run: Run, url: str, priority: float, bridge: str = ""
) -> Record:
    """Claims of one passage by sentence choice: `sourceQuality`, `claims` (claim = quote =
    a chosen sentence, verbatim), and `error` when the call failed. A passage with no
    sentence sharing a word with the question is skipped without a call. On a backend
    that reports likelihoods the choice is scored (`scored_pick`), else sampled ids."""
    assert run.corpus is not None
    passage = run.corpus.passage(url)
    common = common_words(run.corpus, question)
    scores = candidates(question, run, passage, common, bridge)
    units = list(scores)
    section = place(run.corpus, url)
    if passage is None or not units:
        return {"sourceQuality": "primary", "claims": [], "section": section}
    title = f"{passage.title} › {passage.heading}" if passage.heading else passage.title
    texts = [shown(u, passage.heading) for u in units]
    order = None
    if run.scores_choices:
        path = passage.path

        def prompt_of(shown: Sequence[str]) -> str:
            return extract_prompt(question, title, path, shown)

        order = await scored_pick(run, "extract", prompt_of, texts, [scores[u] for u in units])
    if order is None:
        ids = [f"S{i}" for i in range(1, len(units) + 1)]
        parsed = await run.call(
            "extract",
            extract_prompt(question, title, passage.path, texts),
            schema=ids_schema(ids, max_items=3),
            priority=priority,
            max_tokens=48,
        )
        if parsed is None:
            error = run.last_error("extract")
            return {"sourceQuality": "primary", "claims": [], "error": error, "section": section}
        order = [ids.index(i) for i in chosen(parsed, ids)]
    order = cover_sides(run.ask, [_own(passage, u) for u in units], order)
    links = [linked_titles(_own(passage, u), file_stems(run.corpus)) for u in units]
    order = cover_links([[t for t in ts if t != passage.title] for ts in links], order)
    claims = [
        {
            "claim": u.text,
            "quote": u.text,
            "subject": u.subject,
            # a credit line the question or a bridge leads to is the answer's type
            "importance": "central"
            if _credit(question, run, passage, u, bridge)
            else importance(index_of(run.corpus), question, scores[u]),
            "_score": scores[u],
        }
        for u in (units[i] for i in order)
    ]
    return {"sourceQuality": "primary", "section": section, "claims": claims}
