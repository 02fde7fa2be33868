"""OpenTelemetry spans with the SDK's in-memory exporter, the way an application that traces
would see them: a call made through the factory is a CLIENT span `chat {model}` with the
GenAI semantic conventions' attributes; a failure has `error.type` and an ERROR status; a
CLI's process is a child span whose context reaches the CLI as `TRACEPARENT`; a failover
chain is one span with a child per member it called; without the package nothing is
imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra and opentelemetry-sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from _runner_util import FAKE_CLI, FIXTURES
from agentport import create_llm_adapter
from agentport.core import CompletionConfig, Message
from agentport.policies import workflow_span
from agentport.testing import FakeModelServer, HttpFault, TextReply, TokenUsage

pytestmark = pytest.mark.anyio
EXPORTER = InMemorySpanExporter()


@pytest.fixture(autouse=True)
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # once per process: the global is set once
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def _http(
    server: FakeModelServer, tmp: Path, backend: Any = "openai_compat", **overrides: Any
) -> Any:
    options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123"}
    return create_llm_adapter(
        backend, cwd=tmp, model="fake-model", openai_compat=options, **overrides
    )


def _by_name(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


async def test_a_call_is_a_client_span_with_the_genai_attributes(
    spans: InMemorySpanExporter, server: FakeModelServer, tmp_path: Path
) -> None:
    server.reply(TextReply("Paris.", usage=TokenUsage(input_tokens=21, output_tokens=3)))
    llm = _http(server, tmp_path)
    config = CompletionConfig(label="scope", max_tokens=50)
    assert (await llm.complete([Message.user("capital?")], config)).unwrap().content == "Paris."
    (call,) = _by_name(spans, "chat fake-model")
    attributes = dict(call.attributes or {})
    assert call.kind is SpanKind.CLIENT
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai_compat"
    assert attributes["gen_ai.request.model"] == "fake-model"
    assert attributes["gen_ai.request.max_tokens"] == 50
    assert attributes["gen_ai.usage.input_tokens"] == 21
    assert attributes["gen_ai.usage.output_tokens"] == 3
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["agentport.label"] == "scope"
    assert call.status.status_code is not StatusCode.ERROR


async def test_a_failed_call_has_its_error_type_and_an_error_status(
    spans: InMemorySpanExporter, server: FakeModelServer, tmp_path: Path
) -> None:
    server.set_default(HttpFault.server_error())
    llm = _http(server, tmp_path, retry_attempts=2, retry_base_delay_s=0.01)
    assert (await llm.complete([Message.user("hi")])).failure().kind.value == "server_error"
    (call,) = _by_name(spans, "chat fake-model")
    attributes = dict(call.attributes or {})
    assert attributes["error.type"] == "server_error"
    assert attributes["agentport.attempts"] == 2
    assert attributes["agentport.request_sent"] is True
    assert call.status.status_code is StatusCode.ERROR


async def test_a_cli_process_is_a_child_span_and_the_cli_gets_its_traceparent(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    exe = tmp_path / "fake-agent"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLI}" "$@"\n')
    exe.chmod(0o755)
    record = tmp_path / "record.json"
    env = {
        "FAKE_CLI_STDIN": "read",
        "FAKE_CLI_RECORD": str(record),
        "FAKE_CLI_STDOUT": str(FIXTURES / "codex" / "ok-json.stdout"),
    }
    llm = create_llm_adapter("codex", codex={"executable": str(exe), "env": env})
    with workflow_span("deep_research", mode="web"):
        assert (await llm.complete([Message.user("Say hi")])).unwrap().content
    (run,) = _by_name(spans, "deep_research")
    (call,) = _by_name(spans, "chat")
    (process,) = _by_name(spans, "exec fake-agent")
    assert call.parent is not None
    assert call.parent.span_id == run.context.span_id
    assert process.parent is not None
    assert process.parent.span_id == call.context.span_id
    assert dict(process.attributes or {})["process.exit.code"] == 0
    assert dict(run.attributes or {})["agentport.mode"] == "web"
    sent = json.loads(record.read_text())["env"]["TRACEPARENT"]
    version, trace_id, span_id, _flags = sent.split("-")
    assert (version, int(trace_id, 16), int(span_id, 16)) == (
        "00",
        process.context.trace_id,
        process.context.span_id,
    )


async def test_a_failover_chain_is_one_span_with_a_child_per_member_called(
    spans: InMemorySpanExporter, server: FakeModelServer, tmp_path: Path
) -> None:
    server.set_default(HttpFault.rate_limited(retry_after=30))
    llm = _http(server, tmp_path, backend=["openai_compat", "echo"])
    assert (await llm.complete([Message.user("hi")])).unwrap().backend == "echo"
    finished = spans.get_finished_spans()
    chain = next(s for s in finished if dict(s.attributes or {}).get("gen_ai.provider.name")
                 == "openai_compat,echo")  # fmt: skip
    members = [s for s in finished if s.parent and s.parent.span_id == chain.context.span_id]
    assert [dict(s.attributes or {})["gen_ai.provider.name"] for s in members] == [
        "openai_compat",
        "echo",
    ]
    assert dict(members[0].attributes or {})["error.type"] == "rate_limited"
    assert dict(chain.attributes or {})["agentport.backend"] == "echo"


def test_without_the_package_nothing_is_imported_and_calls_still_answer() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "import anyio\n"
        "from agentport import create_llm_adapter, Message\n"
        "from agentport.core._telemetry import tracing_available\n"
        "r = anyio.run(create_llm_adapter('echo').complete, [Message.user('hi')])\n"
        "assert r.unwrap().content, r\n"
        "loaded = [m for m in sys.modules if m.startswith('opentelemetry') and sys.modules[m]]\n"
        "print(tracing_available(), loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False []"


async def test_a_call_span_shows_the_concurrency_window_it_ran_under(
    spans: InMemorySpanExporter, server: FakeModelServer, tmp_path: Path
) -> None:
    server.script(HttpFault.rate_limited(retry_after=0), TextReply("ok"))
    llm = _http(server, tmp_path, retry_base_delay_s=0.01)
    assert (await llm.complete([Message.user("hi")])).unwrap().content == "ok"
    (call,) = _by_name(spans, "chat fake-model")
    attributes = dict(call.attributes or {})
    # the 429 halved openai_compat's catalog start (8); the retry ran under the halved window
    assert attributes["agentport.concurrency.key"] == f"openai_compat@127.0.0.1:{server.port}"
    assert attributes["agentport.concurrency.window"] == 4
    assert attributes["agentport.concurrency.outcome"] == "success"
    assert attributes["agentport.concurrency.window_after"] == 4
    assert attributes["agentport.concurrency.in_flight"] == 1
