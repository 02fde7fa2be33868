"""The 6-phase pipeline on the `LLMAdapter` contract: Scope -> (Search -> dedup -> Fetch +
Extract, no barrier) -> rank -> Verify (N votes per claim) -> Synthesize.

Follows Claude Code's bundled deep-research workflow: no barrier between search and fetch, a
barrier before verify; when nothing survives there is no synthesis but one of three
summaries (every verifier panel failed; some refuted, some unverified; all refuted). With
`ResearchConfig.small_model` each phase asks the model for choices only (`_small`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from returns.result import Failure

from ...core import LLMAdapter
from ...policies import Budget
from ...transport import warm_processes
from ...web import WebSettings
from . import _phases as phases
from ._budget import finish_partial, with_budget
from ._cache import CallCache
from ._config import ResearchConfig
from ._core import Deduper
from ._corpus import Corpus, load_corpus
from ._corpus_source import CorpusSource
from ._report import ResearchReport
from ._run import EventCallback, Run, check_web_search, extra_stats, warnings_of
from ._state import Mode, Research
from ._web_own import OwnWeb, open_own_web

__all__ = ["run_research"]


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
    opened = await _sources(q, mode, cfg, adapter, corpus, web, web_tools)
    if isinstance(opened, ResearchReport):
        return opened
    run = Run(with_budget(adapter, budget), cfg, opened.source or opened.loaded, on_event, cache)
    run.native_web = run.native_web and opened.own is None  # agentport searches, not the model
    skipped = run.source.skipped if run.source is not None else []
    if skipped:
        run.warn(f"corpus: skipped {len(skipped)} unreadable file(s): {skipped[0]}")
    try:
        # warm agents (a fresh conversation each call), as many as calls run at once: the
        # peak holds that many agents anyway; they end with the run
        async with warm_processes(cfg.CONCURRENCY):
            return finish_partial(await _pipeline(q, run, mode, started, opened.own), run)
    finally:
        if opened.own is not None:
            await opened.own.aclose()
        if opened.loaded is not None and not isinstance(corpus, Corpus):
            opened.loaded.close()


@dataclass(frozen=True)
class _Sources:
    """What a run reads: `loaded` (a corpus in this process: small-model mode needs it),
    `source` (a corpus read elsewhere, or the loaded one passed in), `own` (agentport's own
    web tools); all None in native web mode."""

    loaded: Corpus | None = None
    source: Corpus | CorpusSource | None = None
    own: OwnWeb | None = None


async def _sources(
    q: str,
    mode: Mode,
    cfg: ResearchConfig,
    adapter: LLMAdapter,
    corpus: Corpus | CorpusSource | Path | str | None,
    web: WebSettings | None,
    web_tools: OwnWeb | None,
) -> _Sources | ResearchReport:
    """The run's corpus or web tools, opened; or the report refusing the run."""
    if isinstance(corpus, Corpus | CorpusSource):
        sources = _Sources(corpus if isinstance(corpus, Corpus) else None, corpus)
    elif corpus is not None:
        result = load_corpus(corpus, max_passage_chars=cfg.max_passage_chars)
        if isinstance(result, Failure):
            return ResearchReport(question=q, mode=mode, error=result.failure().message)
        sources = _Sources(result.unwrap())
    else:
        got = await _web_sources(q, mode, cfg, adapter, web, web_tools)
        if isinstance(got, ResearchReport):
            return got
        sources = got
    if cfg.small_model and sources.loaded is None:
        needs = _SMALL_NEEDS_CORPUS if sources.source is not None else _SMALL_NEEDS_FOLDER
        return ResearchReport(question=q, mode=mode, error=needs)
    return sources


async def _web_sources(
    q: str,
    mode: Mode,
    cfg: ResearchConfig,
    adapter: LLMAdapter,
    web: WebSettings | None,
    web_tools: OwnWeb | None,
) -> _Sources | ResearchReport:
    """Web mode: the backend's own tools (nothing to open), else agentport's (`_web_own`);
    small-model mode reads every page first (a web corpus)."""
    refusal = None if cfg.assume_web_tools else check_web_search(adapter.backend)
    if refusal is None:
        return _Sources()
    opened = web_tools if web_tools is not None else open_own_web(refusal, web)
    if isinstance(opened, str):
        return ResearchReport(question=q, mode=mode, error=opened)
    if not cfg.small_model:
        return _Sources(own=opened)
    loaded = await opened.gather_corpus(q, [q], cfg)
    if loaded is None:
        await opened.aclose()
        return ResearchReport(
            question=q,
            mode=mode,
            summary="No claims extracted. 0 sources fetched, all empty/failed.",
            error=opened.engine_failed(),
            warnings=opened.warnings(),
            stats=opened.stats(),
        )
    return _Sources(loaded=loaded, own=opened)


_SMALL_NEEDS_CORPUS = (
    "small-model mode needs the corpus loaded in this process: run it locally "
    "(run_research(corpus=FOLDER))"
)
_SMALL_NEEDS_FOLDER = (
    "small-model mode researches a local folder (--corpus DIR, corpus=...): "
    "the model chooses sentences the code has read"
)


async def _pipeline(
    q: str, run: Run, mode: Mode, started: float, own: OwnWeb | None = None
) -> ResearchReport:
    """The phases in order: scope; search, fetch and extract per angle (no barrier between
    them; a claim sure to rank is verified at once); the follow-up rounds; the barrier's
    ranking; the verification of the ranked claims; the ending (`_phases`)."""
    cfg = run.config
    if own is not None:
        own.bind(run.tallies)
    votes = cfg.VOTES_PER_CLAIM
    run.expected = 1 + 5 + cfg.MAX_FETCH + cfg.MAX_VERIFY_CLAIMS * votes + 1
    state = Research(q, run, mode, started, own, Deduper(cfg))
    angles = await phases.scope(state)
    if angles is None:
        return ResearchReport(
            question=q,
            mode=mode,
            error=_first_call_failed(run.last_error("scope")),
            stats=extra_stats(run, {}, started),
            warnings=warnings_of(run),
        )
    run.expected = 1 + len(angles) + cfg.MAX_FETCH + cfg.MAX_VERIFY_CLAIMS * votes + 1
    run.emit("phase", "search", message=f"{len(angles)} angles")
    async with anyio.create_task_group() as verifiers:
        state.verifiers = verifiers
        if cfg.rounds > 1:  # nothing is sure to rank while a follow-up round may add claims
            state.pending_searches.add(-1)
        async with anyio.create_task_group() as tg:
            for ai in state.add_angles(angles):
                tg.start_soon(phases.search_and_fetch, state, ai, state.angles[ai])
        await phases.follow_up_rounds(state)
        ranking = phases.rank(state)
        if not ranking.ranked:
            return phases.nothing_to_verify(state, ranking)
        run.expected = run.done + len(ranking.ranked) * votes - run.finished["verify"] + 1
        for claim in ranking.ranked:
            phases.launch(state, claim)
    return await phases.done_report(state, ranking)


def _first_call_failed(last: str) -> str:
    """The report's error when the first call (scope) failed: the backend's own failure
    first (`not_installed: 'codex' not found on PATH; ...`), then what it stopped."""
    if last and last != "no answer":
        return f"{last} (the scope call returned no result: the question was not researched)"
    return "the scope call returned no result: the question was not researched (no answer)"
