"""Small-model mode's synthesis: the report assembled by code from the confirmed claims
(pure helpers) and the model's pick of the best ones (`run_synthesis`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ._authority import current_version, stale_page, stale_url
from ._corpus import Corpus
from ._followup import file_stems
from ._lead import answer_first, valued_first
from ._run import Run, cap
from ._schemas import Finding, Report
from ._sides import says
from ._small_qa import Ask, best_about, carries, conflicts, credits, mentions, overlap, stems
from ._small_topic import (
    ON_TOPIC,
    common_words,
    context_of,
    coverage,
    key_terms,
    not_on_topic,
    owners,
)
from ._small_votes import SURE, scored_pick, unsure

__all__ = [
    "chosen",
    "finding_confidence",
    "ids_schema",
    "no_answer",
    "place",
    "run_synthesis",
    "small_report",
    "synth_prompt",
]

Record = dict[str, Any]
_WORD = re.compile(r"\w+", re.UNICODE)


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


def synth_prompt(question: str, claims: Sequence[str]) -> str:
    listing = "\n".join(f"C{i}: {c}" for i, c in enumerate(claims, 1))
    return (
        "Question: " + question + "\n\n"
        "Confirmed statements:\n" + listing + "\n\n"
        "Which statements answer the question best? Give 1 to 3 ids, best first."
    )


def relevance_cap(score: float, best: float) -> str:
    """The highest confidence a finding may have for its code relevance *score* against
    the *best* confirmed claim's: low under 40 % of it, medium under 70 %, else high."""
    if best <= 0:
        return "high"
    share = score / best
    return "low" if share < 0.4 else "medium" if share < 0.7 else "high"


_LEVELS = ("low", "medium", "high")


def finding_confidence(sources: int, unanimous: bool, probability: float | None = None) -> str:
    """The seed's rubric on what the code knows: high = several sources and unanimous votes,
    medium = one source and unanimous votes, low = split votes. With the votes' mean
    *probability* of support (scored votes), the model's certainty caps it: below 0.8 no
    finding is high, below `_small_votes.SURE` none is above low."""
    if not unanimous:
        return "low"
    word = "high" if sources > 1 else "medium"
    if probability is not None:
        if probability < SURE:
            return "low"
        if probability < 0.8:
            return "medium"
    return word


COVERED = 2 / 3  # the share of the question's weighted words a "covering" sentence meets


def code_confidence(first: bool, covered: float) -> str:
    """A finding's confidence from what the code knows of it, not from the votes (a small
    model's vote does not separate the answer from the noise beside it; the code's ranking
    and word coverage do, measured by benchmarks/research_quality/vote_separation.py): one
    level for being the best-ranked finding (*first*), one for meeting `COVERED` of the
    question's specific words weighted by rarity (*covered*, 0..1: `_small_topic.coverage`
    of the sentence with its heading). low / medium / high."""
    return _LEVELS[int(first) + int(covered >= COVERED)]


def mean_probability(valid: Sequence[Record]) -> float | None:
    """The mean P(supported) of scored votes, None when no vote carries one."""
    found = [v["probability"] for v in valid if isinstance(v.get("probability"), float)]
    return sum(found) / len(found) if found else None


def _with_subject(claim: Record, label: str) -> str:
    """The claim as the summary states it: prefixed with what it is about when the
    sentence does not say it: the document it comes from when that is about another name
    than the question's (`about`: "gemini (Gemini CLI)" for "The CLI's own retries ..."),
    then its subject unless its place (*label*: document › heading) names it."""
    subject = str(claim.get("subject") or "")
    about = str(claim.get("about") or "")
    text = str(claim["claim"])
    if subject and subject.casefold() not in (text + " " + label).casefold():
        text = f"{subject}: {text}"
    if about and not mentions(text, about):
        text = f"{about}: {text}"
    return text


def _about(claim: Record) -> str:
    """What a finding's sentence is about when it does not name it (its document's title,
    `about`), as the tail of its evidence line: "; about gemini (Gemini CLI)". The finding
    itself stays the verbatim sentence."""
    about, text = str(claim.get("about") or ""), str(claim["claim"])
    return f"; about {about}" if about and not mentions(text, about) else ""


