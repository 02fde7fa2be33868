"""Hypothesis properties of the quorum and dedup core."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentport.workflows.deep_research import (
    Deduper,
    ResearchConfig,
    next_wave_size,
    norm_url,
    quorum_decided,
    rank_claims,
    sure_to_rank,
    tally,
)

# Per-test settings (a global profile would leak into other modules' tests).
fast = settings(max_examples=100, deadline=None)

R = 2  # REFUTATIONS_REQUIRED
V = 3  # VOTES_PER_CLAIM

vote = st.one_of(st.none(), st.builds(lambda r: {"refuted": r}, st.booleans()))
votes = st.lists(vote, min_size=0, max_size=7)


def _counts(vs: list[dict[str, bool] | None]) -> tuple[int, int]:
    valid = [v for v in vs if v is not None]
    return len(valid), sum(1 for v in valid if v["refuted"])


# ── tally ──


@fast
@given(votes, st.integers(1, 4))
def test_survives_iff_quorum_of_valid_votes_and_too_few_refutations(
    vs: list[dict[str, bool] | None], required: int
) -> None:
    valid, refuted = _counts(vs)
    t = tally(vs, len(vs), required)
    assert t["survives"] == (valid >= required and refuted < required)
    assert (t["outcome"] == "confirmed") == t["survives"]
    assert (t["outcome"] == "refuted") == (refuted >= required)


@fast
@given(votes, st.randoms(use_true_random=False))
def test_tally_is_invariant_under_vote_order(vs: list[dict[str, bool] | None], rnd: Any) -> None:
    shuffled = list(vs)
    rnd.shuffle(shuffled)
    a, b = tally(vs, len(vs), R), tally(shuffled, len(vs), R)
    assert (a["survives"], a["outcome"], a["refutedVotes"], a["abstained"]) == (
        b["survives"],
        b["outcome"],
        b["refutedVotes"],
        b["abstained"],
    )


@fast
@given(votes, st.integers(1, 5))
def test_abstentions_never_make_a_claim_survive(
    vs: list[dict[str, bool] | None], extra: int
) -> None:
    before = tally(vs, len(vs), R)
    after = tally([*vs, *[None] * extra], len(vs) + extra, R)
    assert after["survives"] == before["survives"]
    assert after["outcome"] == before["outcome"]


@fast
@given(votes)
def test_adding_a_refutation_never_turns_refuted_into_surviving(
    vs: list[dict[str, bool] | None],
) -> None:
    before = tally(vs, len(vs), R)
    after = tally([*vs, {"refuted": True}], len(vs) + 1, R)
    if before["outcome"] == "refuted":
        assert after["outcome"] == "refuted"
        assert not after["survives"]
    if after["survives"] and not before["survives"]:
        # only an unverified claim gains survival: the refutation supplied a missing valid vote
        assert before["outcome"] == "unverified"


@fast
@given(votes)
def test_an_unverified_claim_is_never_reported_refuted(vs: list[dict[str, bool] | None]) -> None:
    valid, refuted = _counts(vs)
    t = tally(vs, len(vs), R)
    if valid < R and refuted < R:
        assert t["outcome"] == "unverified"


# ── early quorum ──


@fast
@given(st.lists(vote, min_size=V, max_size=V))
def test_early_quorum_reaches_the_same_outcome_as_full_voting(
    full: list[dict[str, bool] | None],
) -> None:
    cast: list[dict[str, bool] | None] = []
    while wave := next_wave_size(cast, V, R):
        cast += full[len(cast) : len(cast) + wave]
    assert tally(cast, V, R)["outcome"] == tally(full, V, R)["outcome"]
    assert len(cast) <= V


@fast
@given(st.lists(vote, min_size=0, max_size=V))
def test_a_decided_quorum_stays_decided_whatever_comes_next(
    cast: list[dict[str, bool] | None],
) -> None:
    if quorum_decided(cast, V, R):
        outcome = tally(cast, V, R)["outcome"]
        for rest in ([None], [{"refuted": True}], [{"refuted": False}]):
            padded = (cast + rest * V)[:V]
            assert tally(padded, V, R)["outcome"] == outcome


# ── Deduper ──

hosts = st.sampled_from(["a.com", "www.a.com", "B.org", "c.net", "www.c.net"])
paths = st.sampled_from(["", "/", "/x", "/x/", "/X", "/y/z", "/y/z/"])
queries = st.sampled_from(["", "?id=1", "?id=2", "#frag"])
urls = st.builds(
    lambda s, h, p, q: f"{s}://{h}{p}{q}", st.sampled_from(["http", "https"]), hosts, paths, queries
)
results = st.lists(
    st.fixed_dictionaries(
        {
            "url": urls,
            "title": st.just("t"),
            "relevance": st.sampled_from(["high", "medium", "low"]),
        }
    ),
    max_size=8,
)
angles = st.lists(results, min_size=1, max_size=6)


@fast
@given(angles, st.integers(0, 6), st.booleans())
def test_every_result_lands_in_exactly_one_bucket(
    per_angle: list[list[dict[str, str]]], budget: int, strict: bool
) -> None:
    d = Deduper(ResearchConfig(MAX_FETCH=budget, strict_fetch_cap=strict))
    fetched: list[dict[str, Any]] = []
    for i, rs in enumerate(per_angle):
        fetched += d.filter_novel(f"a{i}", rs)
    total = sum(len(rs) for rs in per_angle)
    assert len(fetched) + len(d.dupes) + len(d.budget_dropped) == total


@fast
@given(angles, st.integers(0, 6))
def test_no_two_fetched_results_share_a_normalised_url(
    per_angle: list[list[dict[str, str]]], budget: int
) -> None:
    d = Deduper(ResearchConfig(MAX_FETCH=budget))
    fetched = [r for i, rs in enumerate(per_angle) for r in d.filter_novel(f"a{i}", rs)]
    keys = [norm_url(r["url"]) for r in fetched]
    assert len(keys) == len(set(keys))


@fast
@given(angles, st.integers(0, 6))
def test_fetches_exceed_the_budget_only_by_high_relevance_results(
    per_angle: list[list[dict[str, str]]], budget: int
) -> None:
    d = Deduper(ResearchConfig(MAX_FETCH=budget))
    fetched = [r for i, rs in enumerate(per_angle) for r in d.filter_novel(f"a{i}", rs)]
    over = fetched[budget:]
    assert all(r["relevance"] == "high" for r in over)
    assert all(r["relevance"] != "high" for r in d.budget_dropped)


@fast
@given(angles, st.integers(0, 6))
def test_strict_cap_never_exceeds_the_budget(
    per_angle: list[list[dict[str, str]]], budget: int
) -> None:
    d = Deduper(ResearchConfig(MAX_FETCH=budget, strict_fetch_cap=True))
    fetched = [r for i, rs in enumerate(per_angle) for r in d.filter_novel(f"a{i}", rs)]
    assert len(fetched) <= budget


# ── norm_url ──


@fast
@given(st.one_of(urls, st.text(max_size=40)))
def test_norm_url_is_idempotent(u: str) -> None:
    assert norm_url(norm_url(u)) == norm_url(u)


@fast
@given(urls)
def test_norm_url_ignores_scheme_www_case_and_trailing_slash(u: str) -> None:
    variant = u.replace("https://", "http://").upper() if "://" in u else u
    assert norm_url(variant) == norm_url(u)


# ── speculative verification ──

# Skewed towards the best key so ties (decided by position) are common.
claim_kind = st.fixed_dictionaries(
    {
        "importance": st.sampled_from(["central", "central", "central", "tangential"]),
        "sourceQuality": st.sampled_from(["primary", "primary", "primary", "blog"]),
        "grounded": st.sampled_from([True, None, None, False]),
    }
)
fetch_state = st.one_of(st.none(), st.lists(claim_kind, max_size=5))  # None = still pending
angle_state = st.one_of(st.none(), st.lists(fetch_state, max_size=6))  # None = search pending


@fast
@given(
    st.lists(angle_state, min_size=1, max_size=5),
    st.lists(st.lists(st.lists(claim_kind, max_size=5), max_size=6), min_size=5, max_size=5),
    st.integers(0, 12),
)
def test_a_claim_sure_to_rank_is_in_the_final_top_k_whatever_comes_later(
    angles_: list[list[list[dict[str, Any]] | None] | None],
    futures: list[list[list[dict[str, Any]]]],
    k: int,
) -> None:
    known: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
    pending_fetches: list[tuple[int, int]] = []
    pending_searches: list[int] = []
    final: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
    for ai, fetches in enumerate(angles_):
        if fetches is None:
            pending_searches.append(ai)
            for slot, claims in enumerate(futures[ai]):
                final += [((ai, slot, ci), c) for ci, c in enumerate(claims)]
            continue
        for slot, claims in enumerate(fetches):
            if claims is None:
                pending_fetches.append((ai, slot))
                claims = futures[ai][slot] if slot < len(futures[ai]) else []
            else:
                known += [((ai, slot, ci), c) for ci, c in enumerate(claims)]
            final += [((ai, slot, ci), c) for ci, c in enumerate(claims)]
    sure = sure_to_rank(known, pending_fetches, pending_searches, k)
    top = rank_claims([{**c, "_pos": p} for p, c in sorted(final, key=lambda pc: pc[0])], k)
    assert len(top) == min(k, len(final))
    assert set(sure) <= {c["_pos"] for c in top}
