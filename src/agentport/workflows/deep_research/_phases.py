"""The phases of one research run, each one unit over the shared state (`_state.Research`):
scope, search, fetch + extract, verify, the follow-up rounds, the barrier's ranking, and the
end (synthesis or one of the summaries without it).

Four modes run through the same phases and differ only in where a phase reads from: the
small-model phases (`_small`), a corpus agentport searches, agentport's own web tools
(`_web_own`), or the backend's own web tools (native web mode).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from ...web import FetchRefused
from . import _prompts as prompts
from . import _small as small
from ._budget import over_budget, split_voted
from ._core import build_stats, next_wave_size, norm_url, rank_claims, sure_to_rank, tally
from ._finish import (
    claim_lists,
    model_unsure,
    nothing_confirmed_summary,
    salvage,
    set_aside,
    synthesize,
)
from ._followup import bridge_of, follow_ups
from ._honesty import split_mirrors
from ._report import ResearchReport, SourceEntry
from ._run import Record, Run, cap, extra_stats, gather, warnings_of
from ._schemas import Angle, Extract, Scope, Search, Verdict
from ._search_results import corpus_results
from ._state import Ranking, Research
from ._stats import PhaseCounts
from ._web_own import web_extract_prompt, web_search_prompt, web_verify_appendix

__all__ = [
    "done_report",
    "follow_up_rounds",
    "launch",
    "nothing_to_verify",
    "rank",
    "scope",
    "search_and_fetch",
    "stats_of",
    "verify",
]

_REL = {"high": 0, "medium": 1, "low": 2}


# ── Scope ──
async def scope(state: Research) -> list[Angle] | None:
    """The angles the question is researched from; None when the scope call failed."""
    run = state.run
    run.emit("phase", "scope", message="decomposing the question")
    found: Scope | None
    if state.config.small_model:
        found = await small.run_scope(state.question, run)
    else:
        found = await run.agent("scope", prompts.scope_prompt(state.question), Scope)
    return None if found is None else found.angles


# ── Search -> dedup -> Fetch + Extract, per angle, no barrier between the stages ──
async def search_and_fetch(state: Research, ai: int, angle: Angle) -> None:
    """Search angle *ai*, take its new sources' fetch slots, then fetch and extract each."""
    results = await search(state, angle)
    if results is None:  # nothing to choose from: no fetch
        state.pending_searches.discard(ai)
        speculate(state)
        return
    if state.in_order and ai:  # the code's ranking: the fetch slots go in angle order
        await state.in_order[ai - 1].wait()
    async with state.dedup_lock:  # the shared seen-set / fetch slots: one angle at a time
        ordered = sorted(results, key=lambda r: _REL[r["relevance"]])
        distinct = split_mirrors(ordered, state.works, state.mirrors, state.key_of)
        novel = state.deduper.filter_novel(angle.label, [dict(r) for r in distinct])
        state.searches_done.append(ai)
        # The angle whose search ended last is on the critical path: its fetches first.
        priority = -float(len(state.searches_done))
    if state.in_order:
        state.in_order[ai].set()
    state.per_angle[ai] = [None] * len(novel)
    state.pending_fetches.update((ai, slot) for slot in range(len(novel)))
    state.pending_searches.discard(ai)
    speculate(state)
    async with anyio.create_task_group() as tg:
        for slot, source in enumerate(novel):
            tg.start_soon(fetch, state, ai, slot, angle, source, priority)


async def search(state: Research, angle: Angle) -> list[Record] | None:
    """The sources *angle*'s search chose (each `url`, `title`, `relevance`, ...); None
    when the engine or corpus had no candidate (no model call made)."""
    run, cfg, q = state.run, state.config, state.question
    corpus, web = state.corpus, state.web
    if state.ordered:
        # the passages fetched so far, by their normalised URLs
        return small.ranked_candidates(run, angle, state.deduper.seen.keys())
    if web is not None:
        found = await web.candidates(angle.query, cfg.snippet_chars)
        if not found:
            return None
        sr = await run.agent("search", web_search_prompt(q, angle, found), Search)
        return corpus_results(run, angle, sr, found)
    if corpus is not None:
        hits = await corpus.search(angle.query, cfg.corpus_candidates) or await corpus.search(
            q, cfg.corpus_candidates
        )
        candidates: list[Record] = [
            {"url": h.url, "title": h.title, "snippet": cap(h.text, cfg.snippet_chars)}
            for h in hits
        ]
        if not candidates:
            return None
        sr = await run.agent("search", prompts.corpus_search_prompt(q, angle, candidates), Search)
        return corpus_results(run, angle, sr, candidates)
    sr = await run.agent("search", prompts.search_prompt(q, angle), Search)
    return [r.model_dump() for r in sr.results] if sr is not None else []