def about_of(corpus: Corpus | None, question: str, claim: Record) -> str:
    """The title of *claim*'s document when the sentence (with its subject) does not name
    it and it shares no word with *question*: the sentence may be about that document's
    subject, not the question's ("The CLI's own retries" on the gemini page, for a question about
    agentport's retries); "" otherwise."""
    passage = corpus.passage(str(claim.get("sourceUrl") or "")) if corpus is not None else None
    if passage is None or not passage.title:
        return ""
    said = f"{claim.get('claim') or ''} {claim.get('subject') or ''}"
    names = [passage.title, passage.title.split(" (", 1)[0]]
    if any(mentions(said, n) for n in names) or overlap(stems(question), stems(passage.title)):
        return ""  # named, or a page about what the question asks ("Errors and retries")
    return passage.title


def _how_picked(picks: tuple[int, int] | None) -> str:
    """The caveats' first sentences: who chose the sentences and how much the model did."""
    head = (
        "Small-model mode: every finding is a sentence quoted verbatim from the documents, "
        "found and ranked by the code; the summary is assembled from those sentences, not "
        "written by the model. "
    )
    if picks is None:
        return head + "The model picked among the code's best candidates. "
    moved, scored = picks
    return head + (
        "Each pick is the code's ranking weighed by the model's likelihood of each "
        "candidate (asked in two orders, calibrated for position); the model changed "
        f"the code's first choice in {moved} of {scored} picks; the code's best claim "
        "leads the summary. "
    )


def _short(url: str) -> str:
    return url.removeprefix("corpus://")


def no_answer(read: int, total: int | None = None, anywhere: bool = False) -> str:
    """The summary when no passage read held a candidate sentence (`candidates`): *read*
    passages read of *total* in the corpus. "The documents do not answer" only when no
    passage of the whole corpus has a candidate (*anywhere* False and *total* known);
    otherwise the answer was not found in what was read, which says nothing about the
    rest."""
    what = "a sentence that names what the question is about and states what it asks"
    if total is not None and not anywhere:
        return (
            f"The documents do not answer the question: none of their {total} passage(s) "
            f"has {what}."
        )
    of = f" of {total}" if total is not None else ""
    return (
        f"Not found in the {read}{of} passage(s) read: none has {what}. "
        "The passages not read may still answer it."
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
    scored: bool = False,
    picks: tuple[int, int] | None = None,
    ask: Ask | None = None,
) -> Report:
    """The report assembled by code from *confirmed* claims (records with claim, sourceUrl,
    valid, refutedVotes): identical claims merged with their sources, the *best* indexes
    first, the summary made of the best claims' own words with their sources (named by
    *label*: `place` names the document and section; a claim's subject leads it when
    neither names it). A finding's confidence is the seed's rubric capped by the votes'
    probability and by its relevance against the best claim's (`relevance_cap`), so the
    answer and the noise beside it do not share one mark. *scored* says the votes were
    probabilities (`_small_votes`). Claims that contradict a claim of another document
    (`_small_qa.conflicts`: the same sentence with one value changed) are no finding: the
    caveats name both sides. *picks* (moved, scored): how often the model's scored
    choice changed the code's first choice (`_small_votes.scored_pick`). *ask*: the question
    taken apart; for a comparison (`Ask.sides`) the summary states the claim about each
    side first."""
    disputed, superseded = settled(confirmed)
    merged = _merged(confirmed, best, disputed | superseded)
    best_score = max((float(c.get("_score") or 0) for c in confirmed), default=0.0)
    first = next(iter(merged.values()), None)
    findings = [
        Finding(
            claim=str(m["record"]["claim"]),  # verbatim: what it is about goes beside it
            confidence=_confidence(m, m is first, best_score),
            sources=list(dict.fromkeys(m["sources"])),
            evidence="Quoted verbatim from "
            + ", ".join(label(s) for s in m["sources"])
            + _about(m["record"])
            + _provenance(m["record"], label),
            vote=m["vote"],
        )
        for m in merged.values()
    ]
    ranked = [i for i in best if i not in disputed and i not in superseded]
    # a sentence that introduces what follows ("... the defaults are:") says nothing alone:
    # the summary states whole statements, a fragment only when nothing else is left
    whole = [m for m in merged.values() if not fragment(str(m["record"]["claim"]))]
    top = (whole or list(merged.values()))[: max(1, min(3, len(ranked) or 1))]
    top = _both_sides(valued_first(question, top, whole), whole or list(merged.values()), ask)
    # the lead claim states its value-carrying sentence first (`_lead.answer_first`)
    lead = [m["record"] | {"claim": answer_first(str(m["record"]["claim"]), question)}
            for m in top[:1]]  # fmt: skip
    summary = " ".join(
        f"{_with_subject(r, label(m['sources'][0]))} [{label(m['sources'][0])}]"
        for r, m in zip([*lead, *(m["record"] for m in top[1:])], top, strict=True)
    )
    caveats = _caveats(confirmed, picks, scored, superseded, disputed, label)
    if disputed and not findings:
        summary = "The documents disagree on what the question asks; see the caveats."
    return Report.model_validate(
        {
            "summary": summary,
            "findings": [f.model_dump() for f in findings],
            "caveats": caveats,
            "openQuestions": [],
        }
    )


