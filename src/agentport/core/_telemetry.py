"""OpenTelemetry spans, when the `otel` extra (opentelemetry-api) is installed. Not loaded by
`import agentport`; no I/O of its own (the application's SDK exports).

Without the package every helper here is a no-op that imports nothing: `span` yields None
and `trace_env` is empty, so agentport costs nothing extra for users who do not trace. With
it, spans go to whatever `TracerProvider` the application configured (the API's no-op one
when it configured none). Names and attributes follow the OpenTelemetry GenAI semantic
conventions (`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
`gen_ai.response.model`, `gen_ai.usage.input_tokens` / `output_tokens`,
`gen_ai.response.finish_reasons`, `error.type`); agentport's own facts are `agentport.*`.

`trace_env()` is the W3C trace context of the current span as the environment variables
`TRACEPARENT` / `TRACESTATE` (the names the OpenTelemetry environment-carrier spec gives),
which a CLI child reads to continue the trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from types import ModuleType
from typing import Any, Literal

__all__ = ["annotate_span", "span", "trace_env", "tracing_available"]

AttributeValue = str | bool | int | float | tuple[str, ...]


@cache
def _trace() -> ModuleType | None:
    """`opentelemetry.trace`, or None when the package is not installed (looked up once, at
    the first traced call, never at import)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


def tracing_available() -> bool:
    """Whether opentelemetry-api is importable (the `otel` extra)."""
    return _trace() is not None


@contextmanager
def span(
    name: str,
    attributes: Mapping[str, AttributeValue | None],
    kind: Literal["client", "internal"] = "internal",
) -> Iterator[Any]:
    """A span named *name*, current for the block (children nest under it); None-valued
    attributes are left out. Yields the span, or None without the package. An exception
    leaving the block (cancellation included) is recorded on the span and re-raised."""
    trace = _trace()
    if trace is None:
        yield None
        return
    tracer = trace.get_tracer("agentport")
    span_kind = trace.SpanKind.CLIENT if kind == "client" else trace.SpanKind.INTERNAL
    clean = {k: v for k, v in attributes.items() if v is not None}
    with tracer.start_as_current_span(name, kind=span_kind, attributes=clean) as current:
        yield current


def annotate_span(attributes: Mapping[str, AttributeValue]) -> None:
    """Set *attributes* on the current span; a no-op without the package or outside a
    recording span."""
    trace = _trace()
    if trace is None:
        return
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes(dict(attributes))


def trace_env() -> dict[str, str]:
    """`TRACEPARENT` (and `TRACESTATE`) of the current span for a child's environment;
    empty without the package or outside a recording span."""
    if _trace() is None:
        return {}
    from opentelemetry.propagate import inject

    carrier: dict[str, str] = {}
    inject(carrier)
    return {
        key.upper(): value for key, value in carrier.items() if key in ("traceparent", "tracestate")
    }