async def fetch(
    state: Research, ai: int, slot: int, angle: Angle, source: Record, priority: float
) -> None:
    """Fetch and extract one source into its slot; its grounded claims become known (and
    may be verified at once: `speculate`), the others are set aside."""
    got = await extract(state, angle, source, priority)
    if "skipped" in got:  # agentport could not fetch it: not a source, no call spent
        state.pending_fetches.discard((ai, slot))
        speculate(state)
        return
    entry: Record = {"url": source["url"], "title": source["title"], "angle": angle.label}
    entry |= got
    grounded = [await _grounded(state, c["quote"], source["url"]) for c in got["claims"]]
    entry["claims"] = [
        {
            **c,
            "_pos": (ai, slot, ci),
            "sourceUrl": source["url"],
            "sourceQuality": got["sourceQuality"],
            "grounded": grounded[ci],
        }
        for ci, c in enumerate(got["claims"])
    ]
    state.per_angle[ai][slot] = entry
    state.pending_fetches.discard((ai, slot))
    for c in entry["claims"]:
        # Corpus mode: a quote not in its source never reaches voting or synthesis.
        if c["grounded"] is False:
            state.ungrounded.append(c)
        else:
            state.known.append((c["_pos"], c))
    speculate(state)


async def _grounded(state: Research, quote: str, url: str) -> bool | None:
    """Whether *quote* is in the text of *url* (None: native web mode cannot tell)."""
    if state.corpus is not None:
        return await state.corpus.grounded(quote, url)
    if state.web is not None:
        return state.web.grounded(quote, url)
    return None


async def extract(state: Research, angle: Angle, source: Record, priority: float) -> Record:
    """One source's extraction (`sourceQuality`, `publishDate`, `claims`); `error` when the
    call failed (recorded, so "blocked" differs from "empty"); `skipped` when agentport
    could not fetch the page."""
    run, cfg, q = state.run, state.config, state.question
    if cfg.small_model:
        return await small.run_extract(q, run, source["url"], priority, bridge_of(angle))
    if state.corpus is not None:
        passage = state.corpus.passage(source["url"])
        text = cap(passage.text if passage else "", cfg.max_passage_chars)
        prompt = prompts.corpus_extract_prompt(q, source, angle.label, text)
    elif state.web is not None:
        page = await state.web.read(source["url"])
        if isinstance(page, FetchRefused):
            return {"skipped": str(page)}
        text = cap(page.text, state.web.page_chars(cfg))
        prompt = web_extract_prompt(q, source, angle.label, text)
    else:
        prompt = prompts.fetch_prompt(q, source, angle.label)
    ext = await run.agent("extract", prompt, Extract, priority=priority)
    if ext is None:
        return {"sourceQuality": "unreliable", "claims": [], "error": run.last_error("extract")}
    return {
        "sourceQuality": ext.source_quality,
        "publishDate": ext.publish_date,
        "claims": [c.model_dump() for c in ext.claims],
    }


# ── Follow-up rounds: beyond the seed, what the findings name ──
async def follow_up_rounds(state: Research) -> None:
    """Rounds 2..`config.rounds`: search and fetch the angles the findings so far name,
    until a round names none."""
    cfg, run = state.config, state.run
    for n in range(2, cfg.rounds + 1):
        more = follow_ups(state.question, run, state.angles, state.per_angle)
        if n == cfg.rounds or not more:
            state.pending_searches.discard(-1)
        if not more:
            break
        run.emit("phase", "search", message=f"follow-up round: {len(more)} angles")
        state.deduper.fetch_slots = max(state.deduper.fetch_slots, 0) + cfg.followup_fetches
        async with anyio.create_task_group() as tg:
            for ai in state.add_angles(more):
                tg.start_soon(search_and_fetch, state, ai, state.angles[ai])


# ── Verify: VOTES_PER_CLAIM adversarial voters per claim ──
def launch(state: Research, claim: Record) -> None:
    """Start verifying *claim* (once) in the verifiers' task group."""
    pos = claim["_pos"]
    if pos in state.launched:
        return
    if not state.launched:
        state.run.emit("phase", "verify", message=f"up to {state.config.MAX_VERIFY_CLAIMS} claims")
    state.launched.add(pos)
    assert state.verifiers is not None
    state.verifiers.start_soon(verify, state, claim)


