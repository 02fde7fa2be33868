"""Deep research: verify calls saved by `early_quorum`, with identical verdicts.

Each run verifies 25 claims x 3 votes. Every (claim, voter) pair gets one fixed vote drawn
from a seeded mix, and the same vote is replayed with and without early quorum, so the only
difference is which votes are cast. The mixes are assumptions, stated so they can be
argued with; "default":

- 45 % well-supported claims: each voter refutes with p = 0.08;
- 35 % weak claims (overreach, marketing, outdated): each voter refutes with p = 0.92;
- 20 % contested claims: p = 0.5;
- every vote independently fails (abstains: timeout, bad JSON) with p = 0.03;

"agreeing" and "contested" bracket it (see MIXES). The expected saving is
P(the first two votes are valid and agree) / 3.

Voters that share a model and a prompt agree most of the time, which is what makes two
agreeing votes common. The saving is bounded by 1/3 (one of three votes). Goal: >= 25 %
fewer verify calls, every claim's outcome identical.

    python benchmarks/deep_research_early_quorum.py [--runs 20]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from typing import Any

import anyio

from agentport.core import ErrorKind, ProviderError
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import ResearchConfig, run_research

# name -> ((share, p_refute) per claim kind, p_abstain per vote)
MIXES: dict[str, tuple[tuple[tuple[float, float], ...], float]] = {
    "default": (((0.45, 0.08), (0.35, 0.92), (0.20, 0.5)), 0.03),
    "agreeing": (((0.50, 0.05), (0.40, 0.95), (0.10, 0.5)), 0.02),
    "contested": (((0.35, 0.10), (0.30, 0.90), (0.35, 0.5)), 0.05),
}


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def model(seed: int, mix: str) -> ScriptedAdapter:
    kinds, abstain = MIXES[mix]

    angles = [{"label": f"a{i}", "query": f"q{i}"} for i in range(5)]

    def search(call: Call) -> dict[str, Any]:
        n = re.search(r"Searcher: (\S+)", call.prompt)
        assert n is not None
        return {
            "results": [
                {"url": f"https://{n.group(1)}.org/{i}", "title": "t", "relevance": "high"}
                for i in range(3)
            ]
        }

    def extract(call: Call) -> dict[str, Any]:
        url = re.search(r"\*\*URL:\*\* (\S+)", call.prompt)
        assert url is not None
        return {
            "sourceQuality": "primary",
            "claims": [
                {"claim": f"{url.group(1)} claim {i}", "quote": "q", "importance": "central"}
                for i in range(2)
            ],
        }

    def verify(call: Call) -> Any:
        claim = re.search(r'## Claim under review\n"(.*)"', call.prompt)
        voter = re.search(r"\(voter (\d+)/", call.prompt)
        assert claim is not None
        assert voter is not None
        kind = _rng(seed, claim.group(1)).random()
        p_refute = kinds[-1][1]
        acc = 0.0
        for share, p in kinds:
            acc += share
            if kind < acc:
                p_refute = p
                break
        r = _rng(seed, claim.group(1), voter.group(1))
        if r.random() < abstain:
            return ProviderError(ErrorKind.timeout, "voter timed out")
        refuted = r.random() < p_refute
        return {"refuted": refuted, "evidence": "e", "confidence": "high"}

    llm = ScriptedAdapter()
    llm.add({"question": "Q", "summary": "s", "angles": angles}, label="scope")
    llm.add(search, label="search")
    llm.add(extract, label="extract")
    llm.add(verify, label="verify")
    llm.add(
        {"summary": "s", "findings": [], "caveats": "c", "openQuestions": []}, label="synthesis"
    )
    return llm


async def one(seed: int, mix: str) -> dict[str, Any]:
    outcomes = []
    calls = []
    for early in (False, True):
        llm = model(seed, mix)
        cfg = ResearchConfig(assume_web_tools=True, early_quorum=early)
        report = await run_research("Q", llm, config=cfg)
        outcomes.append([(c.claim, c.outcome) for c in report.claims])
        calls.append(len(llm.calls_with("verify")))
    return {
        "seed": seed,
        "claims": len(outcomes[0]),
        "verify_calls_full": calls[0],
        "verify_calls_early": calls[1],
        "saved": round(1 - calls[1] / calls[0], 3),
        "identical_outcomes": outcomes[0] == outcomes[1],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    for mix in MIXES:
        rows = [anyio.run(one, seed, mix) for seed in range(args.runs)]
        full = sum(r["verify_calls_full"] for r in rows)
        early = sum(r["verify_calls_early"] for r in rows)
        summary = {
            "mix": mix,
            "runs": len(rows),
            "claims": sum(r["claims"] for r in rows),
            "verify_calls_full": full,
            "verify_calls_early": early,
            "saved": round(1 - early / full, 3),
            "worst_run_saved": min(r["saved"] for r in rows),
            "goal_saved": 0.25,
            "identical_outcomes": all(r["identical_outcomes"] for r in rows),
        }
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
