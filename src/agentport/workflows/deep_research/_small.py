"""Small-model mode: the model only makes choices the code can check.

Source: DESIGN.md "Small models: the model chooses, the code checks". The
phases and the report are the seed's; what each phase asks of the model changes:

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
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ._corpus import Corpus, Passage, query_terms
from ._run import Run, cap
from ._schemas import Angle, Finding, Report, Scope
from ._small_qa import (
    Ask,
    ask_of,
    conflicts,
    hop_titles,
    mentions,
    overlap,
    stems,
    unit_score,
)

__all__ = [
    "SMALL_VOTES",
    "angle_queries",
    "extract_prompt",
    "finding_confidence",
    "ids_schema",
    "pick_sentences",
    "scope_prompt",
    "sections_for",
    "sentences",
    "small_report",
    "synth_prompt",
    "verdict_of",
    "verify_prompt",
]

Record = dict[str, Any]

SMALL_VOTES = ("supported", "refuted")
_MIN_WORDS = 4
_MAX_SENTENCE_CHARS = 400
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_\[(\"'])")
_TABLE_RULE = re.compile(r"^[|\s:\-]+$")
_LIST_MARK = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_HEADING = re.compile(r"^#{1,6}\s")
_WORD = re.compile(r"\w+", re.UNICODE)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")
_PRONOUN = re.compile(r"(?:It|Its|This|That|These|Those|They|Their|Them)\b")
_COMMON = 0.75  # a question word in more than this share of the documents says little
_FEW_DOCUMENTS = 4  # ...unless there are so few documents that every word is in most


def common_words(corpus: Corpus, question: str) -> frozenset[str]:
    """The question's words that more than 75 % of the documents contain (none in a corpus
    of fewer than 4 documents, where a share says nothing)."""
    if corpus.documents < _FEW_DOCUMENTS:
        return frozenset()
    return frozenset(w for w in query_terms(question) if corpus.doc_share(w) > _COMMON)


def sentences(text: str) -> list[str]:
    """The quotable units of a passage, in reading order: prose sentences, list items and
    table rows; headings, code blocks, table rules and units under 4 words are left out.
    A sentence opening with a pronoun ("It never ...") stays with the sentence before it in
    its paragraph, so a finding never starts with a referent it lost.
    Each unit is a contiguous span of *text* (whitespace aside), so it is a verbatim quote;
    a unit over 400 characters is cut at a word and ends with `…` (the grounding check
    treats `…` as a gap)."""
    units: list[str] = []
    is_item: list[bool] = []  # table rows are never merged with what follows
    prose: list[str] = []
    fence = False

    def flush() -> None:
        if prose:
            for n, piece in enumerate(_SENTENCE_END.split(" ".join(prose))):
                if units and units[-1].endswith(_ABBREVIATIONS) and not is_item[-1]:
                    units[-1] += " " + piece  # "e.g. X" is one sentence
                elif n and _PRONOUN.match(piece):
                    units[-1] += " " + piece  # "It ..." keeps the sentence it refers to
                else:
                    units.append(piece)
                    is_item.append(False)
            prose.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("```") or line.startswith("~~~"):
            flush()
            fence = not fence
            continue
        if fence or not line:
            flush()
            continue
        if _HEADING.match(line) or _TABLE_RULE.match(line):
            flush()
            continue
        if line.startswith("|"):
            flush()
            units.append(line.strip("|").strip())
            is_item.append(True)
            continue
        if _LIST_MARK.match(line):
            flush()
            prose.append(_LIST_MARK.sub("", line))
            continue
        prose.append(line)
    flush()
    out: list[str] = []
    for unit in units:
        unit = unit.strip()
        if len(_WORD.findall(unit)) < _MIN_WORDS:
            continue
        if len(unit) > _MAX_SENTENCE_CHARS:
            unit = unit[: unit.rfind(" ", 0, _MAX_SENTENCE_CHARS)].rstrip() + " …"
        out.append(unit)
    return out


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


def ids_schema(ids: Sequence[str], *, max_items: int) -> dict[str, Any]:
    """`{"ids": [...]}` with 1..*max_items* items, each one of *ids* (the grammar of the
    embedded backend cannot produce anything else)."""
    return {
        "type": "object",
        "properties": {
            "ids": {
                "type": "array",
                "items": {"type": "string", "enum": list(ids)},
                "minItems": 1,
                "maxItems": max_items,
            }
        },
        "required": ["ids"],
        "additionalProperties": False,
    }


def chosen(parsed: Any, allowed: Sequence[str]) -> list[str]:
    """The distinct allowed ids of an `ids_schema` answer, in the model's order."""
    ids = parsed.get("ids") if isinstance(parsed, dict) else None
    if not isinstance(ids, list):
        return []
    return [i for i in dict.fromkeys(ids) if isinstance(i, str) and i in allowed]


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
    for p in corpus.search(question, k):
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


