"""The 6-phase pipeline on the `LLMAdapter` contract: Scope -> (Search -> dedup -> Fetch +
Extract, no barrier) -> rank -> Verify (N votes per claim) -> Synthesize.

Follows Claude Code's bundled deep-research workflow: no barrier between search and fetch, a
barrier before verify; when nothing survives there is no synthesis but one of three
summaries (every verifier panel failed; some refuted, some unverified; all refuted). With
`ResearchConfig.small_model` each phase asks the model for choices only (`_small`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
from returns.result import Failure

from ...core import LLMAdapter
from ...policies import Budget
from ...transport import warm_processes
from ...web import FetchRefused, WebSettings
from . import _prompts as prompts
from . import _small as small
from ._budget import finish_partial, over_budget, split_voted, with_budget
from ._cache import CallCache
from ._config import ResearchConfig
from ._core import (
    ClaimPos,
    Deduper,
    build_stats,
    norm_url,
    rank_claims,
    sure_to_rank,
    tally,
)
from ._core import (
    next_wave_size as _next_wave_size,
)
from ._corpus import Corpus, load_corpus
from ._corpus_source import CorpusSource
from ._finish import claim_lists, nothing_confirmed_summary, salvage, set_aside, synthesize
from ._followup import follow_ups
from ._honesty import split_mirrors, work_key
from ._report import ResearchReport, SourceEntry
from ._run import (
    EventCallback,
    Record,
    Run,
    cap,
    check_web_search,
    extra_stats,
    gather,
    warnings_of,
)
from ._schemas import Angle, Extract, Scope, Search, Verdict
from ._search_results import corpus_results
from ._web_own import (
    OwnWeb,
    open_own_web,
    web_extract_prompt,
    web_search_prompt,
    web_verify_appendix,
)

__all__ = ["run_research"]

Mode = Literal["web", "corpus"]


async def run_research(
    question: str,
    adapter: LLMAdapter,
    *,
    config: ResearchConfig | None = None,
    corpus: Corpus | CorpusSource | Path | str | None = None,
    on_event: EventCallback | None = None,
    cache: CallCache | None = None,
    budget: Budget | None = None,
    web: WebSettings | None = None,
    web_tools: OwnWeb | None = None,
) -> ResearchReport:
    """Research *question* with *adapter* and return a `ResearchReport`.

    Web mode (`corpus=None`): the agent's own web tools search and fetch; refused with
    `report.error` when the catalog says the backend's web_search is IGNORED (or the backend
    is not in the catalog). Corpus mode (`corpus=` a folder or a loaded `Corpus`): agentport
    searches the folder (BM25) and reads passages; the model ranks, extracts, votes and
    synthesises; quotes are checked against the source text, and a claim whose quote is
    not in its source is set aside (`report.ungrounded`), never voted on.
    `config.small_model` (corpus mode only) asks the model for checkable choices instead
    of prose in every phase (see `_small`). `corpus=` any `CorpusSource` (a corpus read
    elsewhere, e.g. by Temporal activities) runs corpus mode on it; small-model mode needs
    the loaded `Corpus` and is refused in `report.error` with a source.

    When the catalog refuses web mode and a search engine is configured (`web`, else the
    `[web]` table of the settings), agentport's own tools search and fetch instead
    (`_web_own`, docs/web.md): the model picks sources among the results and extracts
    claims from the fetched text; an unfetchable page is skipped and named in the warnings.
    `web_tools` injects those tools (an `OwnWeb` whose search and fetch run elsewhere, e.g.
    as Temporal activities): when the catalog refuses, used (and closed at the end) instead
    of opening them from `web`.

    Every agent call is `adapter.complete(..., CompletionConfig(output_schema=<schema>,
    label=<phase>))` with phase labels scope / search / extract / verify / synthesis, at
    most `config.CONCURRENCY` in flight. A failed call is a null answer (a vote abstains, a
    source is recorded as failed). Never raises for expected failures: `report.error` holds
    one line; cancellation propagates. `on_event` receives `ResearchEvent`s; `cache` replays
    finished calls (resume) and records new ones.

    `budget` (`agentport.policies.Budget`: calls, tokens, dollars, wall-clock; or an
    *adapter* that is a `BudgetAdapter`): at the first ceiling no new call starts and the run
    ends in a partial report (`report.budget_reached`, see `_budget`), never an exception.
    """
    cfg = config or ResearchConfig()
    q = (question or "").strip()
    mode: Mode = "web" if corpus is None else "corpus"
    started = time.monotonic()
    if not q:
        return ResearchReport(question="", mode=mode, error="No research question provided.")
    loaded: Corpus | None = None
    own: OwnWeb | None = None  # agentport's own web tools (_web_own)
    source: Corpus | CorpusSource | None = None
    if isinstance(corpus, Corpus | CorpusSource):
        loaded = corpus if isinstance(corpus, Corpus) else None
        source = corpus
    elif corpus is not None:
        result = load_corpus(corpus, max_passage_chars=cfg.max_passage_chars)
        if isinstance(result, Failure):
            return ResearchReport(question=q, mode=mode, error=result.failure().message)
        loaded = result.unwrap()
    else:
        refusal = None if cfg.assume_web_tools else check_web_search(adapter.backend)
        if refusal is not None:
            opened = web_tools if web_tools is not None else open_own_web(refusal, web)
            if isinstance(opened, str):
                return ResearchReport(question=q, mode=mode, error=opened)
            own = opened
            if cfg.small_model:  # small-model phases need every text first: a web corpus
                loaded = await own.gather_corpus(q, [q], cfg)
                if loaded is None:
                    await own.aclose()
                    return ResearchReport(
                        question=q,
                        mode=mode,
                        summary="No claims extracted. 0 sources fetched, all empty/failed.",
                        error=own.engine_failed(),
                        warnings=own.warnings(),
                        stats=own.stats(),
                    )
    if cfg.small_model and loaded is None:
        if source is not None:
            return ResearchReport(question=q, mode=mode, error=_SMALL_NEEDS_CORPUS)
        return ResearchReport(
            question=q,
            mode=mode,
            error="small-model mode researches a local folder (--corpus DIR, corpus=...): "
            "the model chooses sentences the code has read",
        )
    run = Run(with_budget(adapter, budget), cfg, source or loaded, on_event, cache)
    run.native_web = run.native_web and own is None  # agentport searches, not the model
    skipped = run.source.skipped if run.source is not None else []
    if skipped:
        run.warn(f"corpus: skipped {len(skipped)} unreadable file(s): {skipped[0]}")
    try:
        # warm agents (a fresh conversation each call), as many as calls run at once: the
        # peak holds that many agents anyway; they end with the run
        async with warm_processes(cfg.CONCURRENCY):
            return finish_partial(await _pipeline(q, run, mode, started, own), run)
    finally:
        if own is not None:
            await own.aclose()
        if loaded is not None and not isinstance(corpus, Corpus):
            loaded.close()


_SMALL_NEEDS_CORPUS = (
    "small-model mode needs the corpus loaded in this process: run it locally "
    "(run_research(corpus=FOLDER))"
)


async def _pipeline(
    q: str, run: Run, mode: Mode, started: float, own: OwnWeb | None = None
) -> ResearchReport:
    cfg = run.config
    corpus = run.source
    web = own if corpus is None else None  # agentport searches and fetches (_web_own)
    if own is not None:
        own.bind(run)
    votes, required = cfg.VOTES_PER_CLAIM, cfg.REFUTATIONS_REQUIRED
    run.expected = 1 + 5 + cfg.MAX_FETCH + cfg.MAX_VERIFY_CLAIMS * votes + 1

    # ── Scope ──
    run.emit("phase", "scope", message="decomposing the question")
    scope: Scope | None
    if cfg.small_model:
        scope = await small.run_scope(q, run)
    else:
        scope = await run.agent("scope", prompts.scope_prompt(q), Scope)
    if scope is None:
        return ResearchReport(
            question=q,
            mode=mode,
            error=_first_call_failed(run.last_error("scope")),
            stats=extra_stats(run, {}, started),
            warnings=warnings_of(run),
        )
    angles = scope.angles
    run.expected = 1 + len(angles) + cfg.MAX_FETCH + cfg.MAX_VERIFY_CLAIMS * votes + 1

    # ── Search -> dedup -> Fetch+Extract, per angle, no barrier between the stages ──
    run.emit("phase", "search", message=f"{len(angles)} angles")
    deduper = Deduper(cfg)
    dedup_lock = anyio.Lock()
    works: dict[str, str] = {}
    mirrors: dict[str, list[str]] = {}
    per_angle: list[list[Record | None]] = [[] for _ in angles]
    searches_done: list[int] = []
    pending_searches = set(range(len(angles)))
    pending_fetches: set[tuple[int, int]] = set()
    known: list[tuple[ClaimPos, Record]] = []
    ungrounded: list[Record] = []
    verdicts: dict[ClaimPos, Record] = {}
    launched: set[ClaimPos] = set()

    def key_of(result: Any) -> str | None:
        if corpus is not None:
            passage = corpus.passage(result["url"])
            return work_key(result["url"], "", passage.text if passage else "")
        return work_key(result["url"], result.get("title") or "")

    async def extract(angle: Angle, source: Record, priority: float) -> Record:
        if cfg.small_model:
            return await small.run_extract(q, run, source["url"], priority)
        if corpus is not None:
            passage = corpus.passage(source["url"])
            text = cap(passage.text if passage else "", cfg.max_passage_chars)
            prompt = prompts.corpus_extract_prompt(q, source, angle.label, text)
        elif web is not None:
            page = await web.read(source["url"])
            if isinstance(page, FetchRefused):
                return {"skipped": str(page)}
            text = cap(page.text, web.page_chars(cfg))
            prompt = web_extract_prompt(q, source, angle.label, text)
        else:
            prompt = prompts.fetch_prompt(q, source, angle.label)
        ext = await run.agent("extract", prompt, Extract, priority=priority)
        if ext is None:
            # A failed extraction is recorded (not dropped) so "blocked" differs from "empty".
            return {"sourceQuality": "unreliable", "claims": [], "error": run.last_error("extract")}
        return {
            "sourceQuality": ext.source_quality,
            "publishDate": ext.publish_date,
            "claims": [c.model_dump() for c in ext.claims],
        }

    async def fetch_one(ai: int, slot: int, angle: Angle, source: Record, priority: float) -> None:
        got = await extract(angle, source, priority)
        if "skipped" in got:  # agentport could not fetch it: not a source, no call spent
            pending_fetches.discard((ai, slot))
            speculate()
            return
        entry: Record = {"url": source["url"], "title": source["title"], "angle": angle.label}
        entry |= got
        grounded = [
            await corpus.grounded(c["quote"], source["url"])
            if corpus is not None
            else web.grounded(c["quote"], source["url"])
            if web is not None
            else None
            for c in got["claims"]
        ]
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
        per_angle[ai][slot] = entry
        pending_fetches.discard((ai, slot))
        for c in entry["claims"]:
            # Corpus mode: a quote not in its source never reaches voting or synthesis.
            if c["grounded"] is False:
                ungrounded.append(c)
            else:
                known.append((c["_pos"], c))
        speculate()

    # small-model mode searches without a model call, so angle order costs no time: the
    # first angles (the documents the question names) always get their fetch slots
    in_order = [anyio.Event() for _ in angles] if corpus is not None and cfg.small_model else []

    async def search_and_fetch(ai: int, angle: Angle) -> None:
        if corpus is not None and cfg.small_model:
            results = small.ranked_candidates(run, angle)
        elif web is not None:
            found = await web.candidates(angle.query, cfg.snippet_chars)
            if not found:
                pending_searches.discard(ai)
                speculate()
                return
            sr = await run.agent("search", web_search_prompt(q, angle, found), Search)
            results = corpus_results(run, angle, sr, found)
        elif corpus is not None:
            hits = await corpus.search(angle.query, cfg.corpus_candidates) or await corpus.search(
                q, cfg.corpus_candidates
            )
            candidates: list[Record] = [
                {"url": h.url, "title": h.title, "snippet": cap(h.text, cfg.snippet_chars)}
                for h in hits
            ]
            if not candidates:
                pending_searches.discard(ai)
                speculate()
                return
            sr = await run.agent(
                "search", prompts.corpus_search_prompt(q, angle, candidates), Search
            )
            results = corpus_results(run, angle, sr, candidates)
        else:
            sr = await run.agent("search", prompts.search_prompt(q, angle), Search)
            results = [r.model_dump() for r in sr.results] if sr is not None else []
        if in_order and ai:  # the code's ranking: the fetch slots go in angle order
            await in_order[ai - 1].wait()
        async with dedup_lock:  # the shared seen-set / fetch slots: one angle at a time
            ordered = sorted(results, key=lambda r: _REL[r["relevance"]])
            distinct = split_mirrors(ordered, works, mirrors, key_of)
            novel = deduper.filter_novel(angle.label, [dict(r) for r in distinct])
            searches_done.append(ai)
            # The angle whose search ended last is on the critical path: its fetches first.
            priority = -float(len(searches_done))
        if in_order:
            in_order[ai].set()
        per_angle[ai] = [None] * len(novel)
        pending_fetches.update((ai, slot) for slot in range(len(novel)))
        pending_searches.discard(ai)
        speculate()
        async with anyio.create_task_group() as tg:
            for slot, source in enumerate(novel):
                tg.start_soon(fetch_one, ai, slot, angle, source, priority)

    # ── Verify: VOTES_PER_CLAIM adversarial voters per claim ──
    async def verify_claim(claim: Record) -> None:
        shown = {
            **claim,
            "claim": cap(claim["claim"], cfg.max_field_chars),
            "quote": cap(claim["quote"], cfg.max_field_chars),
        }
        appendix = ""
        if corpus is not None and not cfg.small_model:
            counter = await corpus.search(
                claim["claim"], cfg.counter_passages, exclude=[claim["sourceUrl"]]
            )
            appendix = prompts.corpus_verify_appendix(
                [{"url": p.url, "text": cap(p.text, cfg.counter_chars)} for p in counter]
            )
        elif web is not None:
            appendix = web_verify_appendix(web.verify_passages(claim, cfg))

        def one_vote(v: int) -> Callable[[], Awaitable[Record | None]]:
            async def vote() -> Record | None:
                if cfg.small_model:
                    return await small.run_vote(q, run, claim, v)
                prompt = prompts.verify_prompt(q, shown, v, votes, required) + appendix
                verdict = await run.agent("verify", prompt, Verdict)
                return verdict.model_dump() if verdict is not None else None

            return vote

        cast_votes: list[Record | None] = []
        if cfg.early_quorum:
            while wave := _next_wave_size(cast_votes, votes, required):
                first = len(cast_votes)
                cast_votes += await gather([one_vote(v) for v in range(first, first + wave)])
            run.expected -= votes - len(cast_votes)
        else:
            cast_votes = await gather([one_vote(v) for v in range(votes)])
        verdicts[claim["_pos"]] = {**claim, **tally(cast_votes, votes, required)}

    vtg_box: list[anyio.abc.TaskGroup] = []

    def launch(claim: Record) -> None:
        pos = claim["_pos"]
        if pos in launched:
            return
        if not launched:
            run.emit("phase", "verify", message=f"up to {cfg.MAX_VERIFY_CLAIMS} claims")
        launched.add(pos)
        vtg_box[0].start_soon(verify_claim, claim)

    def speculate() -> None:
        # A claim certain to make the final top MAX_VERIFY_CLAIMS is verified now, not after
        # the barrier: same claims, same prompts, same votes, less idle time.
        if not cfg.speculative_verify or not vtg_box:
            return
        by_pos = dict(known)
        for pos in sure_to_rank(known, pending_fetches, pending_searches, cfg.MAX_VERIFY_CLAIMS):
            launch(by_pos[pos])

    async with anyio.create_task_group() as vtg:
        vtg_box.append(vtg)
        follow = cfg.rounds > 1
        if follow:  # nothing is sure to rank while a follow-up round may still add claims
            pending_searches.add(-1)
        async with anyio.create_task_group() as tg:
            for ai, angle in enumerate(angles):
                tg.start_soon(search_and_fetch, ai, angle)
        for n in range(2, cfg.rounds + 1):  # beyond the seed: what the findings name
            more = follow_ups(q, run, angles, per_angle)
            if n == cfg.rounds or not more:
                pending_searches.discard(-1)
            if not more:
                break
            run.emit("phase", "search", message=f"follow-up round: {len(more)} angles")
            deduper.fetch_slots = max(deduper.fetch_slots, 0) + cfg.followup_fetches
            first, angles = len(angles), [*angles, *more]
            per_angle += [[] for _ in more]
            in_order += [anyio.Event() for _ in more] if in_order else []
            pending_searches.update(range(first, len(angles)))
            async with anyio.create_task_group() as tg:
                for ai in range(first, len(angles)):
                    tg.start_soon(search_and_fetch, ai, angles[ai])

        # ── Barrier, then rank ──
        for warning in own.warnings() if own is not None else ():
            run.warn(warning)
        all_sources = [s for sub in per_angle for s in sub if s is not None]
        all_claims = [c for s in all_sources for c in s["claims"]]
        eligible = [c for c in all_claims if c["grounded"] is not False]
        if cfg.small_model:
            # The code's relevance breaks ties within the seed's ranking (stable sort).
            eligible.sort(key=lambda c: (-c.get("_score", 0), c["_pos"]))
        ranked = rank_claims(eligible, cfg.MAX_VERIFY_CLAIMS)
        in_rank = {c["_pos"] for c in ranked}
        cut = [c for c in eligible if c["_pos"] not in in_rank]
        if ungrounded:
            run.warn(
                f"{len(ungrounded)} extracted quote(s) were not found in their source; "
                "set aside, never voted on"
            )
        if cut:
            run.warn(
                f"{len(cut)} claim(s) not verified (over the verify cap MAX_VERIFY_CLAIMS="
                f"{cfg.MAX_VERIFY_CLAIMS}); listed apart, never presented as findings"
            )
        sources_out = [_source_entry(s, mirrors) for s in all_sources]

        def stats(voted: list[Record], extra: Record) -> Record:
            base = build_stats(
                angles=len(angles),
                sources=len(all_sources),
                claims=len(all_claims),
                voted=len(voted),
                confirmed=sum(1 for c in voted if c["outcome"] == "confirmed"),
                killed=sum(1 for c in voted if c["outcome"] == "refuted"),
                unverified=sum(1 for c in voted if c["outcome"] == "unverified"),
                after_synth=int(extra.pop("afterSynthesis", 0)),
                dupes=len(deduper.dupes),
                budget_dropped=len(deduper.budget_dropped),
                votes_per_claim=votes,
            )
            base["ungroundedQuotes"] = len(ungrounded)
            base["notVerifiedBudget"] = len(cut)
            base["mirrorsMerged"] = sum(len(m) for m in mirrors.values())
            base["verifyCallsSkipped"] = sum(c["skipped"] for c in voted)
            base["researchMode"] = "small-model" if cfg.small_model else "full"
            base |= own.stats() if own is not None else {}
            return extra_stats(run, base | extra, started)

        common: dict[str, Any] = {
            "question": q,
            "mode": mode,
            "sources": sources_out,
            "not_verified": set_aside(cut),
            "ungrounded": set_aside(ungrounded),
        }
        if not ranked:
            return ResearchReport(
                **common,
                error=own.engine_failed() if own is not None else None,
                summary=_nothing_extracted(q, run, all_sources, len(ungrounded)),
                stats=stats([], {}),
                warnings=warnings_of(run),
            )

        # Every claim verified early must be in the final ranking (sure_to_rank's promise).
        assert launched <= in_rank
        run.expected = run.done + len(ranked) * votes - run.finished["verify"] + 1
        for claim in ranked:
            launch(claim)

    voted, budget_cut = split_voted(run, [verdicts[c["_pos"]] for c in ranked])
    common |= claim_lists(voted)
    common["not_verified"] = common["not_verified"] + set_aside(budget_cut)
    if not any(c["outcome"] == "confirmed" for c in voted):
        return ResearchReport(
            **common,
            summary=nothing_confirmed_summary(voted),
            stats=stats(voted, {}),
            warnings=warnings_of(run),
        )

    if over_budget(run):  # no new call: the confirmed claims, unmerged
        return ResearchReport(
            **common,
            confirmed=salvage([c for c in voted if c["outcome"] == "confirmed"]),
            stats=stats(voted, {"synthesis": "skipped (budget reached)"}),
            warnings=warnings_of(run),
        )

    # ── Synthesize ──
    fields = await synthesize(q, run, voted, cut, [s["url"] for s in all_sources])
    extra = fields.pop("stats")
    return ResearchReport(**common, **fields, stats=stats(voted, extra), warnings=warnings_of(run))


_REL = {"high": 0, "medium": 1, "low": 2}


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


def _first_call_failed(last: str) -> str:
    """The report's error when the first call (scope) failed: the backend's own failure
    first (`not_installed: 'codex' not found on PATH; ...`), then what it stopped."""
    if last and last != "no answer":
        return f"{last} (the scope call returned no result: the question was not researched)"
    return "the scope call returned no result: the question was not researched (no answer)"