def speculate(state: Research) -> None:
    """Verify now every claim certain to make the final top MAX_VERIFY_CLAIMS, not after the
    barrier: same claims, same prompts, same votes, less idle time."""
    if not state.config.speculative_verify or state.verifiers is None:
        return
    by_pos = dict(state.known)
    top = state.config.MAX_VERIFY_CLAIMS
    for pos in sure_to_rank(state.known, state.pending_fetches, state.pending_searches, top):
        launch(state, by_pos[pos])


async def verify(state: Research, claim: Record) -> None:
    """Vote on *claim* (in waves under early quorum) and record its tally in `verdicts`."""
    cfg, run = state.config, state.run
    votes, required = cfg.VOTES_PER_CLAIM, cfg.REFUTATIONS_REQUIRED
    one_vote = await _voter(state, claim)
    cast_votes: list[Record | None] = []
    if cfg.early_quorum:
        while wave := next_wave_size(cast_votes, votes, required):
            first = len(cast_votes)
            cast_votes += await gather([one_vote(v) for v in range(first, first + wave)])
        run.expected -= votes - len(cast_votes)
    else:
        cast_votes = await gather([one_vote(v) for v in range(votes)])
    state.verdicts[claim["_pos"]] = {**claim, **tally(cast_votes, votes, required)}


async def _voter(
    state: Research, claim: Record
) -> Callable[[int], Callable[[], Awaitable[Record | None]]]:
    """Voter *v*'s call on *claim*, with the evidence against it the mode has."""
    cfg, run, q = state.config, state.run, state.question
    shown = {
        **claim,
        "claim": cap(claim["claim"], cfg.max_field_chars),
        "quote": cap(claim["quote"], cfg.max_field_chars),
    }
    appendix = ""
    if state.corpus is not None and not cfg.small_model:
        counter = await state.corpus.search(
            claim["claim"], cfg.counter_passages, exclude=[claim["sourceUrl"]]
        )
        appendix = prompts.corpus_verify_appendix(
            [{"url": p.url, "text": cap(p.text, cfg.counter_chars)} for p in counter]
        )
    elif state.web is not None:
        appendix = web_verify_appendix(state.web.verify_passages(claim, cfg))
    votes, required = cfg.VOTES_PER_CLAIM, cfg.REFUTATIONS_REQUIRED

    def one_vote(v: int) -> Callable[[], Awaitable[Record | None]]:
        async def vote() -> Record | None:
            if cfg.small_model:
                return await small.run_vote(q, run, claim, v)
            prompt = prompts.verify_prompt(q, shown, v, votes, required) + appendix
            verdict = await run.agent("verify", prompt, Verdict)
            return verdict.model_dump() if verdict is not None else None

        return vote

    return one_vote


# ── Barrier, then rank ──
def rank(state: Research) -> Ranking:
    """Every source and claim found; the grounded claims ranked, the top MAX_VERIFY_CLAIMS
    to verify; what was set aside is named in the warnings."""
    run, cfg = state.run, state.config
    for warning in state.own.warnings() if state.own is not None else ():
        run.warn(warning)
    sources = [s for sub in state.per_angle for s in sub if s is not None]
    claims = [c for s in sources for c in s["claims"]]
    eligible = [c for c in claims if c["grounded"] is not False]
    if cfg.small_model:
        # The code's relevance breaks ties within the seed's ranking (stable sort).
        eligible.sort(key=lambda c: (-c.get("_score", 0), c["_pos"]))
    ranked = rank_claims(eligible, cfg.MAX_VERIFY_CLAIMS)
    in_rank = {c["_pos"] for c in ranked}
    cut = [c for c in eligible if c["_pos"] not in in_rank]
    if state.ungrounded:
        run.warn(
            f"{len(state.ungrounded)} extracted quote(s) were not found in their source; "
            "set aside, never voted on"
        )
    if cut:
        run.warn(
            f"{len(cut)} claim(s) not verified (over the verify cap MAX_VERIFY_CLAIMS="
            f"{cfg.MAX_VERIFY_CLAIMS}); listed apart, never presented as findings"
        )
    # Every claim verified early must be in the final ranking (sure_to_rank's promise).
    assert not ranked or state.launched <= in_rank
    return Ranking(sources, claims, ranked, cut)


def common_fields(state: Research, ranking: Ranking) -> Record:
    """The report's fields every ending shares."""
    return {
        "question": state.question,
        "mode": state.mode,
        "sources": [_source_entry(s, state.mirrors) for s in ranking.sources],
        "not_verified": set_aside(ranking.cut),
        "ungrounded": set_aside(state.ungrounded),
    }


