"""The 6-phase pipeline on the `LLMAdapter` contract: Scope -> (Search -> dedup -> Fetch +
Extract, no barrier) -> rank -> Verify (N votes per claim) -> Synthesize.

Source: deep-research-port-plan.md, Task 8 (orchestration, degenerate paths) and
workflow-anchors.md §4.2 (three-state outcome, summaries when nothing survives).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.abc
from pydantic import BaseModel, ValidationError
from returns.result import Failure

from ...catalog import get_capability
from ...core import (
    CompletionConfig,
    ErrorKind,
    LLMAdapter,
    Message,
    Param,
    ParamSupport,
    ProviderError,
    Usage,
)
from . import _prompts as prompts
from ._cache import CallCache
from ._config import ResearchConfig
from ._core import (
    ClaimPos,
    Deduper,
    build_stats,
    build_synth_blocks,
    build_unverified_block,
    norm_url,
    rank_claims,
    sure_to_rank,
    tally,
    vote_str,
)
from ._core import (
    next_wave_size as _next_wave_size,
)
from ._corpus import Corpus, load_corpus
from ._limiter import PriorityLimiter
from ._report import (
    ClaimEntry,
    ConfirmedEntry,
    RefutedEntry,
    ResearchEvent,
    ResearchReport,
    SourceEntry,
    UnverifiedEntry,
)
from ._schemas import Angle, Extract, Report, Scope, Search, Verdict

__all__ = ["EventCallback", "check_web_search", "run_research"]

EventCallback = Callable[[ResearchEvent], None]
EventKind = Literal["phase", "call_started", "call_finished", "note"]
Mode = Literal["web", "corpus"]
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
Record = dict[str, Any]

_WEB_PHASES = frozenset({"search", "extract", "verify"})


def check_web_search(backend: str) -> str | None:
    """None when *backend*'s catalog entry says it can search the web, else the one-line
    reason to refuse web mode (suggesting `--corpus`)."""
    try:
        support = get_capability(backend).support(Param.web_search)
    except ProviderError:
        return (
            f"backend {backend!r} is not in the catalog, so its web tools are unknown; "
            "research a local folder with --corpus DIR (corpus=...)"
        )
    if support is ParamSupport.IGNORED:
        return (
            f"backend {backend!r} cannot search the web (catalog: web_search IGNORED); "
            "research a local folder with --corpus DIR (corpus=...)"
        )
    return None


async def _gather(fns: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run *fns* concurrently; results in input order (anyio has no gather)."""
    out: list[Any] = [None] * len(fns)

    async def run(i: int, fn: Callable[[], Awaitable[T]]) -> None:
        out[i] = await fn()

    async with anyio.create_task_group() as tg:
        for i, fn in enumerate(fns):
            tg.start_soon(run, i, fn)
    return out


def _cap(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1].rstrip() + "…"


