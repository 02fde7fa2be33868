"""Deep research: wall time versus the critical-path bound at CONCURRENCY 10.

A scripted model answers every phase after a latency drawn per call (seeded): scope 2,
search 1-3, extract 1-4, verify 0.5-2, synthesis 3 time units. Five angles each find 4-6
URLs (some shared across angles, so dedup and the soft fetch budget are exercised), every
source yields 2-5 claims, 25 claims x 3 votes are verified.

The lower bound of any schedule with C calls in flight:
    scope + max(longest angle chain search+slowest fetch, fetch-phase work / C)
          + max(slowest vote, verify work / C) + synthesis
(the phases separated by the seed's barrier; speculative verification may overlap them, the
bound does not credit that). Goal: wall / bound <= 1.10, and never more than CONCURRENCY
calls in flight. `--barrier` measures the original's strict barrier.

    python benchmarks/deep_research_concurrency.py [--unit 0.2] [--runs 10] [--barrier]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import time
from collections import defaultdict
from typing import Any

import anyio

from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import ResearchConfig, run_research

LATENCY = {
    "scope": (2, 2),
    "search": (1, 3),
    "extract": (1, 4),
    "verify": (0.5, 2),
    "synthesis": (3, 3),
}


class Bench:
    def __init__(self, seed: int, unit: float) -> None:
        self.seed = seed
        self.unit = unit
        self.in_flight = 0
        self.peak = 0
        self.lat: dict[str, list[tuple[str, float]]] = defaultdict(list)

    def rng(self, call: Call) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}:{call.prompt}".encode()).hexdigest()
        return random.Random(int(digest[:16], 16))

    def reply(self, label: str, answer: Any) -> Any:
        async def run(call: Call) -> Any:
            lo, hi = LATENCY[label]
            latency = self.rng(call).uniform(lo, hi)
            tag = ""
            if m := re.search(r"Searcher: (\S+)|Found via:\*\* (\S+) search", call.prompt):
                tag = m.group(1) or m.group(2)
            self.lat[label].append((tag, latency))
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                await anyio.sleep(latency * self.unit)
            finally:
                self.in_flight -= 1
            return answer(call) if callable(answer) else answer

        return run

    def model(self) -> ScriptedAdapter:
        angles = [{"label": f"a{i}", "query": f"q{i}"} for i in range(5)]

        def search(call: Call) -> dict[str, Any]:
            r = self.rng(call)
            return {
                "results": [
                    {
                        "url": f"https://site{r.randrange(40)}.org/p",
                        "title": "t",
                        "relevance": r.choice(["high", "high", "medium", "low"]),
                    }
                    for _ in range(r.randint(4, 6))
                ]
            }

        def extract(call: Call) -> dict[str, Any]:
            r = self.rng(call)
            return {
                "sourceQuality": r.choice(["primary", "secondary", "blog"]),
                "claims": [
                    {
                        "claim": f"claim {r.random()}",
                        "quote": "q",
                        "importance": r.choice(["central", "supporting", "tangential"]),
                    }
                    for _ in range(r.randint(2, 5))
                ],
            }

        llm = ScriptedAdapter()
        llm.add(
            self.reply("scope", {"question": "Q", "summary": "s", "angles": angles}), label="scope"
        )
        llm.add(self.reply("search", search), label="search")
        llm.add(self.reply("extract", extract), label="extract")
        verdict = {"refuted": False, "evidence": "e", "confidence": "high"}
        llm.add(self.reply("verify", verdict), label="verify")

        def synthesis(call: Call) -> dict[str, Any]:
            # a usable answer (it cites a fetched source and restates a confirmed claim): a
            # degenerate one is asked again, a second synthesis the bound does not count
            url = re.search(r"https://site\d+\.org/p", call.prompt)
            claim = re.search(r"claim 0\.\d+", call.prompt)
            finding = {
                "claim": claim.group(0) if claim else "claim",
                "sources": [url.group(0)] if url else [],
                "evidence": "q",
                "confidence": "high",
            }
            return {"summary": "the confirmed claims agree", "findings": [finding],
                    "caveats": "c", "openQuestions": []}  # fmt: skip

        llm.add(self.reply("synthesis", synthesis), label="synthesis")
        return llm

    def bound(self, c: int) -> float:
        chains: dict[str, float] = {}
        for tag, lat in self.lat["search"]:
            chains[tag] = lat
        slowest_fetch: dict[str, float] = defaultdict(float)
        for tag, lat in self.lat["extract"]:
            slowest_fetch[tag] = max(slowest_fetch[tag], lat)
        chain = max(chains[t] + slowest_fetch[t] for t in chains)
        work_a = sum(x for _, x in self.lat["search"]) + sum(x for _, x in self.lat["extract"])
        votes = [x for _, x in self.lat["verify"]]
        phase_a = max(chain, work_a / c)
        phase_v = max(max(votes), sum(votes) / c) if votes else 0.0
        scope = self.lat["scope"][0][1]
        synth = self.lat["synthesis"][0][1] if self.lat["synthesis"] else 0.0
        return (scope + phase_a + phase_v + synth) * self.unit


async def one(seed: int, unit: float, speculative: bool = True) -> dict[str, Any]:
    bench = Bench(seed, unit)
    cfg = ResearchConfig(assume_web_tools=True, speculative_verify=speculative)
    started = time.perf_counter()
    report = await run_research("Q", bench.model(), config=cfg)
    wall = time.perf_counter() - started
    bound = bench.bound(cfg.CONCURRENCY)
    return {
        "seed": seed,
        "calls": report.stats["agentCallsMade"],
        "fetches": report.stats["sourcesFetched"],
        "votes": len(bench.lat["verify"]),
        "wall_s": round(wall, 3),
        "bound_s": round(bound, 3),
        "ratio": round(wall / bound, 3),
        "max_in_flight": bench.peak,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--unit", type=float, default=0.2, help="seconds per latency unit")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument(
        "--barrier", action="store_true", help="no speculative verification (the original)"
    )
    args = ap.parse_args()
    rows = [anyio.run(one, seed, args.unit, not args.barrier) for seed in range(args.runs)]
    for row in rows:
        print(json.dumps(row))
    ratios = sorted(r["ratio"] for r in rows)
    summary = {
        "runs": len(rows),
        "median_ratio": ratios[len(ratios) // 2],
        "mean_ratio": round(sum(ratios) / len(ratios), 3),
        "worst_ratio": ratios[-1],
        "runs_within_goal": sum(1 for r in ratios if r <= 1.10),
        "goal_ratio": 1.10,
        "max_in_flight": max(r["max_in_flight"] for r in rows),
        "goal_in_flight": 10,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
