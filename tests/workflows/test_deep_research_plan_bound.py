"""`plan_research(...).upper_bound_calls` is a true upper bound (what `--plan` prints): for
random settings, a scripted model that asks for the most work it may (6 angles, 6 results
an angle, 5 claims a source, split votes, a degenerate synthesis that is asked again) never
makes the run call it more often than planned. Before, a strict-fetch-cap run made 99 calls
against a planned 98: the synthesis asked again was not in the plan.
"""

from __future__ import annotations

import itertools

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _deep_research_util import angle_of, url_of
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import (
    Angle,
    Claim,
    Extract,
    Report,
    ResearchConfig,
    Scope,
    Search,
    SearchResult,
    Verdict,
    plan_research,
    run_research,
)

# an empty summary is degenerate: the synthesis is always asked twice
DEGENERATE = Report.model_validate(
    {"summary": "", "findings": [], "caveats": "", "openQuestions": []}
)


def _greedy_model() -> ScriptedAdapter:
    votes = itertools.count()

    def search(call: Call) -> Search:
        a = angle_of(call)
        return Search(
            results=[
                SearchResult(url=f"http://{a}.example/{i}", title="t", relevance="high")
                for i in range(6)
            ]
        )

    def extract(call: Call) -> Extract:
        url = url_of(call)
        claims = [Claim(claim=f"C{i} {url}", quote=f"q{i}", importance="central") for i in range(5)]
        return Extract.model_validate({"sourceQuality": "primary", "claims": claims})

    def verify(call: Call) -> Verdict:  # alternating votes: no early quorum settles a claim
        refuted = next(votes) % 2 == 1
        return Verdict(refuted=refuted, evidence="e", confidence="high")

    llm = ScriptedAdapter()
    angles = [Angle(label=f"a{i}", query=f"q{i}") for i in range(6)]
    llm.add(Scope(question="Q", summary="s", angles=angles), label="scope")
    llm.add(search, label="search")
    llm.add(extract, label="extract")
    llm.add(verify, label="verify")
    llm.add(DEGENERATE, label="synthesis")
    return llm


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    max_fetch=st.integers(min_value=0, max_value=40),
    max_claims=st.integers(min_value=0, max_value=40),
    votes=st.integers(min_value=1, max_value=5),
    refutations=st.integers(min_value=1, max_value=3),
    strict=st.booleans(),
    early=st.booleans(),
    speculative=st.booleans(),
)
def test_no_run_makes_more_calls_than_its_plan_allows(
    max_fetch: int,
    max_claims: int,
    votes: int,
    refutations: int,
    strict: bool,
    early: bool,
    speculative: bool,
) -> None:
    config = ResearchConfig(
        assume_web_tools=True,
        MAX_FETCH=max_fetch,
        MAX_VERIFY_CLAIMS=max_claims,
        VOTES_PER_CLAIM=votes,
        REFUTATIONS_REQUIRED=min(refutations, votes),
        strict_fetch_cap=strict,
        early_quorum=early,
        speculative_verify=speculative,
        CONCURRENCY=8,
    )
    llm = _greedy_model()
    anyio.run(lambda: run_research("What is Q?", llm, config=config))
    plan = plan_research(config)
    assert len(llm.calls) <= plan.upper_bound_calls, (len(llm.calls), plan)


def test_the_planned_bound_is_reached_by_the_greedy_model() -> None:
    """The bound is tight for the strict cap: the greedy run makes exactly that many calls."""
    config = ResearchConfig(assume_web_tools=True, strict_fetch_cap=True)
    llm = _greedy_model()
    anyio.run(lambda: run_research("What is Q?", llm, config=config))
    assert len(llm.calls) == plan_research(config).upper_bound_calls
