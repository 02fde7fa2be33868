"""`plan_research`: what a run may cost before it starts (the original has no estimate,
anthropics/claude-code#70433).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._config import ResearchConfig
from ._corpus import Corpus

__all__ = ["ResearchPlan", "plan_research"]

_MAX_ANGLES = 6  # Scope schema: 3..6 angles
_TYPICAL_ANGLES = 5  # the scope prompt asks for 5
_MAX_RESULTS = 6  # Search schema: at most 6 results per angle
_MAX_LISTED = 8  # small-model mode: the most sentences one pick lists
_MAX_CLAIMS_PER_SOURCE = 5  # Extract schema


@dataclass(frozen=True, slots=True)
class ResearchPlan:
    """Upper bound and typical number of agent calls, and the limits behind them.

    `upper_bound_calls` = 1 scope + 6 searches + max fetches + max claims x votes + 2
    synthesis (a degenerate answer is asked again once); `typical_calls` uses 5 angles,
    MAX_FETCH fetches and one synthesis (97 with the defaults, the original's worst case).
    Each call may make up to `schema_retries + 1` model requests.
    """

    mode: str
    max_angles: int
    max_fetches: int
    max_claims_verified: int
    votes_per_claim: int
    upper_bound_calls: int
    typical_calls: int
    requests_per_call: int
    concurrency: int
    early_quorum: bool
    strict_fetch_cap: bool
    followup: str = ""  # the follow-up round's bound, "" for the seed's single round

    def lines(self) -> list[str]:
        """Human-readable lines (the CLI's `--plan`)."""
        cap = "hard" if self.strict_fetch_cap else "soft: high-relevance results may exceed it"
        out = [
            f"mode: {self.mode}",
            f"agent calls: at most {self.upper_bound_calls} "
            f"(typical {self.typical_calls}); up to {self.requests_per_call} model "
            "request(s) per call with schema re-prompts",
            f"scope: 1 call -> 3..{self.max_angles} angles",
            f"search: 1 call per angle (<= {self.max_angles})",
            f"fetch+extract: <= {self.max_fetches} sources (MAX_FETCH cap {cap})",
            f"verify: <= {self.max_claims_verified} claims x {self.votes_per_claim} votes"
            + (" (early quorum: fewer when the outcome is settled)" if self.early_quorum else ""),
            "synthesis: 1 call (2 when the first answer is degenerate)",
            f"concurrency: {self.concurrency} agent calls in flight at most",
        ]
        if "small-model" in self.mode:
            out[2] = f"scope: 1 choice of sections -> 1..{self.max_angles} angles"
            out[3] = "search: BM25 per angle, no model call"
            out[6] = "synthesis: 1 choice of the best confirmed claims (retried once)"
        if self.followup:
            out.insert(5, self.followup)
        return out


def plan_research(
    config: ResearchConfig | None = None, *, corpus: Corpus | None = None
) -> ResearchPlan:
    """The plan of a run with *config* (web mode, or corpus mode over *corpus*)."""
    cfg = config or ResearchConfig()
    if cfg.small_model:
        return _small_plan(cfg, corpus)
    # a follow-up round (`rounds` > 1) adds its angles, and fetch slots on a strict cap
    extra_angles = (cfg.rounds - 1) * cfg.followup_angles
    fetch_ceiling = (_MAX_ANGLES + extra_angles) * _MAX_RESULTS
    if corpus is not None:
        fetch_ceiling = min(fetch_ceiling, len(corpus.passages))
    cap = cfg.MAX_FETCH + (cfg.rounds - 1) * cfg.followup_fetches
    max_fetches = min(cap, fetch_ceiling) if cfg.strict_fetch_cap else fetch_ceiling
    max_claims = min(cfg.MAX_VERIFY_CLAIMS, max_fetches * _MAX_CLAIMS_PER_SOURCE)
    typical_fetches = min(cfg.MAX_FETCH, max_fetches)
    typical_claims = min(cfg.MAX_VERIFY_CLAIMS, typical_fetches * _MAX_CLAIMS_PER_SOURCE)
    return ResearchPlan(
        mode="web" if corpus is None else "corpus",
        max_angles=_MAX_ANGLES + extra_angles,
        max_fetches=max_fetches,
        max_claims_verified=max_claims,
        votes_per_claim=cfg.VOTES_PER_CLAIM,
        upper_bound_calls=1
        + _MAX_ANGLES
        + extra_angles
        + max_fetches
        + max_claims * cfg.VOTES_PER_CLAIM
        + 2,
        typical_calls=(
            1 + _TYPICAL_ANGLES + typical_fetches + typical_claims * cfg.VOTES_PER_CLAIM + 1
        ),
        requests_per_call=cfg.schema_retries + 1,
        concurrency=cfg.CONCURRENCY,
        early_quorum=cfg.early_quorum,
        strict_fetch_cap=cfg.strict_fetch_cap,
        followup=_followup_line(cfg),
    )


def _small_plan(cfg: ResearchConfig, corpus: Corpus | None) -> ResearchPlan:
    # Small-model mode: scope is one choice (at most 2 section angles besides the code's
    # 2), search makes no call, the fetch cap is hard, synthesis is a choice retried once;
    # scored votes add one content-free vote per answer order (their calibration).
    priors = min(2, cfg.VOTES_PER_CLAIM)
    cap = cfg.MAX_FETCH + (cfg.rounds - 1) * cfg.followup_fetches  # the follow-up's slots
    fetches = cap if corpus is None else min(cap, len(corpus.passages))
    claims = min(cfg.MAX_VERIFY_CLAIMS, fetches * 3)
    return ResearchPlan(
        mode=("corpus" if corpus is not None else "web")
        + " (small-model mode: every call is a choice)",
        max_angles=4 + (cfg.rounds - 1) * cfg.followup_angles,
        max_fetches=fetches,
        max_claims_verified=claims,
        votes_per_claim=cfg.VOTES_PER_CLAIM,
        # + scored picks on a model that reports likelihoods: each extract pick and the
        # synthesis asked in a second order, and a content-free prior per phase and list
        # length (at most 8 listed)
        upper_bound_calls=1
        + fetches
        + claims * cfg.VOTES_PER_CLAIM
        + priors
        + 2
        + (fetches + 1)
        + 2 * _MAX_LISTED,
        typical_calls=1 + fetches + claims * min(2, cfg.VOTES_PER_CLAIM) + priors + 1,
        requests_per_call=cfg.schema_retries + 1,
        concurrency=cfg.CONCURRENCY,
        early_quorum=cfg.early_quorum,
        strict_fetch_cap=True,
        followup=_followup_line(cfg),
    )


def _followup_line(cfg: ResearchConfig) -> str:
    if cfg.rounds <= 1:
        return ""
    return (
        f"follow-up: {cfg.rounds - 1} round(s) of <= {cfg.followup_angles} angles and "
        f"{cfg.followup_fetches} more fetches, for what the findings name but do not answer "
        "(counted above; --rounds 1 is the seed's single round)"
    )
