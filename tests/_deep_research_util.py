"""Scripted models for the deep-research tests: every phase answered by label."""

from __future__ import annotations

import re
from typing import Any

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
)

# Web-mode tests script the web results themselves; the scripted backend has no web tools.
WEB = ResearchConfig(assume_web_tools=True)

PASS = Verdict(refuted=False, evidence="well supported", confidence="high")
REFUTE = Verdict(refuted=True, evidence="contradicted", confidence="high")


def scope(n: int = 3) -> Scope:
    return Scope(
        question="Q",
        summary="s",
        angles=[Angle(label=f"a{i}", query=f"q{i}") for i in range(n)],
    )


def angle_of(call: Call) -> str:
    m = re.search(r"Searcher: (\S+)", call.prompt)
    assert m is not None
    return m.group(1)


def url_of(call: Call) -> str:
    m = re.search(r"\*\*(?:URL|Source):\*\* (\S+)", call.prompt)
    assert m is not None
    return m.group(1)


def voter_of(call: Call) -> int:
    m = re.search(r"\(voter (\d+)/", call.prompt)
    assert m is not None
    return int(m.group(1))


def search_one_url(call: Call) -> Search:
    """Each angle finds one unique URL."""
    n = angle_of(call)
    return Search(results=[SearchResult(url=f"http://{n}.com/x", title="t", relevance="high")])


def extract_one_claim(call: Call) -> Extract:
    return Extract.model_validate(
        {
            "sourceQuality": "primary",
            "claims": [Claim(claim="C-" + url_of(call), quote="q", importance="central")],
        }
    )


SUMMARY = "done: the confirmed claims agree"


def report(findings: int = 1) -> Report:
    """A usable synthesis: a real summary, findings that restate a confirmed claim."""
    return Report.model_validate(
        {
            "summary": SUMMARY,
            "findings": [
                {
                    "claim": f"F{i}: C-http://a0.com/x",
                    "confidence": "high",
                    "sources": ["http://a0.com/x"],
                    "evidence": "e",
                }
                for i in range(findings)
            ],
            "caveats": "none",
            "openQuestions": ["why?"],
        }
    )


def web_model(
    *, verify: Any = PASS, synthesis: Any = None, extract: Any = extract_one_claim, **delays: float
) -> ScriptedAdapter:
    """A full web-mode script: 3 angles x 1 URL x 1 claim; override any phase."""
    llm = ScriptedAdapter()
    llm.add(scope(), label="scope", delay_s=delays.get("scope", 0.0))
    llm.add(search_one_url, label="search", delay_s=delays.get("search", 0.0))
    llm.add(extract, label="extract", delay_s=delays.get("extract", 0.0))
    llm.add(verify, label="verify", delay_s=delays.get("verify", 0.0))
    llm.add(report() if synthesis is None else synthesis, label="synthesis")
    return llm