def _both_sides(top: list[Record], ranked: Sequence[Record], ask: Ask | None) -> list[Record]:
    """The summary's claims for a comparison: the claim about each side of `ask.sides` that
    fits the question best (`_small_qa.best_about`) first, in the question's order (an
    answer to "how does A differ from B?" states A, then B), then the rest of *top* (once
    both sides are stated, only its claims naming a side). Without sides, *top* unchanged."""
    if ask is None or not ask.sides:
        return top
    pool = [*top, *(m for m in ranked if m not in top)]
    texts = [f"{m['record'].get('subject') or ''} {m['record']['claim']}" for m in pool]
    lead: list[Record] = []
    for side in ask.sides:
        best = best_about(ask, texts, side)
        if best is not None and pool[best] not in lead:
            lead.append(pool[best])
    rest = [m for m in top if m not in lead]
    if len(lead) == len(ask.sides):
        # both sides stated: a sentence about neither is beside the point
        rest = [m for m in rest if any(says(texts[pool.index(m)], x) for x in ask.sides)]
    return [*lead, *rest]


def _merged(
    confirmed: Sequence[Record], best: Sequence[int], dropped: set[int]
) -> dict[str, Record]:
    """Identical claims merged with their sources and votes, the *best* indexes first and an
    old page's last; the *dropped* indexes (disputed, superseded) left out."""
    merged: dict[str, Record] = {}
    order = [*best, *(i for i in range(len(confirmed)) if i not in best)]
    order.sort(key=lambda i: bool(confirmed[i].get("stale")))  # an old page's last
    for i in order:
        if i in dropped:
            continue
        c = confirmed[i]
        key = " ".join(_WORD.findall(c["claim"].casefold()))
        entry = merged.setdefault(
            key,
            {"claim": c["claim"], "sources": [], "unanimous": True, "p": [], "record": c},
        )
        entry["sources"].append(c["sourceUrl"])
        entry["unanimous"] &= c["refutedVotes"] == 0
        if (p := mean_probability(c["valid"])) is not None:
            entry["p"].append(p)
        vote = f"{len(c['valid']) - c['refutedVotes']}-{c['refutedVotes']}"
        vote += f", P(supported) {p:.2f}" if p is not None else ""
        entry.setdefault("vote", vote + (", model unsure" if unsure(c) else ""))
    return merged


def _confidence(m: Record, first: bool, best_score: float) -> str:
    """A merged finding's mark: the code's (`code_confidence`) where coverage was measured,
    the votes only taking it down when split; else the seed's rubric capped by relevance."""
    covered = m["record"].get("_coverage")
    if isinstance(covered, float):
        word = code_confidence(first, covered)
        if not m["unanimous"]:
            word = "low"
        cap_word = "high"
    else:
        word = finding_confidence(
            len(m["sources"]), m["unanimous"], sum(m["p"]) / len(m["p"]) if m["p"] else None
        )
        cap_word = relevance_cap(float(m["record"].get("_score") or 0), best_score)
    if m["record"].get("stale") or unsure(m["record"]):
        cap_word = "low"  # a page that says it is not current; a claim the model left open
    elif m["record"].get("replaces"):
        cap_word = min(cap_word, "medium", key=_LEVELS.index)  # votes were on the old words
    return _LEVELS[min(_LEVELS.index(word), _LEVELS.index(cap_word))]


