"""Small-model mode: the model only makes choices the code can check.

Source: DESIGN.md "Small models: the model chooses, the code checks" and issue 11. The
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
from collections.abc import Sequence
from typing import Any

from ._corpus import Corpus, query_terms
from ._run import Run, cap
from ._schemas import Angle, Finding, Report, Scope

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
_COMMON = 0.75  # a question word in more than this share of the documents says little


def sentences(text: str) -> list[str]:
    """The quotable units of a passage, in reading order: prose sentences, list items and
    table rows; headings, code blocks, table rules and units under 4 words are left out.
    Each unit is a contiguous span of *text* (whitespace aside), so it is a verbatim quote;
    a unit over 400 characters is cut at a word and ends with `…` (the grounding check
    treats `…` as a gap)."""
    units: list[str] = []
    is_item: list[bool] = []  # table rows are never merged with what follows
    prose: list[str] = []
    fence = False

    def flush() -> None:
        if prose:
            for piece in _SENTENCE_END.split(" ".join(prose)):
                if units and units[-1].endswith(_ABBREVIATIONS) and not is_item[-1]:
                    units[-1] += " " + piece  # "e.g. X" is one sentence
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


_SUFFIXES = (
    ("ies", "y"), ("ied", "y"), ("sses", "ss"), ("shes", "sh"), ("ches", "ch"), ("xes", "x"),
    ("ing", ""), ("ed", ""), ("ss", "ss"), ("s", ""),
)  # fmt: skip


def stem(word: str) -> str:
    """A light English stem, so "retry", "retries" and "retried" meet (and "source" and
    "sources")."""
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 3:
            return word[: -len(suffix)] + repl
    return word


def _stems(text: str, ignore: frozenset[str] = frozenset()) -> set[str]:
    return {stem(w) for w in query_terms(text) if len(w) > 2 and w not in ignore}


def pick_sentences(
    question: str, units: Sequence[str], limit: int = 8, *, ignore: frozenset[str] = frozenset()
) -> list[str]:
    """The units worth offering to the model, at most *limit*: those sharing a content word
    with *question* (words in *ignore*, e.g. ones most documents contain, do not count),
    the largest overlap first, then reading order. A small model tends to pick the first
    ids it is shown, so the code puts the likeliest answers there. Empty when no unit shares
    a word (the passage is skipped without a call)."""
    terms = _stems(question, ignore)
    scored = [(overlap(terms, _stems(u)), i, u) for i, u in enumerate(units)]
    relevant = [s for s in scored if s[0] > 0]
    return [u for _, _, u in sorted(relevant, key=lambda s: (-s[0], s[1]))[:limit]]


def overlap(terms: set[str], words: set[str]) -> int:
    """How many of *terms* meet one of *words*: equal stems, or one a prefix of the other
    when the shorter has 4+ letters ("fail" and "failure", "retry" and "retryable")."""
    return sum(
        1
        for t in terms
        if t in words
        or any(len(min(t, w, key=len)) >= 4 and (w.startswith(t) or t.startswith(w)) for w in words)
    )


def relevance(question: str, unit: str, ignore: frozenset[str] = frozenset()) -> int:
    """`overlap` of the question's content words (minus *ignore*) with *unit*'s."""
    return overlap(_stems(question, ignore), _stems(unit))


def importance_of(question: str, unit: str, ignore: frozenset[str] = frozenset()) -> str:
    """central when the unit meets at least half of the question's content words (minus
    *ignore*), otherwise supporting."""
    terms = _stems(question, ignore)
    if not terms:
        return "supporting"
    return "central" if 2 * overlap(terms, _stems(unit)) >= len(terms) else "supporting"


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


def small_report(question: str, confirmed: Sequence[Record], best: Sequence[int]) -> Report:
    """The report assembled by code from *confirmed* claims (records with claim, sourceUrl,
    valid, refutedVotes): identical claims merged with their sources, the *best* indexes
    first, the summary made of the best claims' own words with their sources."""
    merged: dict[str, Record] = {}
    order = [*best, *(i for i in range(len(confirmed)) if i not in best)]
    for i in order:
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
            evidence="Quoted verbatim from " + ", ".join(_short(s) for s in m["sources"]),
            vote=m["vote"],
        )
        for m in merged.values()
    ]
    top = findings[: max(1, min(3, len(best) or 1))]
    summary = " ".join(f"{f.claim} [{_short(f.sources[0])}]" for f in top)
    return Report.model_validate(
        {
            "summary": summary,
            "findings": [f.model_dump() for f in findings],
            "caveats": (
                "Small-model mode: every finding is a sentence quoted verbatim from the "
                "documents, chosen by the model and kept by constrained votes; the summary "
                "is assembled from those sentences, not written by the model."
            ),
            "openQuestions": [],
        }
    )


# ── the phases (async; every model call goes through `Run.call`) ──


async def run_scope(question: str, run: Run) -> Scope:
    """The code's angles, plus up to 2 sections the model picks; a picked section becomes
    an angle only when its query's best hits include a passage of that section."""
    assert run.corpus is not None
    corpus = run.corpus
    common = frozenset(w for w in query_terms(question) if corpus.doc_share(w) > _COMMON)
    angles = angle_queries(question, common)
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


def ranked_candidates(run: Run, angle: Angle) -> list[Record]:
    """BM25 results for *angle*, relevance by rank (2 high, 2 medium, the rest low)."""
    assert run.corpus is not None
    levels = ["high", "high", "medium", "medium"]
    # Each angle gets a share of the fetch budget, so the later angles add something.
    share = {"question terms": 3, "key terms": 2}.get(angle.label, 1)
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


async def run_extract(question: str, run: Run, url: str, priority: float) -> Record:
    """Claims of one passage by sentence choice: `sourceQuality`, `claims` (claim = quote =
    a chosen sentence, verbatim), and `error` when the call failed. A passage with no
    sentence sharing a word with the question is skipped without a call."""
    assert run.corpus is not None
    passage = run.corpus.passage(url)
    common = frozenset(w for w in query_terms(question) if run.corpus.doc_share(w) > _COMMON)
    units = pick_sentences(question, sentences(passage.text if passage else ""), ignore=common)
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
                "_score": relevance(question, u, common),
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
            return small_report(question, confirmed, best), status
    run.warn(
        "synthesis: the model's choice failed twice; the report lists the confirmed claims "
        "in rank order"
    )
    return small_report(question, confirmed, []), "fallback (rank order)"
