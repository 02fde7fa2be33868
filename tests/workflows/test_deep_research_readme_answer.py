"""The README's question on the committed docs/, with a model that always takes the first
choice it is offered (the position bias a 270M model shows): what the summary says is then
the code's doing (retrieval, subjects, ranking), and it must state agentport's retry
policy, not another tool's retries, and no fragment."""

from __future__ import annotations

import re
from typing import Any

import pytest

from _helpers import ROOT
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import ResearchConfig, run_research

DOCS = ROOT / "docs"
README_Q = "How does agentport retry failed calls?"


def first_choice() -> ScriptedAdapter:
    def reply(call: Call) -> Any:
        if call.config.choices is not None:
            return call.config.choices[0]
        schema = call.config.output_schema
        assert isinstance(schema, dict)
        return {"ids": schema["properties"]["ids"]["items"]["enum"][:1]}

    llm = ScriptedAdapter()
    llm.add(reply)
    return llm


@pytest.mark.anyio
async def test_the_readme_question_leads_with_the_retry_policy() -> None:
    out = await run_research(
        README_Q, first_choice(), corpus=DOCS, config=ResearchConfig.for_small_model()
    )
    assert out.error is None
    # the summary's first two sentences (a sentence ends at ". " before a capital or at a
    # claim's "[source]" label) state the whole policy
    said = re.split(r"(?<=[.!?])\s+(?=[A-Z`*_\[(\"'])|\s\[[^\]]+\](?:\s|$)", out.summary)
    first_two = " ".join(said[:2])
    for fact in ("attempts=3", "full-jitter exponential", "retryable", "retry_after"):
        assert fact in first_two, (fact, out.summary)
    assert out.findings[0].sources[0].startswith("corpus://errors.md/")
    # the docs' own benchmark prose quotes the question: it is about it, no answer to it
    for finding in out.findings:
        assert README_Q not in finding.claim, finding
        assert not any(s.startswith("corpus://deep-research.md/") for s in finding.sources), finding


@pytest.mark.anyio
@pytest.mark.parametrize(
    "question",
    [
        README_Q,
        "What happens when a call times out?",
        "How do I limit what a research run spends?",
        "Which backends can search the web?",
    ],
)
async def test_no_fragment_and_no_other_tools_retries_lead_the_summary(question: str) -> None:
    out = await run_research(
        question, first_choice(), corpus=DOCS, config=ResearchConfig.for_small_model()
    )
    for finding in out.findings:
        assert not finding.claim.rstrip().endswith(":"), finding.claim
        assert not re.match(r"^\[[^\]]+\]:", finding.claim), finding.claim
        assert "<!--" not in finding.claim
    if question == README_Q:
        lead = out.findings[0]
        assert not any("backends/" in s for s in lead.sources), lead