def _caveats(
    confirmed: Sequence[Record], picks: tuple[int, int] | None, scored: bool,
    superseded: set[int], disputed: set[int], label: Callable[[str], str],
) -> str:  # fmt: skip
    """What the reader must know of how the findings were chosen and what was left out."""
    caveats = _how_picked(picks) + (
        "Each vote is the model's probability that the statement is supported, from its "
        "likelihoods and calibrated against a content-free statement; a voter less than "
        f"{SURE:.0%} sure either way abstains, so the claim stays unverified. The votes "
        "are a small model's judgement, not a check of the facts: measured on real "
        "documentation they barely tell an answering sentence from its neighbours, so "
        "they drop a claim only by refuting it and do not order the findings."
        if scored
        else "The votes are constrained choices the backend sampled without likelihoods: "
        "they are not a verification of the claims."
    )
    if any(isinstance(c.get("_coverage"), float) for c in confirmed):
        caveats += (
            " Confidence marks come from the code, not from the votes: one level for the "
            "best-ranked finding, one for a sentence meeting two thirds of the question's "
            "specific words; split votes make a finding low."
        )
    if left := sum(1 for c in confirmed if unsure(c)):
        caveats += (
            f' {left} finding(s) marked "model unsure" are stated on the code\'s ranking: '
            "the model could neither confirm nor refute them."
        )
    if superseded:
        old = "; ".join(
            f'"{confirmed[i]["claim"]}" ({label(confirmed[i]["sourceUrl"])})'
            for i in sorted(superseded)
        )
        caveats += (
            " A page marked as archived or superseded disagrees with a current page; the "
            "current page's value is kept and the old one is no finding: " + old + "."
        )
    if disputed:
        sides = "; ".join(
            f'"{confirmed[i]["claim"]}" ({label(confirmed[i]["sourceUrl"])})'
            for i in sorted(disputed)
        )
        caveats += " The documents disagree, so none of these is a finding: " + sides + "."
    return caveats


_INTRODUCES = re.compile(r"[:,;(\[\u2014-]\s*$")


def fragment(sentence: str) -> bool:
    """True when *sentence* is not a statement on its own: it ends by introducing what
    follows (a colon, a comma, an open bracket, a dash: the line before a table or a
    list) or holds fewer than three words."""
    text = sentence.strip()
    return len(_WORD.findall(text)) < 3 or bool(_INTRODUCES.search(text))


def settled(confirmed: Sequence[Record]) -> tuple[set[int], set[int]]:
    """(disputed, superseded) indexes of *confirmed* claims that contradict a claim of
    another document (`_small_qa.conflicts`: the same sentence with one value changed).
    Where one side of a contradiction comes from a page marked as not current (`stale`,
    `_authority`) and the other does not, the old side is superseded and the current side
    stands; two current pages (or two old ones) that disagree are both disputed."""
    docs = [(str(c["claim"]), _document(str(c["sourceUrl"]))) for c in confirmed]
    both = conflicts(docs)
    pairs = [
        (i, j)
        for i in sorted(both)
        for j in sorted(both)
        if i < j and conflicts([docs[i], docs[j]])
    ]
    superseded: set[int] = set()
    disputed: set[int] = set()
    for i, j in pairs:
        old_i, old_j = bool(confirmed[i].get("stale")), bool(confirmed[j].get("stale"))
        if old_i != old_j:
            superseded.add(i if old_i else j)
        else:
            disputed |= {i, j}
    return disputed - superseded, superseded


def _provenance(claim: Record, label: Callable[[str], str]) -> str:
    """The evidence line's tail for a claim from an old page, or one stated in place of an
    old page's sentence."""
    if claim.get("stale"):
        return "; from a page marked as archived or superseded"
    replaces = claim.get("replaces")
    if isinstance(replaces, tuple | list) and len(replaces) == 2:
        return (
            f'; the current version of "{replaces[0]}" ({label(str(replaces[1]))}), a page '
            "marked as archived or superseded (the votes were cast on that wording)"
        )
    return ""


def current_claims(corpus: Corpus | None, confirmed: Sequence[Record]) -> list[Record]:
    """*confirmed* with each claim from a page marked as not current (`_authority`) either
    replaced by its current version (the same words, one value changed, on a current page
    of *corpus*: `replaces` keeps the old sentence and url) or marked `stale`."""
    out: list[Record] = []
    for c in confirmed:
        url = str(c.get("sourceUrl") or "")
        if corpus is None or not stale_url(corpus, url):
            out.append(c)
            continue
        found = current_version(corpus, str(c["claim"]), url)
        if found is None:
            out.append(c | {"stale": True})
        else:
            subject = str(c.get("subject") or "")
            out.append(
                c
                | {
                    "claim": found[0],
                    "sourceUrl": found[1],
                    "replaces": (c["claim"], url),
                    # the old page's subject may name the old page ("split (archived notes)")
                    "subject": "" if stale_page("", subject) else subject,
                }
            )
    return out


def off_topic_report(question: str, run: Run, confirmed: Sequence[Record], read: int) -> Report:
    """The abstention when no confirmed claim is about what *question* asks
    (`_small_topic`): no finding; the caveats name the nearest sentences read."""
    assert run.corpus is not None
    common = common_words(run.corpus, question)
    summary = not_on_topic(read, len(run.corpus.passages), key_terms(run.corpus, question, common))
    nearest = "; ".join(
        f'"{cap(c["claim"], 160)}" ({place(run.corpus, c["sourceUrl"])})' for c in confirmed[:3]
    )
    caveats = (
        "Small-model mode: no confirmed sentence meets a third of the question's specific "
        "words (weighted by how rare they are in the documents), so none is stated as an "
        "answer. The nearest sentences read: " + nearest + "."
    )
    return Report.model_validate(
        {"summary": summary, "findings": [], "caveats": caveats, "openQuestions": []}
    )


