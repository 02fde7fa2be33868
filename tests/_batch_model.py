"""A deterministic research model for batch tests, answered at the fake server by phase
(read from the prompt), so any process (a Temporal worker too) can call it over HTTP."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from agentport.testing import FakeModelServer, JsonReply, RecordedRequest
from agentport.workflows.deep_research import ResearchConfig

# The fake server's backend has no web tools: these batches script the web results.
CONFIG = ResearchConfig(assume_web_tools=True, CONCURRENCY=4)
API_KEY = "sk-fake-0123456789"


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def answer(text: str) -> dict[str, Any]:
    """The JSON answer to one research prompt (3 angles, 1 source each, 1 claim each)."""
    q = re.search(r'Research question: "([^"]*)"', text)
    tag = _h(q.group(1) if q else text[:200])
    if text.startswith("Decompose this research question"):
        question = text.split("## Question\n", 1)[1].split("\n\n", 1)[0]
        return {
            "question": question,
            "summary": "two angles",
            "angles": [
                {"label": f"a{i}", "query": f"q{i} {_h(question)} {question}", "rationale": "r"}
                for i in range(3)
            ],
        }
    if "## Web Searcher: " in text:
        label = text.split("## Web Searcher: ", 1)[1].split("\n", 1)[0]
        url = f"http://{label}.example/{tag}"
        return {"results": [{"url": url, "title": "t", "snippet": "s", "relevance": "high"}]}
    if "## Corpus Searcher: " in text:  # corpus mode: the first two candidates
        urls = re.findall(r"url: (corpus://\S+)", text)[:2]
        return {"results": [{"url": u, "title": "t", "relevance": "high"} for u in urls]}
    if text.startswith("## Source Extractor") and "**Source:** " in text:
        url = text.split("**Source:** ", 1)[1].split("\n", 1)[0].strip()
        passage = text.split("## Passage\n", 1)[1].split("\n\n## Task", 1)[0]
        quote = " ".join(passage.split()[:8])  # the passage's own words: grounded
        return {
            "sourceQuality": "primary",
            "claims": [{"claim": f"Claim from {url}", "quote": quote, "importance": "central"}],
        }
    if text.startswith("## Source Extractor"):
        url = text.split("**URL:** ", 1)[1].split("\n", 1)[0].strip()
        return {
            "sourceQuality": "primary",
            "claims": [{"claim": f"Claim from {url}", "quote": "q", "importance": "central"}],
        }
    if text.startswith("## Synthesis"):
        return {
            "summary": f"Summary {tag}",
            "findings": [],
            "caveats": "none",
            "openQuestions": [],
        }
    # a verifier
    return {"refuted": False, "evidence": "well supported", "confidence": "high"}


def serve(server: FakeModelServer, latency_s: float = 0.0) -> None:
    """Answer every model request of *server* with `answer` after *latency_s*."""

    def reply(request: RecordedRequest) -> JsonReply:
        return JsonReply(answer(request.user_text), delay=latency_s)

    server.default = reply


def options(server: FakeModelServer) -> dict[str, Any]:
    """`[llm.openai_compat]` for the fake server."""
    return {"base_url": server.openai_base_url, "api_key": API_KEY}


def refine_questions(n: int) -> list[str]:
    """*n* questions that all match the tiny graph (`write_tiny`) at hop 1."""
    return [f"How does run() call helper()? (variant {i})" for i in range(n)]


def refine_answer(system: str, user: str) -> str:
    """The DeepRefine answers: the judge always says No (every hop), then an abduction and
    one new edge whose relation names the question's variant (so every apply changes the
    graph and a lost update would show as a missing edge)."""
    if "judgement assistant" in system:
        return "<judge>No</judge>"
    if "abduction assistant" in system:
        return "<abduction>the link from run() to helper() is not explicit</abduction>"
    m = re.search(r"\(variant (\d+)\)", user)
    source, target = _PAIRS[int(m.group(1)) % len(_PAIRS)] if m else _PAIRS[0]
    return f'<refinement>insert_edge("{source}", "uses", "{target}")</refinement>'


_CLI, _UTIL = "app/cli.py::", "app/util.py::"
# pairs of the tiny graph that are not linked yet: each question links a different pair
_PAIRS = [
    (a, b)
    for a in (f"{_CLI}main()", f"{_CLI}run()", f"{_UTIL}helper()")
    for b in (f"{_UTIL}Runner", f"{_UTIL}.go()", f"{_UTIL}main()")
] + [(f"{_CLI}main()", f"{_UTIL}helper()")]


def serve_refine(server: FakeModelServer, latency_s: float = 0.0) -> None:
    def reply(request: RecordedRequest) -> Any:
        from agentport.testing import TextReply

        return TextReply(refine_answer(request.system_text, request.user_text), delay=latency_s)

    server.default = reply