class _Run:
    """State of one run: the one concurrency cap, counters, usage, failures, events."""

    def __init__(
        self,
        adapter: LLMAdapter,
        config: ResearchConfig,
        corpus: Corpus | None,
        on_event: EventCallback | None,
        cache: CallCache | None,
    ) -> None:
        self.adapter = adapter
        self.config = config
        self.corpus = corpus
        self.on_event = on_event
        self.cache = cache
        # ONE cap over every agent call of every phase (seed Task 8: a single semaphore).
        self.limiter = PriorityLimiter(config.CONCURRENCY)
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls_made = 0
        self.calls_cached = 0
        self.done = 0
        self.finished: Counter[str] = Counter()
        self.expected = 0
        self.usage = Usage()
        self.failures: list[tuple[str, ProviderError]] = []
        self.warnings: dict[str, None] = {}

    def emit(self, kind: EventKind, phase: str, **fields: Any) -> None:
        if self.on_event is not None:
            self.on_event(
                ResearchEvent(kind, phase, done=self.done, expected=self.expected, **fields)
            )

    def warn(self, message: str) -> None:
        self.warnings[message] = None

    async def agent(
        self, phase: str, prompt: str, schema: type[M], *, priority: float = 0.0
    ) -> M | None:
        """One structured call: a validated *schema* instance, or None when it failed (a
        failure is recorded and reported; the caller treats None as the original's null)."""
        key = CallCache.key(phase, schema.__name__, prompt)
        if self.cache is not None and (entry := self.cache.get(key)) is not None:
            try:
                value = schema.model_validate(entry["parsed"])
            except ValidationError:
                value = None
            if value is not None:
                self.calls_cached += 1
                self.done += 1
                self.finished[phase] += 1
                self.usage += Usage.model_validate(entry.get("usage") or {})
                self.emit("call_finished", phase, cached=True)
                return value
        call_config = CompletionConfig(
            output_schema=schema,
            label=phase,
            schema_retries=self.config.schema_retries,
            max_tokens=self.config.max_tokens,
            web_search=self.corpus is None and phase in _WEB_PHASES,
        )
        async with self.limiter.slot(priority):
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.calls_made += 1
            self.emit("call_started", phase)
            try:
                result = await self.adapter.complete([Message.user(prompt)], call_config)
            finally:
                self.in_flight -= 1
        self.done += 1
        self.finished[phase] += 1
        if isinstance(result, Failure):
            error = result.failure()
            self.failures.append((phase, error))
            self.emit("call_finished", phase, ok=False, message=str(error))
            return None
        response = result.unwrap()
        self.usage += response.usage
        for w in response.warnings:
            self.warn(w)
        parsed = response.parsed
        try:
            value = parsed if isinstance(parsed, schema) else schema.model_validate(parsed)
        except ValidationError as exc:
            mismatch = ProviderError(ErrorKind.schema_mismatch, str(exc).split("\n")[0])
            self.failures.append((phase, mismatch))
            self.emit("call_finished", phase, ok=False, message="answer does not match schema")
            return None
        if self.cache is not None:
            self.cache.put(
                key,
                {
                    "label": phase,
                    "schema": schema.__name__,
                    "parsed": value.model_dump(mode="json"),
                    "usage": response.usage.model_dump(mode="json"),
                },
            )
        self.emit("call_finished", phase)
        return value

    def last_error(self, phase: str) -> str:
        for p, err in reversed(self.failures):
            if p == phase:
                return str(err)
        return "no answer"


async def run_research(
    question: str,
    adapter: LLMAdapter,
    *,
    config: ResearchConfig | None = None,
    corpus: Corpus | Path | str | None = None,
    on_event: EventCallback | None = None,
    cache: CallCache | None = None,
) -> ResearchReport:
    """Research *question* with *adapter* and return a `ResearchReport`.

    Web mode (`corpus=None`): the agent's own web tools search and fetch; refused with
    `report.error` when the catalog says the backend's web_search is IGNORED (or the backend
    is not in the catalog). Corpus mode (`corpus=` a folder or a loaded `Corpus`): agentport
    searches the folder (BM25) and reads passages; the model ranks, extracts, votes and
    synthesises; quotes are checked against the source text.

    Every agent call is `adapter.complete(..., CompletionConfig(output_schema=<schema>,
    label=<phase>))` with phase labels scope / search / extract / verify / synthesis, at
    most `config.CONCURRENCY` in flight. A failed call is a null answer (a vote abstains, a
    source is recorded as failed). Never raises for expected failures: `report.error` holds
    one line; cancellation propagates. `on_event` receives `ResearchEvent`s; `cache` replays
    finished calls (resume) and records new ones.
    """
    cfg = config or ResearchConfig()
    q = (question or "").strip()
    mode: Mode = "web" if corpus is None else "corpus"
    started = time.monotonic()
    if not q:
        return ResearchReport(question="", mode=mode, error="No research question provided.")
    loaded: Corpus | None = None
    if isinstance(corpus, Corpus):
        loaded = corpus
    elif corpus is not None:
        result = load_corpus(corpus, max_passage_chars=cfg.max_passage_chars)
        if isinstance(result, Failure):
            return ResearchReport(question=q, mode=mode, error=result.failure().message)
        loaded = result.unwrap()
    else:
        refusal = None if cfg.assume_web_tools else check_web_search(adapter.backend)
        if refusal is not None:
            return ResearchReport(question=q, mode=mode, error=refusal)
    run = _Run(adapter, cfg, loaded, on_event, cache)
    if loaded is not None and loaded.skipped:
        run.warn(f"corpus: skipped {len(loaded.skipped)} unreadable file(s): {loaded.skipped[0]}")
    try:
        return await _pipeline(q, run, mode, started)
    finally:
        if loaded is not None and not isinstance(corpus, Corpus):
            loaded.close()