def on_topic(question: str, run: Run, confirmed: Sequence[Record]) -> list[Record]:
    """The *confirmed* claims about what *question* asks: those meeting
    `_small_topic.ON_TOPIC` of its words, and those that name a name the question gives
    and carry the value it asks for (a year, a quantity: "how many people live in
    Velmora?" -> "Velmora has a population of 48,200")."""
    if run.corpus is None:
        return list(confirmed)
    common = common_words(run.corpus, question)
    ask = run.ask
    # "split's --compress option" is answered on split's page (or a hop's: the scope's
    # or a follow-up's bridge), or by a sentence naming split: another command's
    # --compress option is no answer
    named = owners(question, file_stems(run.corpus))
    allowed = {*named, *(ask.hops if ask is not None else ()), *run.followed}
    kept = []
    for c in confirmed:
        context = context_of(run.corpus, c)
        # a credit line is a candidate only where the question or a finding leads (a
        # bridge the owner's page links to included), so it is never another owner's
        credit = ask is not None and credits(ask.kind, str(c["claim"]), question)
        if named and not credit and not _owned(run.corpus, c, context, allowed):
            continue
        typed = (
            ask is not None
            and any(mentions(context, n) for n in ask.names)
            and carries(ask.kind, str(c["claim"]), question)
        )
        if credit or typed or coverage(run.corpus, question, context, common) >= ON_TOPIC:
            kept.append(c)
    return kept


def _owned(corpus: Corpus, claim: Record, context: str, titles: set[str]) -> bool:
    """True when *claim* comes from a document titled in *titles* or its context names one
    (its title, or the title's first word: "split" for "split(1)")."""
    passage = corpus.passage(str(claim.get("sourceUrl") or ""))
    if passage is not None and passage.title in titles:
        return True
    names = {n for t in titles for n in (t, *_WORD.findall(t)[:1]) if n.strip()}
    return any(mentions(context, n) for n in names)


async def run_synthesis(
    question: str, run: Run, confirmed: Sequence[Record], read: int = 0
) -> tuple[Report, str]:
    """The code-built report from *confirmed* claims and the model's pick of the best ones;
    returns it with the synthesis status: "model choice", "model choice (retried)" or
    "fallback (rank order)" when the choice failed twice, "abstained (off topic)" when no
    claim is about what the question asks (`on_topic`; *read* = passages read)."""
    confirmed = current_claims(run.corpus, confirmed)
    if confirmed and not on_topic(question, run, confirmed):
        return off_topic_report(question, run, confirmed, read), "abstained (off topic)"
    confirmed = [c | {"about": about_of(run.corpus, question, c)} for c in confirmed]
    if run.corpus is not None:
        common = common_words(run.corpus, question)
        confirmed = [
            c | {"_coverage": coverage(run.corpus, question, context_of(run.corpus, c), common)}
            for c in confirmed
        ]
    texts = [cap(c["claim"], run.config.max_field_chars) for c in confirmed[:9]]

    def label(url: str) -> str:
        return place(run.corpus, url)

    ids = [f"C{i}" for i in range(1, len(texts) + 1)]
    prompt = synth_prompt(question, texts)
    scored = run.scored_votes > 0
    if run.scores_choices and texts:
        code = [float(c.get("_score") or 0) for c in confirmed[: len(texts)]]
        # measured on real documentation, the small model's choice does not beat the code's
        # order (benchmarks/research_quality/vote_separation.py): it may add claims to the
        # summary, but the code's best claim leads it
        best = await scored_pick(
            run, "synthesis", lambda shown: synth_prompt(question, shown), texts, code, "C",
            code_leads=True,
        )  # fmt: skip
        if best:
            picks = (run.picks_moved, run.picks_scored)
            report = small_report(question, confirmed, best, label, scored, picks, run.ask)
            return report, "model choice (scored)"
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
            return small_report(question, confirmed, best, label, scored, ask=run.ask), status
    run.warn(
        "synthesis: the model's choice failed twice; the report lists the confirmed claims "
        "in rank order"
    )
    report = small_report(question, confirmed, [], label, scored, ask=run.ask)
    return report, "fallback (rank order)"
