"""Reports never overstate (every backend, the seed path included): degenerate synthesis is
retried once then replaced, budget-cut claims are listed apart, one work under several URLs
is fetched once, and the top of a report shows grounding beside every confirmed count."""

from __future__ import annotations

import pytest

from _deep_research_util import WEB, report, scope, url_of, web_model
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import (
    Claim,
    Extract,
    ResearchConfig,
    Search,
    SearchResult,
    run_research,
    to_markdown,
)
from agentport.workflows.deep_research._honesty import synthesis_problem, work_key

PLACEHOLDER = {
    "summary": "string",
    "findings": [{"claim": "string", "confidence": "high", "sources": ["string"], "evidence": "x"}],
    "caveats": "string",
}


@pytest.mark.anyio
async def test_degenerate_synthesis_is_retried_once_and_the_retry_used() -> None:
    llm = web_model(synthesis=PLACEHOLDER)
    llm.add(report(), label="synthesis")
    # first synthesis rule answers once, the second (good) answer is the retry
    llm.rules[-2].times = 1
    out = await run_research("Q", llm, config=WEB)
    calls = llm.calls_with("synthesis")
    assert len(calls) == 2
    assert "previous answer was rejected" in calls[1].prompt
    assert out.stats["synthesis"] == "model (retried)"
    assert out.findings
    assert any("degenerate" in w for w in out.warnings)


@pytest.mark.anyio
async def test_degenerate_synthesis_twice_is_replaced_by_the_confirmed_claims() -> None:
    out = await run_research("Q", web_model(synthesis=PLACEHOLDER), config=WEB)
    assert out.findings == []
    assert len(out.confirmed) == 3
    assert out.summary.startswith("Synthesis was degenerate twice")
    assert out.stats["synthesis"] == "replaced by the confirmed claims"
    md = to_markdown(out)
    assert "quote not checked against the source" in md.split("## Confirmed claims")[1]


@pytest.mark.parametrize(
    ("summary", "findings", "problem"),
    [
        ("", [("C-http://a0.com/x", "http://a0.com/x")], "placeholder"),
        ("lorem ipsum dolor", [("C-http://a0.com/x", "http://a0.com/x")], "placeholder"),
        ("the claims agree here", [], "no findings"),
        ("the claims agree here", [("C-http://a0.com/x", "http://made.up/y")], "fetched"),
        ("the claims agree here", [("Bananas grow quickly", "http://a0.com/x")], "traceable"),
    ],
)
def test_synthesis_problems_are_named(
    summary: str, findings: list[tuple[str, str]], problem: str
) -> None:
    from agentport.workflows.deep_research import Report

    answer = Report.model_validate(
        {
            "summary": summary,
            "findings": [
                {"claim": c, "confidence": "low", "sources": [s], "evidence": ""}
                for c, s in findings
            ],
            "caveats": "",
        }
    )
    confirmed = [{"claim": "C-http://a0.com/x", "quote": "q"}]
    found = synthesis_problem(answer, "Q", confirmed, ["http://a0.com/x"])
    assert found is not None
    assert problem in found


def test_a_usable_synthesis_has_no_problem() -> None:
    confirmed = [{"claim": "C-http://a0.com/x", "quote": "q"}]
    assert synthesis_problem(report(), "Q", confirmed, ["http://a0.com/x"]) is None


def _many_claims(call: Call) -> Extract:
    url = url_of(call)
    return Extract.model_validate(
        {
            "sourceQuality": "primary",
            "claims": [
                Claim(claim=f"C{i}-{url}", quote="q", importance="central") for i in range(3)
            ],
        }
    )


@pytest.mark.anyio
async def test_claims_cut_by_the_budget_are_listed_counted_warned_and_told() -> None:
    llm = web_model(extract=_many_claims)
    cfg = ResearchConfig(assume_web_tools=True, MAX_VERIFY_CLAIMS=2)
    out = await run_research("Q", llm, config=cfg)
    assert len(out.claims) == 2
    assert len(out.not_verified) == 9 - 2
    assert out.stats["notVerifiedBudget"] == 7
    assert any("not verified (over the verify cap" in w for w in out.warnings)
    synth = llm.calls_with("synthesis")[0].prompt
    assert "Not verified (budget)" in synth
    assert all(c.claim in synth for c in out.not_verified)
    md = to_markdown(out)
    # no run budget was given: the status line names the seed's cap, not a budget
    assert "7 not verified (cap: MAX_VERIFY_CLAIMS)" in md.split("## Summary")[0]


def _mirrored_search(call: Call) -> Search:
    return Search(
        results=[
            SearchResult(url="https://doi.org/10.1000/xyz123", title="Paper", relevance="high"),
            SearchResult(
                url="https://arxiv.example/abs/10.1000/XYZ123", title="Paper", relevance="high"
            ),
            SearchResult(
                url="https://a.example/p", title="The Same Long Title Here", relevance="high"
            ),
            SearchResult(
                url="https://b.example/q", title="the same long title, here", relevance="medium"
            ),
        ]
    )


@pytest.mark.anyio
async def test_one_work_under_several_urls_is_fetched_once_with_its_mirrors() -> None:
    llm = ScriptedAdapter()
    llm.add(scope(3), label="scope")
    llm.add(_mirrored_search, label="search")
    llm.add(
        lambda call: Extract.model_validate(
            {
                "sourceQuality": "primary",
                "claims": [Claim(claim="C-" + url_of(call), quote="q", importance="central")],
            }
        ),
        label="extract",
    )
    llm.add({"refuted": False, "evidence": "ok", "confidence": "high"}, label="verify")
    llm.add(report(), label="synthesis")
    out = await run_research("Q", llm, config=WEB)
    fetched = [url_of(c) for c in llm.calls_with("extract")]
    assert sorted(fetched) == ["https://a.example/p", "https://doi.org/10.1000/xyz123"]
    by_url = {s.url: s.mirrors for s in out.sources}
    assert by_url["https://doi.org/10.1000/xyz123"] == ["https://arxiv.example/abs/10.1000/XYZ123"]
    assert by_url["https://a.example/p"] == ["https://b.example/q"]
    assert out.stats["mirrorsMerged"] == 2


def test_work_keys() -> None:
    assert work_key("https://x.org/10.1234/AbC.", "t") == "doi:10.1234/abc"
    assert work_key("https://x.org/p", "A B C") == "title:a b c"
    assert work_key("https://x.org/p", "Home") is None
    assert work_key("corpus://a/0", "T", "Same  text!") == work_key(
        "corpus://b/0", "U", "same text"
    )


@pytest.mark.anyio
async def test_top_of_report_shows_grounding_beside_the_confirmed_count() -> None:
    out = await run_research("Q", web_model(), config=WEB)
    head = to_markdown(out).split("## Summary")[0]
    assert "3 confirmed (quotes not checked against the sources: web mode)" in head
    first_finding = to_markdown(out).split("## Findings")[1].splitlines()[1]
    assert "quote not checked against the source" in first_finding
