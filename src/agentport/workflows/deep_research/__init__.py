"""Deep research: Scope -> Search -> dedup -> Fetch+Extract -> Verify (N-vote quorum) ->
Synthesize, on any `LLMAdapter`.

A faithful port of Claude Code's bundled deep-research workflow (constants, five camelCase
schemas, verbatim
prompts, deterministic core, degenerate paths) plus what the original lacks: three outcomes
per claim, `early_quorum`, corpus mode (SQLite FTS5 over a folder, quote grounding), a
pre-launch plan, progress events, usage/cost totals and a resumable call cache.

```python
from agentport.factory import create_llm_adapter
from agentport.workflows.deep_research import ResearchConfig, run_research, to_markdown

report = await run_research("How do X and Y compare?", create_llm_adapter("codex"))
report = await run_research("What does the API guarantee?", adapter, corpus="docs/")
print(to_markdown(report))
```
"""

from __future__ import annotations

from ._budget import budget_plan as budget_plan  # for agentport's interfaces, not public
from ._cache import CallCache, atomic_write_text
from ._config import (
    CONCURRENCY,
    MAX_FETCH,
    MAX_VERIFY_CLAIMS,
    REFUTATIONS_REQUIRED,
    VOTES_PER_CLAIM,
    ResearchConfig,
)
from ._core import (
    Deduper,
    Outcome,
    build_stats,
    build_synth_blocks,
    build_unverified_block,
    claim_key,
    host_of,
    next_wave_size,
    norm_url,
    outcome_of,
    quorum_decided,
    rank_claims,
    sure_to_rank,
    tally,
    vote_str,
)
from ._corpus import CORPUS_SUFFIXES, Corpus, Passage, load_corpus
from ._corpus_source import (
    CorpusSource,
    InMemoryCorpus,
    SearchedPassages,
    passage_from_row,
    passage_row,
)
from ._pipeline import run_research
from ._plan import ResearchPlan, plan_research
from ._prompts import (
    corpus_extract_prompt,
    corpus_search_prompt,
    corpus_verify_appendix,
    fetch_prompt,
    scope_prompt,
    search_prompt,
    synth_prompt,
    verify_prompt,
)
from ._report import (
    ClaimEntry,
    ConfirmedEntry,
    RefutedEntry,
    ResearchEvent,
    ResearchReport,
    SetAsideEntry,
    SourceEntry,
    UnverifiedEntry,
    to_json,
    to_markdown,
)
from ._run import EventCallback, check_web_search, research_config_for
from ._schemas import Angle, Claim, Extract, Finding, Report, Scope, Search, SearchResult, Verdict
from ._web_mode import uses_own_web, web_mode_refusal
from ._web_own import OwnWeb as OwnWeb  # for agentport's interfaces
from ._web_own import no_engine_message as no_engine_message  # for agentport's interfaces
from ._web_own import own_web_refusal as own_web_refusal  # for agentport's interfaces

__all__ = [
    "CONCURRENCY",
    "CORPUS_SUFFIXES",
    "MAX_FETCH",
    "MAX_VERIFY_CLAIMS",
    "REFUTATIONS_REQUIRED",
    "VOTES_PER_CLAIM",
    "Angle",
    "CallCache",
    "Claim",
    "ClaimEntry",
    "ConfirmedEntry",
    "Corpus",
    "CorpusSource",
    "Deduper",
    "EventCallback",
    "Extract",
    "Finding",
    "InMemoryCorpus",
    "Outcome",
    "Passage",
    "RefutedEntry",
    "Report",
    "ResearchConfig",
    "ResearchEvent",
    "ResearchPlan",
    "ResearchReport",
    "Scope",
    "Search",
    "SearchResult",
    "SearchedPassages",
    "SetAsideEntry",
    "SourceEntry",
    "UnverifiedEntry",
    "Verdict",
    "atomic_write_text",
    "build_stats",
    "build_synth_blocks",
    "build_unverified_block",
    "check_web_search",
    "claim_key",
    "corpus_extract_prompt",
    "corpus_search_prompt",
    "corpus_verify_appendix",
    "fetch_prompt",
    "host_of",
    "load_corpus",
    "next_wave_size",
    "norm_url",
    "outcome_of",
    "passage_from_row",
    "passage_row",
    "plan_research",
    "quorum_decided",
    "rank_claims",
    "research_config_for",
    "run_research",
    "scope_prompt",
    "search_prompt",
    "sure_to_rank",
    "synth_prompt",
    "tally",
    "to_json",
    "to_markdown",
    "uses_own_web",
    "verify_prompt",
    "vote_str",
    "web_mode_refusal",
]
