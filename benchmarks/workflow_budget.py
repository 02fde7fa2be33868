"""Deep research with a budget of half its planned calls: the partial report, its stats and
the exit code (issue 12, "Measure and report").

The run is `agentport research "..." --budget calls=N --json` exactly as a user types it,
on a scripted fake backend standing in for an agent with web tools (`agentport.testing`;
the factory hands it to the CLI). The script is the seed's typical run call for call:
5 angles x 3 sources x 2 claims, the top 25 claims x 3 votes, 1 synthesis = 97 calls =
`plan_research().typical_calls`; every call takes `--latency-ms` (default 20 ms). A second
run uses a wall-clock ceiling of half the unbudgeted run's duration.

    python benchmarks/workflow_budget.py [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from typing import Any

from typer.testing import CliRunner

import agentport.factory
from agentport.cli import app
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import ResearchConfig, plan_research

VERDICT = {"refuted": False, "evidence": "supported", "confidence": "high"}


def model(latency_s: float) -> ScriptedAdapter:
    def search(call: Call) -> dict[str, Any]:
        found = re.search(r"Searcher: (\S+)", call.prompt)
        assert found is not None
        a = found.group(1)
        return {"results": [{"url": f"http://{a}.example/{i}", "title": "t", "relevance": "high"}
                            for i in range(3)]}  # fmt: skip

    def extract(call: Call) -> dict[str, Any]:
        found = re.search(r"\*\*(?:URL|Source):\*\* (\S+)", call.prompt)
        assert found is not None
        url = found.group(1)
        claims = [{"claim": f"C{i}-{url}", "quote": f"q{i}", "importance": "central"}
                  for i in range(2)]  # fmt: skip
        return {"sourceQuality": "primary", "claims": claims}

    angles = [{"label": f"a{i}", "query": f"q{i}"} for i in range(5)]
    report = {
        "summary": "the sources agree on C0",
        "findings": [{"claim": "C0-http://a0.example/0", "confidence": "high",
                      "sources": ["http://a0.example/0"], "evidence": "q0"}],
        "caveats": "none",
        "openQuestions": [],
    }  # fmt: skip
    llm = ScriptedAdapter(backend="codex")
    llm.add({"question": "Q", "summary": "s", "angles": angles}, label="scope", delay_s=latency_s)
    llm.add(search, label="search", delay_s=latency_s)
    llm.add(extract, label="extract", delay_s=latency_s)
    llm.add(VERDICT, label="verify", delay_s=latency_s)
    llm.add(report, label="synthesis", delay_s=latency_s)
    return llm


def run(latency_s: float, budget: str | None) -> tuple[int, dict[str, Any], int, float]:
    llm = model(latency_s)
    agentport.factory.create_llm_adapter = lambda *a, **k: llm  # type: ignore[assignment]
    args = ["research", "How do X and Y compare?", "-b", "codex", "--json", "-q"]
    started = time.monotonic()
    result = CliRunner().invoke(app, args + (["--budget", budget] if budget else []))
    elapsed = time.monotonic() - started
    return result.exit_code, json.loads(result.stdout), len(llm.calls), elapsed


def summary(label: str, code: int, data: dict[str, Any], calls: int, elapsed: float) -> None:
    stats = data["stats"]
    outcomes = [c["outcome"] for c in data["claims"]]
    print(f"\n## {label}")
    print(f"exit code: {code}")
    print(f"budgetReached: {data.get('budgetReached')}")
    print(f"model calls made: {calls} (agentCallsMade {stats['agentCallsMade']}, "
          f"refused by the budget {stats.get('callsRefusedBudget', 0)})")  # fmt: skip
    print(f"sources: {len(data['sources'])} ({sum(1 for s in data['sources'] if s['error'])} "
          "not extracted)")  # fmt: skip
    print(f"claims extracted: {stats['claimsExtracted']}; verified: {len(outcomes)} "
          f"({outcomes.count('confirmed')} confirmed, {outcomes.count('refuted')} refuted, "
          f"{outcomes.count('unverified')} unverified); not verified (budget): "
          f"{len(data['notVerified'])}")  # fmt: skip
    print(f"findings: {len(data['findings'])}; confirmed unmerged: {len(data['confirmed'])}; "
          f"synthesis: {stats.get('synthesis')}")  # fmt: skip
    print(f"tokens in/out: {stats['inputTokens']}/{stats['outputTokens']}; "
          f"wall: {elapsed:.2f} s")  # fmt: skip
    print(f"summary: {data['summary']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    plan = plan_research(ResearchConfig())
    half = plan.typical_calls // 2
    print(f"plan: at most {plan.upper_bound_calls} calls, typical {plan.typical_calls}; "
          f"budget: calls={half}; per-call latency {args.latency_ms:g} ms")  # fmt: skip
    code, data, calls, full_s = run(latency, None)
    summary("no budget", code, data, calls, full_s)
    summary(f"--budget calls={half}", *run(latency, f"calls={half}"))
    wall = round(full_s / 2, 3)
    summary(f"--budget wall={wall}", *run(latency, f"wall={wall}"))


if __name__ == "__main__":
    main()