def extract_prompt(question: str, title: str, path: str, units: Sequence[str]) -> str:
    listing = "\n".join(f"S{i}: {u}" for i, u in enumerate(units, 1))
    return (
        "Question: " + question + "\n\n"
        "Sentences from " + title + " (" + path + "):\n" + listing + "\n\n"
        "Which sentences help answer the question? Give 1 to 3 ids, best first."
    )


# ── verify ──


def verify_prompt(
    question: str, claim: str, source: str, counter: Sequence[tuple[str, str]], v: int, n: int
) -> str:
    """The vote prompt; the voter number comes last so consecutive votes share the longest
    prompt prefix (llama.cpp reuses it)."""
    other = "\n".join(f"- ({url}) {text}" for url, text in counter) or "- (none)"
    return (
        "Question: " + question + "\n\n"
        "Statement from the documents (" + source + '):\n"' + claim + '"\n\n'
        "Other passages:\n" + other + "\n\n"
        "Is the statement supported by the documents and does it help answer the question? "
        "Answer supported or refuted. If unsure, answer refuted.\n"
        "Voter " + str(v + 1) + " of " + str(n) + "."
    )


def verdict_of(choice: str) -> Record:
    """A seed `Verdict` record for a constrained vote."""
    return {
        "refuted": choice == "refuted",
        "evidence": f"voter chose '{choice}' (small-model mode: a constrained choice)",
        "confidence": "medium",
        "counterSource": None,
    }


# ── synthesis ──


def synth_prompt(question: str, claims: Sequence[str]) -> str:
    listing = "\n".join(f"C{i}: {c}" for i, c in enumerate(claims, 1))
    return (
        "Question: " + question + "\n\n"
        "Confirmed statements:\n" + listing + "\n\n"
        "Which statements answer the question best? Give 1 to 3 ids, best first."
    )


def finding_confidence(sources: int, unanimous: bool) -> str:
    """The seed's rubric on what the code knows: high = several sources and unanimous votes,
    medium = one source and unanimous votes, low = split votes."""
    if not unanimous:
        return "low"
    return "high" if sources > 1 else "medium"


def _short(url: str) -> str:
    return url.removeprefix("corpus://")


def no_answer(read: int) -> str:
    """The summary when no passage read held a candidate sentence (`candidates`)."""
    return (
        f"The documents do not answer the question: none of the {read} passage(s) read "
        "has a sentence that names what the question is about and states what it asks."
    )


def _document(url: str) -> str:
    head, _, tail = _short(url).rpartition("/")
    return head if tail.isdigit() else _short(url)


def place(corpus: Corpus | None, url: str) -> str:
    """Where a reader finds a passage: "errors.md › The retry policy" (its document and
    section heading), the document alone before the first heading."""
    passage = corpus.passage(url) if corpus is not None else None
    if passage is None:
        return _short(url)
    return f"{passage.path} › {passage.heading}" if passage.heading else passage.path


