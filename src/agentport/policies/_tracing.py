"""A span per call (OpenTelemetry, the `otel` extra): the policy layer's calls are traced.

`call_span(backend, config)` wraps one call of `RetryingAdapter` and `FailoverAdapter` (so a
failover chain is one span with a child span per member it called) in a span `chat {model}`
(kind CLIENT) with the GenAI semantic conventions' attributes: `gen_ai.operation.name`
"chat", `gen_ai.provider.name` (the backend, or the chain), `gen_ai.request.model`,
`gen_ai.request.max_tokens` / `temperature`, and after the call (`record`)
`gen_ai.response.model`, `gen_ai.usage.input_tokens` / `output_tokens`,
`gen_ai.response.finish_reasons`, or `error.type` = the `ErrorKind` with an ERROR status.
agentport's own: `agentport.label` (the workflow phase or call site,
`CompletionConfig.label`), `agentport.backend` (the backend that answered or failed last),
`agentport.attempts` and `agentport.request_sent` on failure. A CLI's process is a child
span (`exec <cli>`, from `agentport.backends`), which passes `TRACEPARENT` to the CLI.
`note_window` adds the adaptive concurrency window an attempt ran under
(`agentport.concurrency.*`: key, window, in_flight, waited_s, outcome, window_after).
`workflow_span(name, ...)` is the span of one workflow run. Without opentelemetry-api all of
it is a no-op that imports nothing (`agentport.core._telemetry`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from returns.result import Result, Success

from ..core import CompletionConfig, CompletionResponse, ProviderError, annotate_span, span

__all__ = ["call_span", "note_window", "record", "workflow_span"]


@contextmanager
def call_span(backend: str, config: CompletionConfig) -> Iterator[Any]:
    """The span of one call to *backend* with the merged *config* (None without the
    package); `record` its result before the block ends."""
    model = config.model
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": backend,
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": config.max_tokens,
        "gen_ai.request.temperature": config.temperature,
        "agentport.label": config.label,
    }
    with span(f"chat {model}" if model else "chat", attributes, kind="client") as current:
        yield current


def record(current: Any, result: Result[CompletionResponse, ProviderError]) -> None:
    """Put *result* on the span *current* (nothing when it is None)."""
    if current is None:
        return
    from opentelemetry.trace import Status, StatusCode

    if isinstance(result, Success):
        response = result.unwrap()
        found: dict[str, Any] = {
            "agentport.backend": response.backend or None,
            "gen_ai.response.model": response.model,
            "gen_ai.usage.input_tokens": response.usage.input_tokens,
            "gen_ai.usage.output_tokens": response.usage.output_tokens,
            "gen_ai.response.finish_reasons": (
                (response.finish_reason,) if response.finish_reason else None
            ),
        }
    else:
        error = result.failure()
        found = {
            "agentport.backend": error.backend or None,
            "error.type": error.kind.value,
            "agentport.attempts": len(error.attempts) or 1,
            "agentport.request_sent": error.request_sent,
            "gen_ai.usage.input_tokens": error.usage.input_tokens or None,
            "gen_ai.usage.output_tokens": error.usage.output_tokens or None,
        }
        current.set_status(Status(StatusCode.ERROR, str(error)[:300]))
    current.set_attributes({k: v for k, v in found.items() if v is not None})


@contextmanager
def workflow_span(name: str, **attributes: str | int | None) -> Iterator[None]:
    """The span of one workflow run (`deep_research`, `deeprefine`): every call span of the
    run nests under it. `attributes` become `agentport.<key>`."""
    with span(name, {f"agentport.{k}": v for k, v in attributes.items()}):
        yield


def note_window(key: str, slot: Any, after: Any) -> None:
    """Put an attempt's concurrency window on the current span (the call's): *slot* is the
    `_concurrency.Slot` it ran in, *after* the `WindowState` its outcome left. A no-op
    without the package or outside a span."""
    annotate_span(
        {
            "agentport.concurrency.key": key,
            "agentport.concurrency.window": slot.state.window,
            "agentport.concurrency.in_flight": slot.in_flight,
            "agentport.concurrency.waited_s": round(slot.waited_s, 4),
            "agentport.concurrency.outcome": slot.outcome.value,
            "agentport.concurrency.window_after": after.window,
        }
    )
