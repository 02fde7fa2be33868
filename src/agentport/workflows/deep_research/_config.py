"""`ResearchConfig`: the seed's constants plus the options the original lacks.

The constants are the original workflow's (VOTES_PER_CLAIM=3, REFUTATIONS_REQUIRED=2,
MAX_FETCH=15, MAX_VERIFY_CLAIMS=25).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CONCURRENCY",
    "MAX_FETCH",
    "MAX_VERIFY_CLAIMS",
    "REFUTATIONS_REQUIRED",
    "VOTES_PER_CLAIM",
    "ResearchConfig",
]

VOTES_PER_CLAIM = 3
REFUTATIONS_REQUIRED = 2
MAX_FETCH = 15
MAX_VERIFY_CLAIMS = 25
CONCURRENCY = 10


class ResearchConfig(BaseModel):
    """Limits and switches of one research run. Immutable; defaults reproduce the original.

    The upper-case fields keep the original's constant names, so its tests read unchanged.

    Attributes:
        VOTES_PER_CLAIM: verifier votes per claim (3).
        REFUTATIONS_REQUIRED: refutations that kill a claim; also the quorum of valid votes a
            claim needs to survive (2).
        MAX_FETCH: fetch slots. Soft, as in the original: high-relevance results are fetched
            even when no slot is left, unless `strict_fetch_cap` (15).
        MAX_VERIFY_CLAIMS: claims sent to verification after ranking (25).
        CONCURRENCY: agent calls in flight at once, across ALL phases (10).
        early_quorum: stop voting on a claim once its outcome can no longer change
            (saves verify calls; off by default for fidelity).
        speculative_verify: start verifying a claim before the last extraction ends once it
            is certain to make the final top MAX_VERIFY_CLAIMS (same claims, prompts and
            votes as after the barrier; less idle time). False = the original's barrier.
        assume_web_tools: skip the catalog check that refuses web mode on a backend whose
            web_search is IGNORED (a test double scripting web results, or a backend whose
            web tools the catalog does not know).
        strict_fetch_cap: make MAX_FETCH a hard cap (the original's cap is soft).
        schema_retries: re-prompts per call when the answer does not match the schema.
        max_tokens: cap on generated tokens per call, or None for the backend default.
        corpus_candidates: passages BM25 retrieves per angle in corpus mode (the model ranks
            them, like a web search's result page).
        max_passage_chars: characters of a passage handed to the extractor (corpus mode).
        snippet_chars: characters of each candidate shown to the ranking call (corpus mode).
        counter_passages: counter-evidence passages each verifier gets (corpus mode).
        counter_chars: characters of each counter-evidence passage (corpus mode).
        max_field_chars: cap on any web- or model-derived string (claim, quote, evidence)
            placed into a later prompt; None = no cap (the original has none).
        small_model: small-model mode (corpus mode only): every phase asks the model for
            a choice the code can check (sections, sentence ids, one of two votes, the best
            confirmed claims) instead of prose; quotes are verbatim by construction and the
            report is assembled by code. Off = the seed's prompts and schemas.
        rounds: search rounds. 1 = the seed's single round (the seed-faithful setting);
            2 adds a follow-up round that searches for what the first round's findings
            name but do not answer (a two-hop question's bridge, a comparison's other
            side; `_followup`), with up to `followup_angles` angles and
            `followup_fetches` extra fetch slots (the default in small-model mode).
        followup_angles: angles of one follow-up round (2).
        followup_fetches: fetch slots a follow-up round adds to MAX_FETCH (3).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    VOTES_PER_CLAIM: int = Field(default=VOTES_PER_CLAIM, ge=1, le=15)
    REFUTATIONS_REQUIRED: int = Field(default=REFUTATIONS_REQUIRED, ge=1)
    MAX_FETCH: int = Field(default=MAX_FETCH, ge=0)
    MAX_VERIFY_CLAIMS: int = Field(default=MAX_VERIFY_CLAIMS, ge=0)
    CONCURRENCY: int = Field(default=CONCURRENCY, ge=1)
    early_quorum: bool = False
    speculative_verify: bool = True
    assume_web_tools: bool = False
    strict_fetch_cap: bool = False
    schema_retries: int = Field(default=2, ge=0)
    max_tokens: int | None = Field(default=None, gt=0)
    corpus_candidates: int = Field(default=8, ge=1)
    max_passage_chars: int = Field(default=2000, ge=200)
    snippet_chars: int = Field(default=240, ge=40)
    counter_passages: int = Field(default=2, ge=0)
    counter_chars: int = Field(default=600, ge=100)
    max_field_chars: int | None = Field(default=None, ge=40)
    small_model: bool = False
    rounds: int = Field(default=1, ge=1, le=3)
    followup_angles: int = Field(default=2, ge=1, le=6)
    followup_fetches: int = Field(default=3, ge=0, le=15)

    @classmethod
    def for_small_model(cls, **overrides: object) -> ResearchConfig:
        """Small-model mode (`small_model=True`) with caps that keep every prompt within a
        ~2k-token context and a run within ~30 short calls (e.g. a 270M local model): a hard
        cap of 5 fetches, 6 verified claims, early quorum, shorter passages and fields, no
        counter passage in a vote, one schema re-prompt (its backend enforces the schema
        natively). *overrides* win."""
        small: dict[str, object] = {
            "small_model": True,
            "rounds": 2,
            "early_quorum": True,
            "speculative_verify": False,  # the code's tie-break needs every claim first
            "strict_fetch_cap": True,
            "MAX_FETCH": 5,
            "MAX_VERIFY_CLAIMS": 6,
            "schema_retries": 1,
            "corpus_candidates": 5,
            "max_passage_chars": 900,
            "snippet_chars": 160,
            # a 270M voter does not tell answers from noise with or without another page's
            # passage beside the claim (AUC 0.49 with, 0.52 without, 28 real claims:
            # benchmarks/research_quality/vote_separation.py): the shorter prompt is faster
            "counter_passages": 0,
            "counter_chars": 400,
            "max_field_chars": 300,
            "max_tokens": 512,
        }
        return cls.model_validate(small | overrides)