def nothing_to_verify(state: Research, ranking: Ranking) -> ResearchReport:
    """The report when no claim survived to be verified."""
    return ResearchReport(
        **common_fields(state, ranking),
        error=state.own.engine_failed() if state.own is not None else None,
        summary=_nothing_extracted(
            state.question, state.run, ranking.sources, len(state.ungrounded)
        ),
        stats=stats_of(state, ranking, [], {}),
        warnings=warnings_of(state.run),
    )


# ── After the verifiers: Synthesize, or a summary without it ──
async def done_report(state: Research, ranking: Ranking) -> ResearchReport:
    """The verified claims' report: synthesised, or (nothing confirmed, budget reached) one
    of the endings without a synthesis call."""
    run = state.run
    voted, budget_cut = split_voted(run, [state.verdicts[c["_pos"]] for c in ranking.ranked])
    common = common_fields(state, ranking) | claim_lists(voted)
    common["not_verified"] = common["not_verified"] + set_aside(budget_cut)
    if not any(c["outcome"] == "confirmed" or model_unsure(run, c) for c in voted):
        return ResearchReport(
            **common,
            summary=nothing_confirmed_summary(voted),
            stats=stats_of(state, ranking, voted, {}),
            warnings=warnings_of(run),
        )
    if over_budget(run):  # no new call: the confirmed claims, unmerged
        return ResearchReport(
            **common,
            confirmed=salvage([c for c in voted if c["outcome"] == "confirmed"]),
            stats=stats_of(state, ranking, voted, {"synthesis": "skipped (budget reached)"}),
            warnings=warnings_of(run),
        )
    urls = [s["url"] for s in ranking.sources]
    fields = await synthesize(state.question, run, voted, ranking.cut, urls)
    extra = fields.pop("stats")
    stats = stats_of(state, ranking, voted, extra)
    return ResearchReport(**common, **fields, stats=stats, warnings=warnings_of(run))


def stats_of(state: Research, ranking: Ranking, voted: list[Record], extra: Record) -> Record:
    """The report's stats: the seed's counts, agentport's additions, then *extra* (the
    synthesis's; its `afterSynthesis` goes to the seed's place)."""
    extra = dict(extra)
    after_synth = int(extra.pop("afterSynthesis", 0))
    counts = PhaseCounts(
        angles=len(state.angles),
        sources=len(ranking.sources),
        claims=len(ranking.claims),
        voted=len(voted),
        confirmed=sum(1 for c in voted if c["outcome"] == "confirmed"),
        killed=sum(1 for c in voted if c["outcome"] == "refuted"),
        unverified=sum(1 for c in voted if c["outcome"] == "unverified"),
        dupes=len(state.deduper.dupes),
        budget_dropped=len(state.deduper.budget_dropped),
        ungrounded=len(state.ungrounded),
        not_verified=len(ranking.cut),
        mirrors=sum(len(m) for m in state.mirrors.values()),
        votes_skipped=sum(c["skipped"] for c in voted),
    )
    base = build_stats(
        angles=counts.angles,
        sources=counts.sources,
        claims=counts.claims,
        voted=counts.voted,
        confirmed=counts.confirmed,
        killed=counts.killed,
        unverified=counts.unverified,
        after_synth=after_synth,
        dupes=counts.dupes,
        budget_dropped=counts.budget_dropped,
        votes_per_claim=state.config.VOTES_PER_CLAIM,
    )
    base["ungroundedQuotes"] = counts.ungrounded
    base["notVerifiedBudget"] = counts.not_verified
    base["mirrorsMerged"] = counts.mirrors
    base["verifyCallsSkipped"] = counts.votes_skipped
    base["researchMode"] = "small-model" if state.config.small_model else "full"
    base |= state.own.stats() if state.own is not None else {}
    return extra_stats(state.run, base | extra, state.started)


def _source_entry(s: Record, mirrors: dict[str, list[str]]) -> SourceEntry:
    return SourceEntry.model_validate(
        {
            "url": s["url"],
            "title": s["title"],
            "quality": s["sourceQuality"],
            "angle": s["angle"],
            "claimCount": len(s["claims"]),
            "section": s.get("section", ""),
            "publishDate": s.get("publishDate"),
            "error": s.get("error"),
            "mirrors": mirrors.get(norm_url(s["url"]), []),
        }
    )


def _nothing_extracted(q: str, run: Run, sources: list[Record], ungrounded: int) -> str:
    """The summary of a run without a claim to verify (the seed's "No claims extracted"
    line; small-model mode abstains: `_small.abstention`)."""
    if ungrounded:
        return (
            f"No usable claims: all {ungrounded} extracted quotes were not found in their source."
        )
    if run.config.small_model and sources and not any(s.get("error") for s in sources):
        return small.abstention(q, run, len(sources))
    return f"No claims extracted. {len(sources)} sources fetched, all empty/failed."