def _corpus_results(
    run: _Run, angle: Angle, sr: Search | None, candidates: list[Record]
) -> list[Record]:
    """Map the ranking call's answer onto the retrieved candidates (exact url, "[n]"/"n",
    or same normalised url); unknown urls are dropped. When the call failed or named no
    candidate, fall back to BM25 order (2 high, 2 medium, the rest low)."""
    by_key: dict[str, Record] = {}
    for i, c in enumerate(candidates, 1):
        by_key[c["url"]] = c
        by_key[norm_url(c["url"])] = c
        by_key[str(i)] = c
        by_key[f"[{i}]"] = c
    picked: list[Record] = []
    seen: set[str] = set()
    unknown = 0
    for r in sr.results if sr is not None else []:
        hit = by_key.get(r.url.strip()) or by_key.get(norm_url(r.url.strip()))
        if hit is None:
            unknown += 1
            continue
        if hit["url"] in seen:
            continue
        seen.add(hit["url"])
        picked.append(
            {
                "url": hit["url"],
                "title": hit["title"],
                "snippet": r.snippet,
                "relevance": r.relevance,
            }
        )
    if unknown:
        run.warn(f"search: the model named {unknown} url(s) that were not among the candidates")
    if picked:
        return picked
    if sr is not None and not sr.results:
        return []  # the model judged every candidate irrelevant
    run.warn(
        f"search ({angle.label}): the ranking call failed or named no candidate; "
        "used full-text search order"
    )
    levels = ["high", "high", "medium", "medium"]
    return [
        {
            "url": c["url"],
            "title": c["title"],
            "snippet": c["snippet"],
            "relevance": levels[i] if i < len(levels) else "low",
        }
        for i, c in enumerate(candidates[:6])
    ]


