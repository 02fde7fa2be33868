"""Added latency of a failover chain step over a direct call (issue 12).

In-process adapters that answer at once, so only agentport's policy layer is measured:

- direct: `RetryingAdapter(answer)` with the shared cooldown store (what the factory builds);
- chain, passed over: `FailoverAdapter([codex cooling down, answer])`: the first member is
  skipped after one cooldown-store read, the second answers;
- chain, failed over: `FailoverAdapter([codex answering quota_exhausted, answer])`: the first
  member is called, fails with an exhausted window (recorded in the store), the second
  answers; the store is cleared before each run so the first member is called every time.

Reports the median per call and the added milliseconds over direct. No real backend.

    python benchmarks/failover_chain_step.py [--runs 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from returns.result import Failure, Result, Success


async def main(runs: int) -> None:
    from agentport.catalog import get_capability
    from agentport.core import (
        CompletionConfig,
        CompletionResponse,
        ErrorKind,
        LLMAdapter,
        Message,
        ProviderError,
        as_messages,
    )
    from agentport.policies import (
        ChainMember,
        CooldownStore,
        FailoverAdapter,
        RetryingAdapter,
        RetryPolicy,
    )

    class Answer:
        def __init__(self, backend: str, exhausted: bool = False) -> None:
            self.backend = backend
            self.exhausted = exhausted

        async def complete(
            self, messages: Sequence[Message], config: CompletionConfig | None = None
        ) -> Result[CompletionResponse, ProviderError]:
            if self.exhausted:
                return Failure(
                    ProviderError(
                        ErrorKind.quota_exhausted, "You've hit your usage limit.",
                        backend=self.backend, retryable=False,
                        retry_at=datetime.now(UTC) + timedelta(hours=1),
                    )
                )  # fmt: skip
            return Success(CompletionResponse(content="ok", backend=self.backend))

    with tempfile.TemporaryDirectory(prefix="agentport-bench-") as tmp:
        store = CooldownStore(Path(tmp) / "cooldown.sqlite3")

        def wrapped(adapter: Answer) -> RetryingAdapter:
            return RetryingAdapter(
                adapter, RetryPolicy(attempts=1), cooldown=store,
                capability=get_capability(adapter.backend),
            )  # fmt: skip

        def member(adapter: Answer) -> ChainMember:
            built = wrapped(adapter)

            def build() -> LLMAdapter:
                return built

            return ChainMember(adapter.backend, build, get_capability(adapter.backend))

        direct = wrapped(Answer("claude"))
        passed = FailoverAdapter(
            [member(Answer("codex")), member(Answer("claude"))], cooldown=store
        )
        failed = FailoverAdapter(
            [member(Answer("codex", exhausted=True)), member(Answer("claude"))], cooldown=store
        )
        messages = as_messages("hi")
        times: dict[str, list[float]] = {"direct": [], "passed over": [], "failed over": []}
        for _ in range(runs):
            store.clear()
            began = time.perf_counter()
            assert isinstance(await direct.complete(messages), Success)
            times["direct"].append(time.perf_counter() - began)
            store.record("codex", datetime.now(UTC) + timedelta(hours=1))
            began = time.perf_counter()
            result = await passed.complete(messages)
            times["passed over"].append(time.perf_counter() - began)
            assert result.unwrap().skipped[0].called is False
            store.clear()
            began = time.perf_counter()
            result = await failed.complete(messages)
            times["failed over"].append(time.perf_counter() - began)
            assert result.unwrap().skipped[0].kind is ErrorKind.quota_exhausted
        base = statistics.median(times["direct"])
        print(f"runs: {runs}  (store: SQLite WAL in {tmp}; pid {os.getpid()})")
        for name, values in times.items():
            median = statistics.median(values)
            p90 = statistics.quantiles(values, n=10)[-1]
            added = (median - base) * 1000
            print(
                f"{name:12s} median {median * 1000:7.3f} ms  p90 {p90 * 1000:7.3f} ms  "
                f"added over direct {added:+7.3f} ms"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    anyio.run(main, parser.parse_args().runs)
