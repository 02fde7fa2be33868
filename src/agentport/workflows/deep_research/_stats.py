"""What one research run counts: the live tallies its calls update (`Tallies`, one typed
object the run, its phases and agentport's own web tools write to) and the frozen figures
the report's stats are written from (`CallStats`, `PhaseCounts`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...core import ProviderError, Usage

__all__ = ["CallStats", "PhaseCounts", "Tallies"]

Record = dict[str, Any]


@dataclass(slots=True)
class Tallies:
    """The counters of one run, updated while it runs (each a count of calls unless said):

    - `calls_made` (sent to the backend), `calls_cached` (replayed), `done` (answered,
      failed or replayed), `finished` (the same per phase label), `expected` (the progress
      estimate the events carry), `in_flight` / `max_in_flight` (calls running at once);
    - `web_searches`, `web_fetches` (searches and page fetches, the backend's own tools or
      agentport's), `web_calls_answered` (answered calls that were given web tools);
    - `budget_refused` (calls not made: the budget was reached);
    - small-model mode: `scored_votes` (votes the backend's likelihoods decided),
      `picks_scored` / `picks_moved` (picks scored; of those, where the model changed the
      code's first choice), `pick_calls` (scoring's calls beyond one a pick);
    - `usage` (tokens and cost of every call, failed ones too) and `failures` (phase label,
      error) in the order they happened.
    """

    calls_made: int = 0
    calls_cached: int = 0
    done: int = 0
    finished: Counter[str] = field(default_factory=Counter)
    expected: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    web_searches: int = 0
    web_fetches: int = 0
    web_calls_answered: int = 0
    budget_refused: int = 0
    scored_votes: int = 0
    picks_scored: int = 0
    picks_moved: int = 0
    pick_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    failures: list[tuple[str, ProviderError]] = field(default_factory=list)

    def snapshot(self) -> CallStats:
        """The figures the report's stats give, frozen now."""
        kinds = Counter(err.kind.value for _, err in self.failures)
        return CallStats(
            calls_made=self.calls_made,
            pick_calls=self.pick_calls,
            calls_cached=self.calls_cached,
            calls_failed=len(self.failures),
            failures_by_kind=tuple(sorted(kinds.items())),
            max_in_flight=self.max_in_flight,
            web_searches=self.web_searches,
            web_fetches=self.web_fetches,
            usage=self.usage,
        )


@dataclass(frozen=True, slots=True)
class CallStats:
    """agentport's measured figures of a run (see `Tallies` for each count)."""

    calls_made: int
    pick_calls: int
    calls_cached: int
    calls_failed: int
    failures_by_kind: tuple[tuple[str, int], ...]
    max_in_flight: int
    web_searches: int
    web_fetches: int
    usage: Usage

    def record(self, duration_s: float) -> Record:
        """The report's stats keys for these figures (`agentCallsMade`, ...); the key order
        is the report's."""
        usage = self.usage
        return {
            "agentCallsMade": self.calls_made,
            # of those, the calls scoring the extract and synthesis picks made beyond one a
            # pick (the reversed order, the content-free priors): not in the seed's formula
            "agentCallsScoringPicks": self.pick_calls,
            "agentCallsCached": self.calls_cached,
            "agentCallsFailed": self.calls_failed,
            "failuresByKind": dict(self.failures_by_kind),
            "maxInFlight": self.max_in_flight,
            "webSearches": self.web_searches,
            "webFetches": self.web_fetches,
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "cachedTokens": usage.cached_tokens,
            "costUsd": usage.cost_usd,
            # priced, lower_bound (some calls had no price) or unpriced; None: no call did
            "costState": None if usage.cost_state is None else usage.cost_state.value,
            "billingRoute": None if usage.billing_route is None else usage.billing_route.value,
            "durationS": round(duration_s, 3),
        }


@dataclass(frozen=True, slots=True)
class PhaseCounts:
    """What the phases produced, for the seed's stats: angles searched, sources fetched,
    claims extracted, the verified claims' outcomes, and what was set aside (duplicate
    URLs, fetch slots over the budget, quotes not in their source, claims over the verify
    cap, mirrors merged, votes skipped by early quorum)."""

    angles: int
    sources: int
    claims: int
    voted: int
    confirmed: int
    killed: int
    unverified: int
    dupes: int
    budget_dropped: int
    ungrounded: int
    not_verified: int
    mirrors: int
    votes_skipped: int