async def _pipeline(q: str, run: _Run, mode: Mode, started: float) -> ResearchReport:
    cfg = run.config
    corpus = run.corpus
    votes, required = cfg.VOTES_PER_CLAIM, cfg.REFUTATIONS_REQUIRED
    run.expected = 1 + 5 + cfg.MAX_FETCH + cfg.MAX_VERIFY_CLAIMS * votes + 1

    # ── Scope ──
    run.emit("phase", "scope", message="decomposing the question")
    scope = await run.agent("scope", prompts.scope_prompt(q), Scope)
    if scope is None:
        return ResearchReport(
            question=q,
            mode=mode,
            error="Scope agent returned no result — cannot decompose the question "
            f"({run.last_error('scope')}).",
            stats=_extra_stats(run, {}, started),
            warnings=_warnings(run),
        )
    angles = scope.angles
    run.expected = 1 + len(angles) + cfg.MAX_FETCH + cfg.MAX_VERIFY_CLAIMS * votes + 1

    # ── Search -> dedup -> Fetch+Extract, per angle, no barrier between the stages ──
    run.emit("phase", "search", message=f"{len(angles)} angles")
    deduper = Deduper(cfg)
    dedup_lock = anyio.Lock()
    per_angle: list[list[Record | None]] = [[] for _ in angles]
    searches_done: list[int] = []
    pending_searches = set(range(len(angles)))
    pending_fetches: set[tuple[int, int]] = set()
    known: list[tuple[ClaimPos, Record]] = []
    verdicts: dict[ClaimPos, Record] = {}
    launched: set[ClaimPos] = set()

    async def fetch_one(ai: int, slot: int, angle: Angle, source: Record, priority: float) -> None:
        if corpus is not None:
            passage = corpus.passage(source["url"])
            text = _cap(passage.text if passage else "", cfg.max_passage_chars)
            prompt = prompts.corpus_extract_prompt(q, source, angle.label, text)
        else:
            prompt = prompts.fetch_prompt(q, source, angle.label)
        ext = await run.agent("extract", prompt, Extract, priority=priority)
        entry: Record = {"url": source["url"], "title": source["title"], "angle": angle.label}
        if ext is None:
            # A failed extraction is recorded (not dropped) so "blocked" differs from "empty".
            entry |= {
                "sourceQuality": "unreliable",
                "claims": [],
                "error": run.last_error("extract"),
            }
        else:
            entry |= {
                "sourceQuality": ext.source_quality,
                "publishDate": ext.publish_date,
                "claims": [
                    {
                        **c.model_dump(),
                        "_pos": (ai, slot, ci),
                        "sourceUrl": source["url"],
                        "sourceQuality": ext.source_quality,
                        "grounded": (
                            corpus.grounded(c.quote, source["url"]) if corpus is not None else None
                        ),
                    }
                    for ci, c in enumerate(ext.claims)
                ],
            }
        per_angle[ai][slot] = entry
        pending_fetches.discard((ai, slot))
        known.extend(((ai, slot, ci), c) for ci, c in enumerate(entry["claims"]))
        speculate()

    async def search_and_fetch(ai: int, angle: Angle) -> None:
        if corpus is not None:
            hits = corpus.search(angle.query, cfg.corpus_candidates) or corpus.search(
                q, cfg.corpus_candidates
            )
            candidates: list[Record] = [
                {"url": h.url, "title": h.title, "snippet": _cap(h.text, cfg.snippet_chars)}
                for h in hits
            ]
            if not candidates:
                pending_searches.discard(ai)
                speculate()
                return
            sr = await run.agent(
                "search", prompts.corpus_search_prompt(q, angle, candidates), Search
            )
            results = _corpus_results(run, angle, sr, candidates)
        else:
            sr = await run.agent("search", prompts.search_prompt(q, angle), Search)
            results = [r.model_dump() for r in sr.results] if sr is not None else []
        async with dedup_lock:  # the shared seen-set / fetch slots: one angle at a time
            novel = deduper.filter_novel(angle.label, results)
            searches_done.append(ai)
            # The angle whose search ended last is on the critical path: its fetches first.
            priority = -float(len(searches_done))
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
            "claim": _cap(claim["claim"], cfg.max_field_chars),
            "quote": _cap(claim["quote"], cfg.max_field_chars),
        }
        appendix = ""
        if corpus is not None:
            counter = corpus.search(
                claim["claim"], cfg.counter_passages, exclude=[claim["sourceUrl"]]
            )
            appendix = prompts.corpus_verify_appendix(
                [{"url": p.url, "text": _cap(p.text, cfg.counter_chars)} for p in counter]
            )

        def one_vote(v: int) -> Callable[[], Awaitable[Record | None]]:
            async def vote() -> Record | None:
                prompt = prompts.verify_prompt(q, shown, v, votes, required) + appendix
                verdict = await run.agent("verify", prompt, Verdict)
                return verdict.model_dump() if verdict is not None else None

            return vote

        cast_votes: list[Record | None] = []
        if cfg.early_quorum:
            while wave := _next_wave_size(cast_votes, votes, required):
                first = len(cast_votes)
                cast_votes += await _gather([one_vote(v) for v in range(first, first + wave)])
            run.expected -= votes - len(cast_votes)
        else:
            cast_votes = await _gather([one_vote(v) for v in range(votes)])
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
        async with anyio.create_task_group() as tg:
            for ai, angle in enumerate(angles):
                tg.start_soon(search_and_fetch, ai, angle)

        # ── Barrier, then rank ──
        all_sources = [s for sub in per_angle for s in sub if s is not None]
        all_claims = [c for s in all_sources for c in s["claims"]]
        ranked = rank_claims(all_claims, cfg.MAX_VERIFY_CLAIMS)
        ungrounded = sum(1 for c in all_claims if c.get("grounded") is False)
        if ungrounded:
            run.warn(f"{ungrounded} extracted quote(s) were not found in their source; ranked last")
        sources_out = [
            SourceEntry.model_validate(
                {
                    "url": s["url"],
                    "title": s["title"],
                    "quality": s["sourceQuality"],
                    "angle": s["angle"],
                    "claimCount": len(s["claims"]),
                    "publishDate": s.get("publishDate"),
                    "error": s.get("error"),
                }
            )
            for s in all_sources
        ]

        def stats(voted: list[Record], after_synth: int) -> Record:
            base = build_stats(
                angles=len(angles),
                sources=len(all_sources),
                claims=len(all_claims),
                voted=len(voted),
                confirmed=sum(1 for c in voted if c["outcome"] == "confirmed"),
                killed=sum(1 for c in voted if c["outcome"] == "refuted"),
                unverified=sum(1 for c in voted if c["outcome"] == "unverified"),
                after_synth=after_synth,
                dupes=len(deduper.dupes),
                budget_dropped=len(deduper.budget_dropped),
                votes_per_claim=votes,
            )
            base["ungroundedQuotes"] = ungrounded
            base["verifyCallsSkipped"] = sum(c["skipped"] for c in voted)
            return _extra_stats(run, base, started)

        if not ranked:
            return ResearchReport(
                question=q,
                mode=mode,
                summary=(
                    f"No claims extracted. {len(all_sources)} sources fetched, all empty/failed."
                ),
                sources=sources_out,
                stats=stats([], 0),
                warnings=_warnings(run),
            )

        # Every claim verified early must be in the final ranking (sure_to_rank's promise).
        assert launched <= {c["_pos"] for c in ranked}
        run.expected = run.done + len(ranked) * votes - run.finished["verify"] + 1
        for claim in ranked:
            launch(claim)

    voted = [verdicts[c["_pos"]] for c in ranked]
    confirmed = [c for c in voted if c["outcome"] == "confirmed"]
    killed = [c for c in voted if c["outcome"] == "refuted"]
    unverified = [c for c in voted if c["outcome"] == "unverified"]
    claims_out = [_claim_entry(c) for c in voted]
    refuted_out = [
        RefutedEntry(claim=c["claim"], vote=vote_str(c), source=c["sourceUrl"]) for c in killed
    ]
    unverified_out = [
        UnverifiedEntry.model_validate(
            {
                "claim": c["claim"],
                "erroredVotes": c["abstained"],
                "validVotes": len(c["valid"]),
                "source": c["sourceUrl"],
            }
        )
        for c in unverified
    ]
    common: dict[str, Any] = {
        "question": q,
        "mode": mode,
        "claims": claims_out,
        "refuted": refuted_out,
        "unverified": unverified_out,
        "sources": sources_out,
    }

    if not confirmed:
        if not killed:
            summary = (
                f"All {len(voted)} verifier panels failed to reach a quorum of valid votes — "
                "an infrastructure failure, not a finding; the claims are unverified, "
                "not refuted."
            )
        elif unverified:
            summary = (
                f"No claim survived: {len(killed)} refuted and {len(unverified)} unverified "
                "(too few valid votes). Research inconclusive."
            )
        else:
            summary = (
                f"All {len(voted)} claims refuted by adversarial verification. "
                "Research inconclusive."
            )
        return ResearchReport(
            **common, summary=summary, stats=stats(voted, 0), warnings=_warnings(run)
        )

    # ── Synthesize ──
    run.emit("phase", "synthesis", message=f"{len(confirmed)} confirmed claims")
    block, killed_block = build_synth_blocks(confirmed, killed, max_field_chars=cfg.max_field_chars)
    killed_block += build_unverified_block(unverified, max_field_chars=cfg.max_field_chars)
    report = await run.agent(
        "synthesis",
        prompts.synth_prompt(q, block, killed_block, len(confirmed), votes),
        Report,
    )
    if report is None:
        return ResearchReport(
            **common,
            summary=(
                "Synthesis step was skipped or failed — returning "
                f"{len(confirmed)} verified claims unmerged."
            ),
            confirmed=[
                ConfirmedEntry(
                    claim=c["claim"], source=c["sourceUrl"], quote=c["quote"], vote=vote_str(c)
                )
                for c in confirmed
            ],
            stats=stats(voted, 0),
            warnings=_warnings(run),
        )
    # Citations are bound to fetched sources: a URL the synthesis made up is dropped
    # (open_deep_research#186, gpt-researcher#1276: corrupted or invented references).
    fetched = {norm_url(s["url"]): s["url"] for s in all_sources}
    findings = []
    unbound = 0
    for finding in report.findings:
        bound = [fetched[norm_url(u)] for u in finding.sources if norm_url(u) in fetched]
        unbound += len(finding.sources) - len(bound)
        findings.append(finding.model_copy(update={"sources": list(dict.fromkeys(bound))}))
    if unbound:
        run.warn(f"synthesis cited {unbound} source(s) that were never fetched; dropped them")
    final_stats = stats(voted, len(report.findings)) | {"unboundCitations": unbound}
    return ResearchReport(
        **common,
        summary=report.summary,
        findings=findings,
        caveats=report.caveats,
        open_questions=list(report.open_questions or []),
        stats=final_stats,
        warnings=_warnings(run),
    )


