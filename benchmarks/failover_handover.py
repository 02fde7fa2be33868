"""How long a failover chain takes to hand over: `backend = ["openai_compat", "echo"]`, the
endpoint answering 429 with `Retry-After: 20` (and, second case, HTTP 503), on
FakeModelServer. Goal: handover <= 2 s (the chain must not sleep on a member's Retry-After).

Usage: python benchmarks/failover_handover.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import anyio

from agentport import create_llm_adapter
from agentport.core import Message
from agentport.testing import FakeModelServer, HttpFault


async def _once(fault: HttpFault) -> tuple[float, str, int]:
    with FakeModelServer() as server:
        server.script(*[fault] * 5)
        chain = create_llm_adapter(
            ["openai_compat", "echo"],
            openai_compat={"base_url": server.openai_base_url, "api_key": "k"},
        )
        started = time.perf_counter()
        response = (await chain.complete([Message.user("hi")])).unwrap()
        return time.perf_counter() - started, response.backend, len(server.model_requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ["AGENTPORT_ALLOW_REAL_BACKENDS"] = "1"
    faults = {
        "429 Retry-After: 20": HttpFault.rate_limited(retry_after=20),
        "503": HttpFault(503, "fake: overloaded"),
    }
    for name, fault in faults.items():
        times = []
        for _ in range(args.runs):
            seconds, backend, requests = anyio.run(_once, fault)
            times.append(seconds)
        print(
            f"{name:>20}: handover median {statistics.median(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms over {args.runs} runs; answered by {backend}, "
            f"{requests} request(s) to the first member   (goal: <= 2000 ms)"
        )


if __name__ == "__main__":
    main()