def small_report(
    question: str,
    confirmed: Sequence[Record],
    best: Sequence[int],
    label: Callable[[str], str] = _short,
) -> Report:
    """The report assembled by code from *confirmed* claims (records with claim, sourceUrl,
    valid, refutedVotes): identical claims merged with their sources, the *best* indexes
    first, the summary made of the best claims' own words with their sources (named by
    *label*: `place` names the document and section). Claims that
    contradict a claim of another document (`_small_qa.conflicts`: the same sentence with
    one value changed) are no finding: the caveats name both sides."""
    disputed = conflicts([(c["claim"], _document(c["sourceUrl"])) for c in confirmed])
    merged: dict[str, Record] = {}
    order = [*best, *(i for i in range(len(confirmed)) if i not in best)]
    for i in order:
        if i in disputed:
            continue
        c = confirmed[i]
        key = " ".join(_WORD.findall(c["claim"].casefold()))
        entry = merged.setdefault(key, {"claim": c["claim"], "sources": [], "unanimous": True})
        entry["sources"].append(c["sourceUrl"])
        entry["unanimous"] &= c["refutedVotes"] == 0
        entry.setdefault("vote", f"{len(c['valid']) - c['refutedVotes']}-{c['refutedVotes']}")
    findings = [
        Finding(
            claim=m["claim"],
            confidence=finding_confidence(len(m["sources"]), m["unanimous"]),
            sources=list(dict.fromkeys(m["sources"])),
            evidence="Quoted verbatim from " + ", ".join(label(s) for s in m["sources"]),
            vote=m["vote"],
        )
        for m in merged.values()
    ]
    ranked = [i for i in best if i not in disputed]
    top = findings[: max(1, min(3, len(ranked) or 1))]
    summary = " ".join(f"{f.claim} [{label(f.sources[0])}]" for f in top)
    caveats = (
        "Small-model mode: every finding is a sentence quoted verbatim from the "
        "documents, chosen by the model and kept by constrained votes; the summary "
        "is assembled from those sentences, not written by the model."
    )
    if disputed:
        sides = "; ".join(
            f'"{confirmed[i]["claim"]}" ({label(confirmed[i]["sourceUrl"])})'
            for i in sorted(disputed)
        )
        caveats += " The documents disagree, so none of these is a finding: " + sides + "."
        if not findings:
            summary = "The documents disagree on what the question asks; see the caveats."
    return Report.model_validate(
        {
            "summary": summary,
            "findings": [f.model_dump() for f in findings],
            "caveats": caveats,
            "openQuestions": [],
        }
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
    # a hop leaves from a name the question gives: without one, nothing links
    seen = [p for n in named for p in corpus.titled(n)] + (
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


def best_of_document(ask: Ask, passages: Sequence[Passage], share: int) -> list[Passage]:
    """The *share* passages of one document whose best sentence `unit_score` rates
    highest (none rated 0): the document's answer, wherever its words are."""
    rated = [
        (max((unit_score(ask, u, _context(p)) for u in sentences(p.text)), default=0), i, p)
        for i, p in enumerate(passages)
    ]
    return [p for s, _, p in sorted(rated, key=lambda x: (-x[0], x[1])) if s > 0][:share]


def ranked_candidates(run: Run, angle: Angle) -> list[Record]:
    """BM25 results for *angle*, relevance by rank (2 high, 2 medium, the rest low)."""
    assert run.corpus is not None
    levels = ["high", "high", "medium", "medium"]
    # Each angle gets a share of the fetch budget, so the later angles add something.
    share = {"question terms": 3, "key terms": 2}.get(angle.label, 1)
    if angle.label.startswith("document: ") and run.ask is not None:
        hits = best_of_document(run.ask, run.corpus.titled(angle.query), share=2)
    else:
        hits = run.corpus.search(angle.query, min(share, run.config.corpus_candidates))
    if hits and angle.label == "question terms":
        # A section states its point first: the best hit's section comes with its opening.
        opening = run.corpus.section_opening(hits[0])
        if opening is not None and opening not in hits:
            hits = [opening, *hits][:share]
    return [
        {
            "url": h.url,
            "title": h.title,
            "snippet": cap(h.text, run.config.snippet_chars),
            "relevance": levels[i] if i < len(levels) else "low",
        }
        for i, h in enumerate(hits)
    ]


def _context(passage: Passage) -> str:
    return f"{passage.title} {passage.heading}"


def _namesake(passage: Passage, names: Sequence[str], titles: Sequence[str]) -> bool:
    """True when *passage*'s document is about a longer namesake ("Port Velmora") of a name
    that has a document of its own ("Velmora"): a hard negative, never a candidate."""
    return any(passage.title != n and mentions(passage.title, n) and n in titles for n in names)


def candidates(
    question: str, run: Run, passage: Passage | None, common: frozenset[str]
) -> dict[str, int]:
    """The sentences of *passage* offered to the model (at most 8, best first) with the
    code's score of each: with no names known, those sharing a content word with the
    question (`pick_sentences`, score 0); with names, those `_small_qa.unit_score` accepts
    (a name, and an asked word or the answer's type), on a document that is not a
    namesake's."""
    if passage is None:
        return {}
    units = sentences(passage.text)
    ask = run.ask
    if ask is None or not ask.every_name:
        return dict.fromkeys(pick_sentences(question, units, ignore=common), 0)
    assert run.corpus is not None
    if _namesake(passage, ask.every_name, run.corpus.titles):
        return {}
    scored = [(unit_score(ask, u, _context(passage)), i, u) for i, u in enumerate(units)]
    best = sorted((x for x in scored if x[0] > 0), key=lambda x: (-x[0], x[1]))[:8]
    return {u: score for score, _, u in best}


async def run_extract(question: str, run: Run, url: str, priority: float) -> Record:
    """Claims of one passage by sentence choice: `sourceQuality`, `claims` (claim = quote =
    a chosen sentence, verbatim), and `error` when the call failed. A passage with no
    sentence sharing a word with the question is skipped without a call."""
    assert run.corpus is not None
    passage = run.corpus.passage(url)
    common = common_words(run.corpus, question)
    scores = candidates(question, run, passage, common)
    units = list(scores)
    if passage is None or not units:
        return {"sourceQuality": "primary", "claims": []}
    ids = [f"S{i}" for i in range(1, len(units) + 1)]
    title = f"{passage.title} › {passage.heading}" if passage.heading else passage.title
    parsed = await run.call(
        "extract",
        extract_prompt(question, title, passage.path, units),
        schema=ids_schema(ids, max_items=3),
        priority=priority,
        max_tokens=48,
    )
    if parsed is None:
        return {"sourceQuality": "primary", "claims": [], "error": run.last_error("extract")}
    picks = [units[ids.index(i)] for i in chosen(parsed, ids)]
    return {
        "sourceQuality": "primary",
        "claims": [
            {
                "claim": u,
                "quote": u,
                "importance": importance_of(question, u, common),
                "_score": relevance(question, u, common) + scores[u],
            }
            for u in picks
        ],
    }


async def run_vote(question: str, run: Run, claim: Record, v: int) -> Record | None:
    """One constrained vote (`SMALL_VOTES`) as a seed `Verdict` record, None on failure."""
    cfg = run.config
    counter: list[tuple[str, str]] = []
    if run.corpus is not None and cfg.counter_passages:
        hits = run.corpus.search(claim["claim"], cfg.counter_passages, exclude=[claim["sourceUrl"]])
        counter = [
            (p.url.removeprefix("corpus://"), cap(" ".join(p.text.split()), cfg.counter_chars))
            for p in hits
        ]
    prompt = verify_prompt(
        question,
        cap(claim["claim"], cfg.max_field_chars),
        claim["sourceUrl"].removeprefix("corpus://"),
        counter,
        v,
        cfg.VOTES_PER_CLAIM,
    )
    answer = await run.call("verify", prompt, choices=SMALL_VOTES, max_tokens=8)
    return verdict_of(answer) if isinstance(answer, str) else None


async def run_synthesis(question: str, run: Run, confirmed: Sequence[Record]) -> tuple[Report, str]:
    """The code-built report from *confirmed* claims and the model's pick of the best ones;
    returns it with the synthesis status: "model choice", "model choice (retried)" or
    "fallback (rank order)" when the choice failed twice."""
    texts = [cap(c["claim"], run.config.max_field_chars) for c in confirmed[:9]]

    def label(url: str) -> str:
        return place(run.corpus, url)

    ids = [f"C{i}" for i in range(1, len(texts) + 1)]
    prompt = synth_prompt(question, texts)
    for attempt in range(2):
        parsed = await run.call(
            "synthesis",
            prompt,
            schema=ids_schema(ids, max_items=3),
            attempt=attempt,
            max_tokens=48,
        )
        best = [ids.index(i) for i in chosen(parsed, ids)]
        if best:
            status = "model choice" + (" (retried)" if attempt else "")
            return small_report(question, confirmed, best, label), status
    run.warn(
        "synthesis: the model's choice failed twice; the report lists the confirmed claims "
        "in rank order"
    )
    return small_report(question, confirmed, [], label), "fallback (rank order)"