def _claim_entry(c: Record) -> ClaimEntry:
    return ClaimEntry.model_validate(
        {
            "claim": c["claim"],
            "quote": c["quote"],
            "source": c["sourceUrl"],
            "sourceQuality": c["sourceQuality"],
            "importance": c["importance"],
            "outcome": c["outcome"],
            "vote": vote_str(c),
            "validVotes": len(c["valid"]),
            "refutedVotes": c["refutedVotes"],
            "abstained": c["abstained"],
            "skipped": c["skipped"],
            "grounded": c.get("grounded"),
            "evidence": [v["evidence"] for v in c["valid"]],
        }
    )


def _extra_stats(run: _Run, base: Record, started: float) -> Record:
    """agentport's additions: measured calls, usage and cost, failures by kind."""
    kinds = Counter(err.kind.value for _, err in run.failures)
    return base | {
        "agentCallsMade": run.calls_made,
        "agentCallsCached": run.calls_cached,
        "agentCallsFailed": len(run.failures),
        "failuresByKind": dict(sorted(kinds.items())),
        "maxInFlight": run.max_in_flight,
        "inputTokens": run.usage.input_tokens,
        "outputTokens": run.usage.output_tokens,
        "cachedTokens": run.usage.cached_tokens,
        "costUsd": run.usage.cost_usd,
        "durationS": round(time.monotonic() - started, 3),
    }


def _warnings(run: _Run) -> list[str]:
    out = list(run.warnings)
    if run.failures:
        kinds = Counter(err.kind.value for _, err in run.failures)
        detail = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
        out.append(
            f"{len(run.failures)} agent call(s) failed ({detail}); last: {run.failures[-1][1]}"
        )
    return out
