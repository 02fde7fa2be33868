"""What usage and budgets count: requests, or only answers? Four calls a user makes, on
openai_compat against `FakeModelServer` (the real HTTP path, the factory's default policies):

1. a structured answer that needs two re-asks (three requests of 100 output tokens each);
2. a structured call that never matches (schema_retries=2: three requests), a failure;
3. a call whose first two attempts fail after reporting usage (a CLI's usage line), then
   succeeds (the policy layer's retries; in-process adapter);
4. a budget of 500 output tokens over calls of 200 each: what was spent when it refused.

Prints one table; run it on two checkouts to compare (`PYTHONPATH=<checkout>/src`).

    python benchmarks/budget_accounting.py
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import anyio
from pydantic import BaseModel
from returns.result import Failure, Result, Success

from agentport import create_llm_adapter
from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    Usage,
)
from agentport.policies import Budget, BudgetAdapter, RetryingAdapter, RetryPolicy
from agentport.testing import FakeModelServer, JsonReply, TextReply, TokenUsage


class Capital(BaseModel):
    country: str
    city: str


BAD = TextReply("Paris, I think", usage=TokenUsage(input_tokens=50, output_tokens=100))
GOOD = JsonReply({"country": "France", "city": "Paris"},
                 usage=TokenUsage(input_tokens=50, output_tokens=100))  # fmt: skip


def _out(value: object) -> int:
    usage = getattr(value, "usage", None)
    return usage.output_tokens if isinstance(usage, Usage) else 0


class _Told:
    backend = "told"

    def __init__(self, results: list[Result[CompletionResponse, ProviderError]]) -> None:
        self.results = results

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        return self.results.pop(0)


async def _no_sleep(_: float) -> None:
    return None


def _failed_with(output_tokens: int) -> Failure[ProviderError]:
    error = ProviderError(ErrorKind.server_error, "died after its usage line")
    error.__dict__["usage"] = Usage(output_tokens=output_tokens)  # also on a checkout without it
    return Failure(error)


async def main() -> None:
    os.environ["AGENTPORT_ALLOW_REAL_BACKENDS"] = "1"
    rows: list[tuple[str, str, str]] = []
    with FakeModelServer() as server:
        options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123"}
        llm = create_llm_adapter("openai_compat", model="m", openai_compat=options)
        config = CompletionConfig(output_schema=Capital, schema_retries=2)
        server.script(BAD, BAD, GOOD)
        result = await llm.complete([Message.user("capital of France?")], config)
        rows.append(("structured answer after 2 re-asks", "300", str(_out(result.unwrap()))))
        server.reset()
        server.set_default(BAD)
        result = await llm.complete([Message.user("capital?")], config)
        rows.append(("schema_mismatch after 3 requests", "300", str(_out(result.failure()))))

    told = _Told([_failed_with(40), _failed_with(40), Success(CompletionResponse(
        content="ok", usage=Usage(output_tokens=40)))])  # fmt: skip
    retried = RetryingAdapter(told, RetryPolicy(attempts=3), sleep=_no_sleep)
    result = await retried.complete([Message.user("hi")])
    rows.append(("success after 2 failed attempts (40 each)", "120", str(_out(result.unwrap()))))

    each = Success(CompletionResponse(content="ok", usage=Usage(output_tokens=200)))
    budget = BudgetAdapter(_Told([each] * 10), Budget(output_tokens=500))
    made = 0
    while isinstance(await budget.complete([Message.user("hi")]), Success):
        made += 1
    rows.append(
        ("budget 500 output tokens, 200 a call: spent", "<= 500", f"{budget.spent.output_tokens}")
    )

    print("| case | every request counted | reported |")
    print("| --- | --- | --- |")
    for case, want, got in rows:
        print(f"| {case} | {want} | {got} |")


if __name__ == "__main__":
    anyio.run(main)
