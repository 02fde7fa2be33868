"""The pipeline with a scripted model: the seed's Task 8 tests ported, every degenerate path,
the concurrency semantics (one cap, no barrier before fetch, barrier before verify), early
quorum, events, usage totals, the resume cache, web-mode refusal and cancellation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from returns.result import Failure, Result, Success

from _deep_research_util import (
    PASS,
    REFUTE,
    SUMMARY,
    WEB,
    angle_of,
    url_of,
    voter_of,
    web_model,
)
from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    Usage,
)
from agentport.testing import Call, FunctionAdapter, ScriptedAdapter
from agentport.workflows.deep_research import (
    CallCache,
    Extract,
    ResearchConfig,
    ResearchEvent,
    Search,
    SearchResult,
    Verdict,
    run_research,
    to_json,
    to_markdown,
)

pytestmark = pytest.mark.anyio


# ── the seed's Task 8 tests ──


async def test_happy_path_returns_report_and_stats() -> None:
    out = await run_research("Q", web_model(), config=WEB)
    assert out.error is None
    assert out.summary == SUMMARY
    assert out.stats["confirmed"] == 3  # 3 angles x 1 claim, all survive
    assert out.stats["angles"] == 3
    assert out.stats["afterSynthesis"] == 1
    assert out.open_questions == ["why?"]


async def test_empty_question_returns_error() -> None:
    llm = ScriptedAdapter()
    out = await run_research("   ", llm, config=WEB)
    assert out.error == "No research question provided."
    assert llm.calls == []


async def test_no_claims_degenerate() -> None:
    empty = Extract.model_validate({"sourceQuality": "unreliable", "claims": []})
    out = await run_research("Q", web_model(extract=empty), config=WEB)
    assert out.findings == []
    assert out.stats["claimsExtracted"] == 0
    assert out.summary == "No claims extracted. 3 sources fetched, all empty/failed."


async def test_all_refuted_degenerate() -> None:
    llm = web_model(verify=REFUTE)
    out = await run_research("Q", llm, config=WEB)
    assert out.findings == []
    assert out.stats["confirmed"] == 0
    assert len(out.refuted) == 3
    assert out.summary.startswith("All 3 claims refuted")
    assert llm.calls_with("synthesis") == []


async def test_synth_failure_salvages_confirmed() -> None:
    failed = ProviderError(ErrorKind.process_failed, "boom")
    out = await run_research("Q", web_model(synthesis=failed), config=WEB)
    assert out.findings == []
    assert len(out.confirmed) == 3
    assert out.confirmed[0].quote == "q"
    assert out.confirmed[0].vote == "3-0"
    assert "unmerged" in out.summary


# ── degenerate paths beyond the seed ──


async def test_scope_failure_is_a_one_line_error_not_an_exception() -> None:
    llm = ScriptedAdapter().add("I cannot help with that.", label="scope")
    out = await run_research("Q", llm, config=WEB)
    assert out.error is not None
    assert "the scope call returned no result" in out.error
    assert "schema_mismatch" in out.error
    assert "\n" not in out.error


async def test_model_that_always_returns_invalid_json_ends_with_an_error() -> None:
    llm = ScriptedAdapter(default="{not json")
    out = await run_research("Q", llm, config=ResearchConfig(assume_web_tools=True))
    assert out.error is not None
    assert len(llm.calls) == 1  # scope failed: nothing else was attempted
    assert out.stats["agentCallsFailed"] == 1


async def test_invalid_extractions_still_give_a_partial_report_naming_the_failures() -> None:
    out = await run_research("Q", web_model(extract="{broken"), config=WEB)
    assert out.error is None
    assert len(out.sources) == 3
    assert all(s.error and "schema_mismatch" in s.error for s in out.sources)
    assert out.stats["failuresByKind"] == {"schema_mismatch": 3}
    assert any("3 agent call(s) failed" in w for w in out.warnings)


async def test_failed_voters_make_claims_unverified_never_refuted() -> None:
    limited = ProviderError(ErrorKind.rate_limited, "slow down")
    llm = web_model(verify=limited)
    out = await run_research("Q", llm, config=WEB)
    assert out.refuted == []
    assert len(out.unverified) == 3
    assert out.unverified[0].errored_votes == 3
    assert "infrastructure failure" in out.summary
    assert "refuted by" not in out.summary
    assert out.stats["killed"] == 0
    assert out.stats["unverified"] == 3
    assert llm.calls_with("synthesis") == []


async def test_mixed_refuted_and_unverified_summary_names_both() -> None:
    def verify(call: Call) -> object:
        if "a0.com" in call.prompt:
            return REFUTE
        return ProviderError(ErrorKind.timeout, "slow")

    out = await run_research("Q", web_model(verify=verify), config=WEB)
    assert len(out.refuted) == 1
    assert len(out.unverified) == 2
    assert "1 refuted and 2 unverified" in out.summary


async def test_unverified_claims_reach_the_synthesis_caveats() -> None:
    def verify(call: Call) -> object:
        return PASS if "a0.com" in call.prompt else ProviderError(ErrorKind.timeout, "slow")

    llm = web_model(verify=verify)
    out = await run_research("Q", llm, config=WEB)
    prompt = llm.calls_with("synthesis")[0].prompt
    assert "Unverified claims" in prompt
    assert "a1.com" in prompt
    assert [c.outcome for c in out.claims].count("unverified") == 2


async def test_failed_search_angle_is_skipped_others_continue() -> None:
    def search(call: Call) -> object:
        if angle_of(call) == "a1":
            return ProviderError(ErrorKind.network, "down")
        n = angle_of(call)
        return Search(results=[SearchResult(url=f"http://{n}.com/x", title="t", relevance="high")])

    llm = web_model()
    llm.rules[1].replies = [search]
    out = await run_research("Q", llm, config=WEB)
    assert out.stats["sourcesFetched"] == 2
    assert out.stats["confirmed"] == 2


async def test_same_url_from_two_angles_is_fetched_once() -> None:
    same = Search(
        results=[SearchResult(url="https://www.same.org/p/", title="t", relevance="high")]
    )
    llm = web_model()
    llm.rules[1].replies = [same]
    out = await run_research("Q", llm, config=WEB)
    assert len(llm.calls_with("extract")) == 1
    assert out.stats["urlDupes"] == 2


# ── web mode needs web tools ──


async def test_web_mode_is_refused_when_catalog_says_web_search_ignored() -> None:
    llm = web_model()
    out = await run_research("Q", llm)  # scripted: web_search IGNORED in the catalog
    assert out.error is not None
    assert "web_search IGNORED" in out.error
    assert "--corpus" in out.error
    assert llm.calls == []


async def test_web_mode_is_refused_for_a_backend_the_catalog_does_not_know() -> None:
    llm = FunctionAdapter(lambda m, c: "x", backend="homegrown")
    out = await run_research("Q", llm)
    assert out.error is not None
    assert "not in the catalog" in out.error
    assert llm.calls == []


async def test_web_mode_asks_for_web_search_on_search_extract_verify_only() -> None:
    llm = web_model()
    await run_research("Q", llm, config=WEB)
    by_label = {c.label: c.config.web_search for c in llm.calls}
    assert by_label == {
        "scope": False,
        "search": True,
        "extract": True,
        "verify": True,
        "synthesis": False,
    }


async def test_every_call_carries_its_phase_label_and_schema() -> None:
    llm = web_model()
    await run_research("Q", llm, config=WEB)
    schemas = {c.label: c.config.output_schema.__name__ for c in llm.calls}  # type: ignore[union-attr]
    assert schemas == {
        "scope": "Scope",
        "search": "Search",
        "extract": "Extract",
        "verify": "Verdict",
        "synthesis": "Report",
    }


async def test_each_voter_gets_its_own_index_in_the_prompt() -> None:
    llm = web_model()
    await run_research("Q", llm, config=WEB)
    voters = sorted(voter_of(c) for c in llm.calls_with("verify") if "a0.com" in c.prompt)
    assert voters == [1, 2, 3]


# ── concurrency ──


class _Meter:
    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.log: list[tuple[str, str, float]] = []

    def wrap(self, reply: object, label: str, delay: float = 0.01) -> object:
        async def run(call: Call) -> object:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.log.append(("start", label + ":" + _tag(call), anyio.current_time()))
            try:
                await anyio.sleep(delay(call) if callable(delay) else delay)
            finally:
                self.now -= 1
            self.log.append(("end", label + ":" + _tag(call), anyio.current_time()))
            return reply(call) if callable(reply) else reply

        return run


def _tag(call: Call) -> str:
    try:
        return angle_of(call)
    except AssertionError:
        return ""


def _metered_model(meter: _Meter, search_delay: object = 0.01) -> ScriptedAdapter:
    base = web_model()
    llm = ScriptedAdapter()
    for rule in base.rules:
        assert rule.label is not None
        delay = search_delay if rule.label == "search" else 0.01
        llm.add(meter.wrap(rule.replies[0], rule.label, delay), label=rule.label)  # type: ignore[arg-type]
    return llm


async def test_one_cap_bounds_calls_in_flight_across_all_phases() -> None:
    meter = _Meter()
    llm = _metered_model(meter)
    out = await run_research("Q", llm, config=WEB.model_copy(update={"CONCURRENCY": 2}))
    assert meter.peak == 2
    assert out.stats["maxInFlight"] == 2


async def test_fetch_of_a_fast_angle_starts_before_a_slow_angle_search_ends() -> None:
    meter = _Meter()
    llm = _metered_model(meter, search_delay=lambda c: 0.3 if angle_of(c) == "a0" else 0.01)
    await run_research("Q", llm, config=WEB)
    slow_search_end = next(t for k, name, t in meter.log if k == "end" and name == "search:a0")
    first_extract = min(
        t for k, name, t in meter.log if k == "start" and name.startswith("extract")
    )
    assert first_extract < slow_search_end


async def test_without_speculation_no_vote_starts_before_every_extraction_finished() -> None:
    meter = _Meter()
    llm = _metered_model(meter, search_delay=lambda c: 0.2 if angle_of(c) == "a2" else 0.01)
    await run_research("Q", llm, config=WEB.model_copy(update={"speculative_verify": False}))
    last_extract = max(t for k, name, t in meter.log if k == "end" and name.startswith("extract"))
    first_vote = min(t for k, name, t in meter.log if k == "start" and name.startswith("verify"))
    assert first_vote >= last_extract


async def test_a_claim_sure_to_rank_is_verified_before_a_slow_angle_finishes() -> None:
    meter = _Meter()
    llm = _metered_model(meter, search_delay=lambda c: 0.2 if angle_of(c) == "a2" else 0.01)
    out = await run_research("Q", llm, config=WEB)
    slow_search_end = next(t for k, name, t in meter.log if k == "end" and name == "search:a2")
    first_vote = min(t for k, name, t in meter.log if k == "start" and name.startswith("verify"))
    assert first_vote < slow_search_end
    assert out.stats["confirmed"] == 3


async def test_speculation_verifies_exactly_the_claims_the_barrier_would() -> None:
    def extract(call: Call) -> Extract:
        url = url_of(call)
        kinds = [("tangential", "blog"), ("central", "primary"), ("supporting", "secondary")]
        return Extract.model_validate(
            {
                "sourceQuality": "primary" if "a0" in url else "blog",
                "claims": [
                    {"claim": f"{url} {imp}", "quote": "q", "importance": imp} for imp, _ in kinds
                ],
            }
        )

    def delay(call: Call) -> float:
        return {"a0": 0.05, "a1": 0.0, "a2": 0.1}[angle_of(call)]

    results = []
    for speculative in (False, True):
        llm = web_model(extract=extract)
        llm.rules[1].delay_s = 0.0
        llm.rules[1].replies = [_delayed_search(delay)]
        cfg = WEB.model_copy(update={"MAX_VERIFY_CLAIMS": 4, "speculative_verify": speculative})
        out = await run_research("Q", llm, config=cfg)
        results.append(sorted(c.claim for c in out.claims))
        assert len(llm.calls_with("verify")) == 4 * 3
    assert results[0] == results[1]


def _delayed_search(delay: object) -> object:
    async def reply(call: Call) -> object:
        await anyio.sleep(delay(call))  # type: ignore[operator]
        n = angle_of(call)
        return Search(results=[SearchResult(url=f"http://{n}.com/x", title="t", relevance="high")])

    return reply


# ── early quorum ──


async def test_early_quorum_skips_the_third_vote_when_two_agree() -> None:
    llm = web_model()
    cfg = WEB.model_copy(update={"early_quorum": True})
    out = await run_research("Q", llm, config=cfg)
    assert len(llm.calls_with("verify")) == 6  # 3 claims x 2 votes
    assert out.stats["verifyCallsSkipped"] == 3
    assert out.stats["confirmed"] == 3


async def test_early_quorum_casts_the_deciding_vote_on_a_split() -> None:
    def verify(call: Call) -> Verdict:
        return REFUTE if voter_of(call) == 1 else PASS

    llm = web_model(verify=verify)
    cfg = WEB.model_copy(update={"early_quorum": True})
    out = await run_research("Q", llm, config=cfg)
    assert len(llm.calls_with("verify")) == 9
    assert out.stats["confirmed"] == 3
    assert {c.vote for c in out.claims} == {"2-1"}


async def test_early_quorum_gives_the_same_outcomes_as_full_voting() -> None:
    def verify(call: Call) -> object:
        v = voter_of(call)
        if "a0.com" in call.prompt:
            return REFUTE
        if "a1.com" in call.prompt:
            return REFUTE if v == 2 else PASS
        return ProviderError(ErrorKind.timeout, "t") if v == 1 else PASS

    full = await run_research("Q", web_model(verify=verify), config=WEB)
    early_llm = web_model(verify=verify)
    early = await run_research("Q", early_llm, config=WEB.model_copy(update={"early_quorum": True}))
    assert [(c.claim, c.outcome) for c in early.claims] == [
        (c.claim, c.outcome) for c in full.claims
    ]
    assert len(early_llm.calls_with("verify")) < 9


# ── events, usage, cache ──


async def test_events_announce_every_phase_and_count_every_call() -> None:
    events: list[ResearchEvent] = []
    out = await run_research("Q", web_model(), config=WEB, on_event=events.append)
    phases = [e.phase for e in events if e.kind == "phase"]
    assert phases == ["scope", "search", "verify", "synthesis"]
    finished = [e for e in events if e.kind == "call_finished"]
    assert len(finished) == out.stats["agentCallsMade"] == 17
    assert finished[-1].done == 17
    assert finished[-1].expected >= 17


async def test_usage_and_cost_are_totalled_over_every_call() -> None:
    inner = web_model()

    class Priced:
        backend = "scripted"

        async def complete(
            self, messages: Sequence[Message], config: CompletionConfig | None = None
        ) -> Result[CompletionResponse, ProviderError]:
            result = await inner.complete(messages, config)
            if isinstance(result, Failure):
                return result
            usage = Usage(input_tokens=10, output_tokens=2, cost_usd=0.5)
            return Success(result.unwrap().model_copy(update={"usage": usage}))

    out = await run_research("Q", Priced(), config=WEB)
    assert out.stats["inputTokens"] == 170
    assert out.stats["outputTokens"] == 34
    assert out.stats["costUsd"] == pytest.approx(8.5)
    assert out.stats["costState"] == "priced"  # every call had a price: not a lower bound


async def test_resume_replays_finished_calls_and_only_redoes_the_failed_one(
    tmp_path: Path,
) -> None:
    first = web_model(synthesis=ProviderError(ErrorKind.network, "connection reset"))
    out1 = await run_research("Q", first, config=WEB, cache=CallCache(tmp_path))
    assert out1.findings == []
    second = web_model()
    out2 = await run_research("Q", second, config=WEB, cache=CallCache(tmp_path))
    assert [c.label for c in second.calls] == ["synthesis"]
    assert out2.summary == SUMMARY
    assert out2.stats["agentCallsCached"] == 16
    assert out2.stats["inputTokens"] > out1.stats["inputTokens"]  # replayed usage counts


def _damage(folder: Path) -> None:
    for f in folder.glob("*.json"):
        f.write_text("{torn", encoding="utf-8")


def _entries(folder: Path) -> int:
    return len(list(folder.glob("*.json")))


async def test_a_damaged_cache_entry_is_treated_as_missing(tmp_path: Path) -> None:
    await run_research("Q", web_model(), config=WEB, cache=CallCache(tmp_path))
    _damage(tmp_path)
    again = web_model()
    out = await run_research("Q", again, config=WEB, cache=CallCache(tmp_path))
    assert out.summary == SUMMARY
    assert len(again.calls) == 17


async def test_cache_without_replay_records_but_never_reads(tmp_path: Path) -> None:
    await run_research("Q", web_model(), config=WEB, cache=CallCache(tmp_path))
    fresh = web_model()
    await run_research("Q", fresh, config=WEB, cache=CallCache(tmp_path, replay=False))
    assert len(fresh.calls) == 17
    assert _entries(tmp_path) == 17


async def test_cancellation_propagates_instead_of_becoming_a_report() -> None:
    llm = web_model()
    llm.rules[3].delay_s = 5.0
    with anyio.move_on_after(0.2) as scope_:
        await run_research("Q", llm, config=WEB)
        pytest.fail("run_research returned after cancellation")
    assert scope_.cancelled_caught


async def test_renderers_show_quotes_votes_sources_and_stats() -> None:
    def verify(call: Call) -> object:
        return REFUTE if "a0.com" in call.prompt else PASS

    out = await run_research("Q", web_model(verify=verify), config=WEB)
    md = to_markdown(out)
    assert "# Deep Research" in md
    assert "done" in md
    assert "F0" in md
    assert '> "q"' in md
    assert "vote 3-0" in md
    assert "## Refuted (transparency)" in md
    assert "http://a1.com/x" in md
    assert '"agentCalls"' in md
    data = __import__("json").loads(to_json(out))
    assert data["stats"]["confirmed"] == 2
    assert data["refuted"][0]["vote"] == "0-3"
    assert "openQuestions" in data
    assert "claimCount" in data["sources"][0]


def test_to_markdown_renders_summary_and_stats() -> None:
    from agentport.workflows.deep_research import ResearchReport

    result = ResearchReport.model_validate(
        {
            "question": "Q",
            "summary": "ans",
            "findings": [
                {"claim": "F1", "confidence": "high", "sources": ["http://a"], "evidence": "e"}
            ],
            "caveats": "c",
            "stats": {"angles": 5, "confirmed": 1},
        }
    )
    md = to_markdown(result)
    assert "# Deep Research" in md
    assert "ans" in md
    assert "F1" in md


def test_markdown_escapes_html_from_untrusted_text() -> None:
    from agentport.workflows.deep_research import ResearchReport

    md = to_markdown(ResearchReport(question="<script>x</script>", summary="<b>"))
    assert "<script>" not in md
    assert "<b>" not in md


async def test_findings_keep_only_citations_of_fetched_sources() -> None:
    synthesis = {
        "summary": "the confirmed claims agree",
        "findings": [
            {
                "claim": "F: C-http://a1.com/x",
                "confidence": "high",
                "sources": ["https://www.a1.com/x/", "https://invented.org/paper"],
                "evidence": "e",
            }
        ],
        "caveats": "c",
    }
    out = await run_research("Q", web_model(synthesis=synthesis), config=WEB)
    assert out.findings[0].sources == ["http://a1.com/x"]
    assert out.stats["unboundCitations"] == 1
    assert any("never fetched" in w for w in out.warnings)
