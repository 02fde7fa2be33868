"""The seed's core tests (deep-research-port-plan.md Tasks 2-6), ported, plus the additions:
three outcomes, early-quorum decisions, grounding in ranking, strict fetch cap, schemas on
the wire, verbatim prompts."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

import agentport.workflows.deep_research as dr
from _helpers import TESTS
from agentport.workflows.deep_research import (
    Angle,
    Deduper,
    Extract,
    ResearchConfig,
    Scope,
    SearchResult,
    Verdict,
    build_stats,
    build_synth_blocks,
    build_unverified_block,
    next_wave_size,
    norm_url,
    quorum_decided,
    rank_claims,
    tally,
)

FIXTURES = TESTS / "fixtures" / "deep_research"


# ── Task 2: schemas ──


def test_scope_requires_min_3_angles() -> None:
    with pytest.raises(ValidationError):
        Scope(question="q", summary="s", angles=[Angle(label="a", query="x")])


def test_scope_accepts_5_angles() -> None:
    angles = [Angle(label=f"a{i}", query="x") for i in range(5)]
    s = Scope(question="q", summary="s", angles=angles)
    assert len(s.angles) == 5


def test_scope_rejects_7_angles() -> None:
    with pytest.raises(ValidationError):
        Scope(question="q", summary="s", angles=[Angle(label="a", query="x")] * 7)


def test_search_relevance_enum_enforced() -> None:
    with pytest.raises(ValidationError):
        SearchResult(url="http://a", title="t", relevance="bogus")  # type: ignore[arg-type]


def test_json_schema_export_works() -> None:
    schema = Scope.model_json_schema()
    assert "angles" in schema["properties"]


def test_wire_fields_are_camel_case_in_schema_and_dump() -> None:
    schema = Extract.model_json_schema()
    assert {"sourceQuality", "publishDate", "claims"} <= set(schema["properties"])
    assert "source_quality" not in schema["properties"]
    e = Extract.model_validate({"sourceQuality": "blog", "publishDate": "2024", "claims": []})
    assert e.model_dump() == {"sourceQuality": "blog", "publishDate": "2024", "claims": []}
    v = Verdict.model_validate(
        {"refuted": True, "evidence": "e", "confidence": "low", "counterSource": "u"}
    )
    assert v.model_dump()["counterSource"] == "u"


def test_extract_rejects_more_than_5_claims() -> None:
    claim = {"claim": "c", "quote": "q", "importance": "central"}
    with pytest.raises(ValidationError):
        Extract.model_validate({"sourceQuality": "primary", "claims": [claim] * 6})


# ── Task 3: prompts are the seed's strings, verbatim ──


def test_prompts_match_the_seed_verbatim() -> None:
    seed = json.loads((FIXTURES / "seed_prompts.json").read_text(encoding="utf-8"))
    q = "Does X reduce Y in adults?"
    claim = {
        "claim": "X cuts Y by 10%",
        "sourceUrl": "https://a.org/p",
        "sourceQuality": "primary",
        "quote": "a 10% cut",
    }
    assert dr.scope_prompt(q) == seed["scope"]
    angle = Angle(label="contrarian", query="X Y criticism", rationale="find dissent")
    assert dr.search_prompt(q, angle) == seed["search"]
    assert dr.search_prompt(q, Angle(label="broad", query="X Y")) == seed["search_no_rationale"]
    source = {"url": "https://a.org/p", "title": "A study"}
    assert dr.fetch_prompt(q, source, "broad") == seed["fetch"]
    assert dr.verify_prompt(q, claim, 1, 3, 2) == seed["verify"]
    killed = '\n## Refuted claims (for transparency)\n- "z"'
    assert dr.synth_prompt(q, "### [0] c\n", killed, 4, 3) == seed["synth"]


# ── Task 4: norm_url, Deduper ──


def test_norm_url_strips_www_and_trailing_slash() -> None:
    assert norm_url("http://www.Example.com/Path/") == "example.com/path"


def test_norm_url_bare_host() -> None:
    assert norm_url("https://example.com") == "example.com"


def test_norm_url_fallback_on_garbage() -> None:
    assert norm_url("not a url") == "not a url"


def test_norm_url_drops_query_port_and_userinfo_like_the_original() -> None:
    assert norm_url("https://user@www.a.com:8443/x?id=1#f") == "a.com/x"
    assert norm_url("https://a.com/x?id=2") == norm_url("https://a.com/x?id=1")


def test_norm_url_survives_invalid_ipv6_netloc() -> None:
    assert norm_url("http://[::1/x") == "http://[::1/x"
    assert dr.host_of("http://[::1/x") == "unknown"


def test_host_of_strips_www() -> None:
    assert dr.host_of("https://www.nature.com/a") == "nature.com"
    assert dr.host_of("garbage") == "unknown"


def test_deduper_filters_exact_dupes() -> None:
    d = Deduper(ResearchConfig(MAX_FETCH=15))
    r = [{"url": "http://a.com/x", "title": "t", "relevance": "high"}]
    assert len(d.filter_novel("angle1", r)) == 1
    # same normalized url from another angle -> dup
    r2 = [{"url": "http://www.a.com/x/", "title": "t2", "relevance": "high"}]
    assert d.filter_novel("angle2", r2) == []
    assert len(d.dupes) == 1
    assert d.dupes[0]["dupOf"] == {"angle": "angle1", "title": "t"}


def test_deduper_budget_drops_medium_low_when_slots_exhausted() -> None:
    d = Deduper(ResearchConfig(MAX_FETCH=1))
    first = [{"url": "http://a.com/1", "title": "t", "relevance": "high"}]
    d.filter_novel("a1", first)  # consumes the only slot
    more = [
        {"url": "http://b.com/2", "title": "t", "relevance": "medium"},
        {"url": "http://c.com/3", "title": "t", "relevance": "low"},
    ]
    assert d.filter_novel("a2", more) == []
    assert len(d.budget_dropped) == 2


def test_deduper_high_passes_even_when_slots_exhausted() -> None:
    # the original: high (rank 0) escapes the budget test (rank >= 1), slots go negative
    d = Deduper(ResearchConfig(MAX_FETCH=1))
    d.filter_novel("a1", [{"url": "http://a.com/1", "title": "t", "relevance": "high"}])
    high = [{"url": "http://d.com/4", "title": "t", "relevance": "high"}]
    assert len(d.filter_novel("a2", high)) == 1
    assert d.fetch_slots == -1


def test_strict_fetch_cap_drops_high_relevance_too() -> None:
    d = Deduper(ResearchConfig(MAX_FETCH=1, strict_fetch_cap=True))
    d.filter_novel("a1", [{"url": "http://a.com/1", "title": "t", "relevance": "high"}])
    assert (
        d.filter_novel("a2", [{"url": "http://d.com/4", "title": "t", "relevance": "high"}]) == []
    )
    assert d.fetch_slots == 0


def test_deduper_sorts_each_angle_high_first_so_low_is_dropped_not_high() -> None:
    d = Deduper(ResearchConfig(MAX_FETCH=1))
    out = d.filter_novel(
        "a",
        [
            {"url": "http://low.com", "title": "t", "relevance": "low"},
            {"url": "http://high.com", "title": "t", "relevance": "high"},
        ],
    )
    assert [r["url"] for r in out] == ["http://high.com"]
    assert [r["url"] for r in d.budget_dropped] == ["http://low.com"]


# ── Task 5: rank_claims, tally ──


def _claim(imp: str, qual: str, name: str = "c", **extra: object) -> dict[str, object]:
    return {"claim": name, "importance": imp, "sourceQuality": qual, **extra}


def test_rank_claims_orders_by_importance_then_quality() -> None:
    claims = [
        _claim("tangential", "primary", "t-prim"),
        _claim("central", "blog", "c-blog"),
        _claim("central", "primary", "c-prim"),
    ]
    ranked = rank_claims(claims, max_verify=25)
    assert [c["claim"] for c in ranked] == ["c-prim", "c-blog", "t-prim"]


def test_rank_claims_truncates_to_max() -> None:
    claims = [_claim("central", "primary", f"c{i}") for i in range(30)]
    assert len(rank_claims(claims, max_verify=25)) == 25


def test_rank_claims_is_stable_for_ties() -> None:
    claims = [_claim("central", "primary", f"c{i}") for i in range(5)]
    assert [c["claim"] for c in rank_claims(claims, 5)] == [f"c{i}" for i in range(5)]


def test_ungrounded_quote_ranks_after_every_grounded_claim() -> None:
    claims = [
        _claim("central", "primary", "made-up", grounded=False),
        _claim("tangential", "unreliable", "weak-but-real", grounded=True),
        _claim("supporting", "blog", "web", grounded=None),
    ]
    assert [c["claim"] for c in rank_claims(claims, 3)] == ["web", "weak-but-real", "made-up"]


def test_tally_survives_2_valid_0_refute() -> None:
    v = [{"refuted": False}, {"refuted": False}, {"refuted": False}]
    t = tally(v, votes_per_claim=3, refutations_required=2)
    assert t["survives"] is True
    assert t["refutedVotes"] == 0
    assert t["outcome"] == "confirmed"


def test_tally_killed_2_refute() -> None:
    v = [{"refuted": True}, {"refuted": True}, {"refuted": False}]
    t = tally(v, votes_per_claim=3, refutations_required=2)
    assert t["survives"] is False
    assert t["refutedVotes"] == 2
    assert t["outcome"] == "refuted"


def test_tally_all_abstain_does_not_survive() -> None:
    # no false survival: all-None -> refuted=0 but valid < 2
    t = tally([None, None, None], votes_per_claim=3, refutations_required=2)
    assert t["survives"] is False
    assert t["abstained"] == 3


def test_tally_one_valid_two_abstain_does_not_survive() -> None:
    t = tally([{"refuted": False}, None, None], votes_per_claim=3, refutations_required=2)
    assert t["survives"] is False  # valid(1) < 2


def test_abstained_claim_is_unverified_never_refuted() -> None:
    for votes in ([None, None, None], [{"refuted": True}, None, None], [{"refuted": False}, None]):
        assert tally(votes, 3, 2)["outcome"] == "unverified"


def test_split_vote_with_one_refutation_still_survives() -> None:
    t = tally([{"refuted": False}, {"refuted": True}, {"refuted": False}], 3, 2)
    assert t["outcome"] == "confirmed"


def test_tally_counts_votes_never_cast_as_skipped_not_abstained() -> None:
    t = tally([{"refuted": True}, {"refuted": True}], 3, 2)
    assert (t["abstained"], t["skipped"], t["outcome"]) == (0, 1, "refuted")


# ── early quorum ──


def test_two_agreeing_votes_settle_a_three_vote_claim() -> None:
    assert quorum_decided([{"refuted": True}, {"refuted": True}], 3, 2)
    assert quorum_decided([{"refuted": False}, {"refuted": False}], 3, 2)


def test_split_or_abstained_votes_do_not_settle() -> None:
    assert not quorum_decided([{"refuted": True}, {"refuted": False}], 3, 2)
    assert not quorum_decided([{"refuted": False}, None], 3, 2)
    assert not quorum_decided([], 3, 2)


def test_first_wave_is_two_votes_then_one() -> None:
    assert next_wave_size([], 3, 2) == 2
    assert next_wave_size([{"refuted": True}, {"refuted": False}], 3, 2) == 1
    assert next_wave_size([{"refuted": True}, {"refuted": True}], 3, 2) == 0
    assert next_wave_size([None, None, None], 3, 2) == 0


# ── Task 6: synthesis blocks, stats ──


def test_build_synth_blocks_includes_vote_and_source() -> None:
    confirmed = [
        {
            "claim": "X causes Y",
            "quote": "q",
            "sourceUrl": "http://a",
            "sourceQuality": "primary",
            "valid": [{"refuted": False, "confidence": "high", "evidence": "e"}],
            "refutedVotes": 0,
        }
    ]
    killed = [
        {"claim": "Z", "sourceUrl": "http://b", "valid": [{"refuted": True}], "refutedVotes": 1}
    ]
    block, killed_block = build_synth_blocks(confirmed, killed)
    assert "X causes Y" in block
    assert "1-0" in block
    assert "Refuted claims" in killed_block
    assert "Z" in killed_block


def test_build_synth_blocks_no_killed() -> None:
    block, killed_block = build_synth_blocks(
        [
            {
                "claim": "X",
                "quote": "q",
                "sourceUrl": "http://a",
                "sourceQuality": "primary",
                "valid": [{"refuted": False, "confidence": "high", "evidence": "e"}],
                "refutedVotes": 0,
            }
        ],
        [],
    )
    assert "### [0] X" in block
    assert killed_block == ""


def test_synth_block_quotes_the_most_confident_passing_vote() -> None:
    c = {
        "claim": "X",
        "quote": "q",
        "sourceUrl": "http://a",
        "sourceQuality": "primary",
        "valid": [
            {"refuted": False, "confidence": "low", "evidence": "weak"},
            {"refuted": True, "confidence": "high", "evidence": "refuter"},
            {"refuted": False, "confidence": "medium", "evidence": "better"},
        ],
        "refutedVotes": 1,
    }
    block, _ = build_synth_blocks([c], [])
    assert "Verifier evidence (medium): better" in block
    assert "Vote: 2-1" in block


def test_synth_block_caps_long_fields_for_small_contexts() -> None:
    c = {
        "claim": "C" * 500,
        "quote": "Q" * 500,
        "sourceUrl": "http://a",
        "sourceQuality": "primary",
        "valid": [{"refuted": False, "confidence": "high", "evidence": "E" * 500}],
        "refutedVotes": 0,
    }
    block, _ = build_synth_blocks([c], [], max_field_chars=50)
    assert "C" * 51 not in block
    assert "Q" * 51 not in block
    assert "E" * 51 not in block


def test_unverified_block_lists_claims_for_caveats() -> None:
    assert build_unverified_block([]) == ""
    text = build_unverified_block([{"claim": "U", "sourceUrl": "http://u", "valid": []}])
    assert "Unverified" in text
    assert '"U"' in text


def test_build_stats_agent_calls_formula() -> None:
    s = build_stats(
        angles=5, sources=12, claims=20, voted=18, confirmed=10, killed=8,
        after_synth=6, dupes=3, budget_dropped=2, votes_per_claim=3,
    )  # fmt: skip
    # 1 + angles + sources + voted*votes_per_claim + 1
    assert s["agentCalls"] == 1 + 5 + 12 + 18 * 3 + 1
    assert s["confirmed"] == 10
    assert s["afterSynthesis"] == 6


def test_worst_case_agent_calls_is_97_with_default_constants() -> None:
    cfg = ResearchConfig()
    s = build_stats(
        angles=5, sources=cfg.MAX_FETCH, claims=40, voted=cfg.MAX_VERIFY_CLAIMS, confirmed=0,
        killed=0, after_synth=0, dupes=0, budget_dropped=0, votes_per_claim=cfg.VOTES_PER_CLAIM,
    )  # fmt: skip
    assert s["agentCalls"] == 97


# ── constants and plan ──


def test_default_constants_match_the_original() -> None:
    cfg = ResearchConfig()
    assert (cfg.VOTES_PER_CLAIM, cfg.REFUTATIONS_REQUIRED, cfg.MAX_FETCH) == (3, 2, 15)
    assert (cfg.MAX_VERIFY_CLAIMS, cfg.CONCURRENCY) == (25, 10)
    assert cfg.early_quorum is False
    assert cfg.strict_fetch_cap is False


def test_plan_upper_bound_counts_the_soft_fetch_cap() -> None:
    soft = dr.plan_research(ResearchConfig())
    strict = dr.plan_research(ResearchConfig(strict_fetch_cap=True))
    assert soft.typical_calls == 97
    assert strict.upper_bound_calls == 1 + 6 + 15 + 25 * 3 + 2  # synthesis asked twice
    assert soft.upper_bound_calls == 1 + 6 + 36 + 25 * 3 + 2
    assert any("soft" in line for line in soft.lines())


def test_small_model_preset_keeps_overrides() -> None:
    cfg = ResearchConfig.for_small_model(early_quorum=True)
    assert cfg.early_quorum is True
    assert cfg.max_passage_chars < ResearchConfig().max_passage_chars
    assert cfg.max_field_chars is not None


def test_public_names_are_exported() -> None:
    assert set(dr.__all__) <= set(dir(dr))
    for name in ("run_research", "ResearchConfig", "Deduper", "tally", "to_markdown"):
        assert name in dr.__all__


# ── speculative verification: which claims are sure to rank ──

BEST = {"importance": "central", "sourceQuality": "primary"}
WEAK = {"importance": "tangential", "sourceQuality": "blog"}


def test_a_best_claim_is_sure_when_nothing_pending_can_tie_ahead_of_it() -> None:
    assert dr.sure_to_rank([((0, 0, 0), BEST)], [(1, 0)], [2], 1) == [(0, 0, 0)]


def test_an_earlier_pending_fetch_can_push_a_best_claim_out() -> None:
    assert dr.sure_to_rank([((0, 1, 0), BEST)], [(0, 0)], [], 5) == []
    assert dr.sure_to_rank([((0, 1, 0), BEST)], [(0, 0)], [], 6) == [(0, 1, 0)]


def test_an_earlier_pending_search_can_push_a_best_claim_out() -> None:
    assert dr.sure_to_rank([((1, 0, 0), BEST)], [], [0], 30) == []
    assert dr.sure_to_rank([((1, 0, 0), BEST)], [], [0], 31) == [(1, 0, 0)]


def test_a_weaker_claim_is_outranked_by_any_pending_fetch() -> None:
    assert dr.sure_to_rank([((0, 0, 0), WEAK)], [(3, 2)], [], 5) == []
    assert dr.sure_to_rank([((0, 0, 0), WEAK)], [(3, 2)], [], 6) == [(0, 0, 0)]


def test_known_claims_ahead_count_against_the_limit() -> None:
    known = [((0, 0, i), BEST) for i in range(3)]
    assert dr.sure_to_rank(known, [], [], 2) == [(0, 0, 0), (0, 0, 1)]


def test_schemas_carry_no_docstring_a_small_model_could_copy() -> None:
    for model in (dr.Scope, dr.Search, dr.Extract, dr.Verdict, dr.Report):
        text = json.dumps(model.model_json_schema())
        assert '"description"' not in text, model.__name__


def test_small_model_preset_keeps_a_run_near_30_calls() -> None:
    plan = dr.plan_research(ResearchConfig.for_small_model())
    assert plan.typical_calls <= 30
    assert plan.requests_per_call == 2
