"""The deterministic core: URL normalisation, dedup with a fetch budget, claim ranking, the
quorum tally, synthesis blocks and stats. Pure functions, no I/O, no model.

Ported 1:1 from Claude Code's deep-research workflow (dedup, fetch budget, ranking, tally,
stats) with its three outcomes per claim (survives when valid >= 2 and refuted < 2; refuted
when refuted >= 2; else unverified), plus agentport's `early_quorum` decision.

Records are plain dicts with the original's camelCase keys (`sourceUrl`, `sourceQuality`,
`refutedVotes`, `valid`, `survives`), as in the seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlparse

from ._config import ResearchConfig

__all__ = [
    "CONF_RANK",
    "IMP_RANK",
    "QUAL_RANK",
    "REL_RANK",
    "Deduper",
    "Outcome",
    "build_stats",
    "build_synth_blocks",
    "build_unverified_block",
    "claim_key",
    "host_of",
    "next_wave_size",
    "norm_url",
    "outcome_of",
    "quorum_decided",
    "rank_claims",
    "sure_to_rank",
    "tally",
    "vote_str",
]

Record = dict[str, Any]
Outcome = Literal["confirmed", "refuted", "unverified"]

REL_RANK = {"high": 0, "medium": 1, "low": 2}
IMP_RANK = {"central": 0, "supporting": 1, "tangential": 2}
QUAL_RANK = {"primary": 0, "secondary": 1, "blog": 2, "forum": 3, "unreliable": 4}
CONF_RANK = {"high": 0, "medium": 1, "low": 2}


def norm_url(u: str) -> str:
    """Dedup key: lower-cased host without `www.`, port and userinfo, plus the path without
    its trailing slash; scheme, query and fragment dropped. A string without a host is just
    lower-cased. Idempotent."""
    try:
        p = urlparse(u)
        host = p.hostname or ""
    except ValueError:
        return u.lower()
    if not host:
        return u.lower()
    if host.startswith("www."):
        host = host[4:]
    return (host + (p.path or "").rstrip("/")).lower()


def host_of(u: str) -> str:
    """The host without `www.`, or "unknown"."""
    try:
        h = urlparse(u).hostname or "unknown"
    except ValueError:
        return "unknown"
    return h[4:] if h.startswith("www.") else h


class Deduper:
    """Dedup + fetch budget of the original's search->fetch stage. Deterministic in call order.

    `filter_novel(angle, results)` sorts one angle's results high->medium->low and returns the
    ones to fetch. Every input lands in exactly one of: the returned list, `dupes` (its
    normalised URL was seen; `dupOf` names the owner), `budget_dropped` (no slot left and
    relevance medium/low). High-relevance results pass even with no slot left, driving
    `fetch_slots` negative (the original's soft cap) unless `config.strict_fetch_cap`.
    The strict cap answers anthropics/claude-code#69213.
    """

    def __init__(self, config: ResearchConfig) -> None:
        self.seen: dict[str, Record] = {}
        self.dupes: list[Record] = []
        self.budget_dropped: list[Record] = []
        self.fetch_slots: int = config.MAX_FETCH
        self.strict = config.strict_fetch_cap

    def filter_novel(self, angle: str, results: Iterable[Mapping[str, Any]]) -> list[Record]:
        ordered = sorted(results, key=lambda r: REL_RANK[r["relevance"]])
        novel: list[Record] = []
        for r in ordered:
            key = norm_url(r["url"])
            if key in self.seen:
                self.dupes.append({**r, "angle": angle, "dupOf": self.seen[key]})
                continue
            floor = 0 if self.strict else 1
            if self.fetch_slots <= 0 and REL_RANK[r["relevance"]] >= floor:
                self.budget_dropped.append({**r, "angle": angle})
                continue
            self.seen[key] = {"angle": angle, "title": r["title"]}
            self.fetch_slots -= 1
            novel.append(dict(r))
        return novel


def rank_claims(claims: Sequence[Mapping[str, Any]], max_verify: int) -> list[Record]:
    """Stable sort by importance, then source quality; keep the first *max_verify*.

    Claims whose quote was not found in their source (`grounded` is False, corpus mode) sort
    after every grounded claim (grounding is agentport's).
    """
    ranked = sorted(claims, key=claim_key)
    return [dict(c) for c in ranked[:max_verify]]


ClaimPos = tuple[int, int, int]  # (angle index, source slot, claim index): the flatten order
_BEST = (False, 0, 0)


def claim_key(c: Mapping[str, Any]) -> tuple[bool, int, int]:
    """The rank of a claim before ties: (ungrounded, importance, source quality)."""
    return (c.get("grounded") is False, IMP_RANK[c["importance"]], QUAL_RANK[c["sourceQuality"]])


def sure_to_rank(
    known: Sequence[tuple[ClaimPos, Mapping[str, Any]]],
    pending_fetches: Iterable[tuple[int, int]],
    pending_searches: Iterable[int],
    max_verify: int,
    *,
    claims_per_source: int = 5,
    results_per_search: int = 6,
) -> list[ClaimPos]:
    """The known claims certain to be among `rank_claims(all, max_verify)` whatever the
    pending fetches (at most *claims_per_source* claims each) and pending searches (at most
    *results_per_search* fetches each) still add. Lets verification of those claims start
    before the barrier with the same result. A future claim can only outrank a best-key
    claim (grounded, central, primary) by tying from an earlier position.
    """
    fetches = list(pending_fetches)
    searches = list(pending_searches)
    order = sorted(known, key=lambda kc: (claim_key(kc[1]), kc[0]))
    sure: list[ClaimPos] = []
    for ahead, (pos, claim) in enumerate(order):
        best = claim_key(claim) == _BEST
        potential = sum(
            claims_per_source for f in fetches if not best or f < (pos[0], pos[1])
        ) + sum(claims_per_source * results_per_search for a in searches if not best or a < pos[0])
        if ahead + potential < max_verify:
            sure.append(pos)
    return sure


def outcome_of(valid: int, refuted: int, refutations_required: int) -> Outcome:
    """confirmed iff valid >= R and refuted < R; refuted iff refuted >= R; else unverified."""
    if refuted >= refutations_required:
        return "refuted"
    if valid >= refutations_required:
        return "confirmed"
    return "unverified"


def tally(
    verdicts: Sequence[Mapping[str, Any] | None], votes_per_claim: int, refutations_required: int
) -> Record:
    """The quorum count of one claim's votes; None is an abstention (a failed voter).

    Returns `valid` (the non-None votes), `refutedVotes`, `abstained` (None votes),
    `skipped` (votes never cast, early quorum), `survives` (valid >= R and refuted < R, the
    original's rule) and `outcome` (confirmed / refuted / unverified).
    """
    valid = [dict(v) for v in verdicts if v is not None]
    refuted = sum(1 for v in valid if v["refuted"])
    survives = len(valid) >= refutations_required and refuted < refutations_required
    return {
        "valid": valid,
        "refutedVotes": refuted,
        "abstained": sum(1 for v in verdicts if v is None),
        "skipped": max(0, votes_per_claim - len(verdicts)),
        "survives": survives,
        "outcome": outcome_of(len(valid), refuted, refutations_required),
    }


def quorum_decided(
    verdicts: Sequence[Mapping[str, Any] | None], votes_per_claim: int, refutations_required: int
) -> bool:
    """True when no outcome of the votes not yet cast (each a refutation, a pass or an
    abstention) can change the claim's outcome: the `early_quorum` stopping rule."""
    remaining = votes_per_claim - len(verdicts)
    valid = sum(1 for v in verdicts if v is not None)
    refuted = sum(1 for v in verdicts if v is not None and v["refuted"])
    outcomes = {
        outcome_of(valid + r + p, refuted + r, refutations_required)
        for r in range(remaining + 1)
        for p in range(remaining - r + 1)
    }
    return len(outcomes) == 1


def next_wave_size(
    verdicts: Sequence[Mapping[str, Any] | None], votes_per_claim: int, refutations_required: int
) -> int:
    """How many more votes to launch together under `early_quorum`: the fewest that could
    decide the outcome (2 at the start with 3 votes and 2 refutations required, then 1);
    0 when the outcome is already decided or every vote was cast."""
    remaining = votes_per_claim - len(verdicts)
    if remaining <= 0 or quorum_decided(verdicts, votes_per_claim, refutations_required):
        return 0
    refute, keep = {"refuted": True}, {"refuted": False}
    for k in range(1, remaining):
        for r in range(k + 1):
            for p in range(k - r + 1):
                maybe = [*verdicts, *[refute] * r, *[keep] * p, *[None] * (k - r - p)]
                if quorum_decided(maybe, votes_per_claim, refutations_required):
                    return k
    return remaining


def vote_str(c: Mapping[str, Any]) -> str:
    """ "passes-refutations", e.g. "2-1"."""
    return str(len(c["valid"]) - c["refutedVotes"]) + "-" + str(c["refutedVotes"])


def _cap(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def build_synth_blocks(
    confirmed: Sequence[Mapping[str, Any]],
    killed: Sequence[Mapping[str, Any]],
    *,
    max_field_chars: int | None = None,
) -> tuple[str, str]:
    """The synthesis prompt's `block` (confirmed claims with vote, source, quote and the
    evidence of the most confident passing vote) and `killedBlock` (refuted claims, "" when
    none). *max_field_chars* caps claim/quote/evidence (small contexts)."""
    parts = []
    for i, c in enumerate(confirmed):
        non_refuted = [v for v in c["valid"] if not v["refuted"]]
        best = sorted(non_refuted, key=lambda v: CONF_RANK[v["confidence"]])[0]
        parts.append(
            "### [" + str(i) + "] " + _cap(c["claim"], max_field_chars) + "\n"
            "Vote: "
            + vote_str(c)
            + " · Source: "
            + c["sourceUrl"]
            + " ("
            + c["sourceQuality"]
            + ")\n"
            'Quote: "'
            + _cap(c["quote"], max_field_chars)
            + '"\nVerifier evidence ('
            + best["confidence"]
            + "): "
            + _cap(best["evidence"], max_field_chars)
            + "\n"
        )
    block = "\n".join(parts)
    if killed:
        killed_block = "\n## Refuted claims (for transparency)\n" + "\n".join(
            '- "'
            + _cap(c["claim"], max_field_chars)
            + '" ('
            + c["sourceUrl"]
            + ", vote "
            + vote_str(c)
            + ")"
            for c in killed
        )
    else:
        killed_block = ""
    return block, killed_block


def build_unverified_block(
    unverified: Sequence[Mapping[str, Any]], *, max_field_chars: int | None = None
) -> str:
    """Claims without a quorum of valid votes, for the synthesis caveats ("" when none).
    Newer copies of the original workflow list unverified claims there too."""
    if not unverified:
        return ""
    return "\n## Unverified claims (too few verifier votes; mention them in caveats)\n" + "\n".join(
        '- "'
        + _cap(c["claim"], max_field_chars)
        + '" ('
        + c["sourceUrl"]
        + ", "
        + str(len(c["valid"]))
        + " valid vote(s))"
        for c in unverified
    )


def build_stats(
    *,
    angles: int,
    sources: int,
    claims: int,
    voted: int,
    confirmed: int,
    killed: int,
    after_synth: int,
    dupes: int,
    budget_dropped: int,
    votes_per_claim: int,
    unverified: int = 0,
) -> Record:
    """The original's stats. `agentCalls` = 1 + angles + sources + voted x votes + 1 (the
    original's formula: an upper bound when early quorum skips votes or calls fail; the
    measured count is `agentCallsMade`, added by the pipeline)."""
    return {
        "angles": angles,
        "sourcesFetched": sources,
        "claimsExtracted": claims,
        "claimsVerified": voted,
        "confirmed": confirmed,
        "killed": killed,
        "unverified": unverified,
        "afterSynthesis": after_synth,
        "urlDupes": dupes,
        "budgetDropped": budget_dropped,
        "agentCalls": 1 + angles + sources + (voted * votes_per_claim) + 1,
    }
