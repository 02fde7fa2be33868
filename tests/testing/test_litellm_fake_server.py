"""litellm routed to `FakeModelServer` as an OpenAI-compatible endpoint (`openai/<model>` with
`api_base`): text, JSON schema, streaming and the faults, on asyncio and trio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip(
    "agentport.backends.litellm", reason="needs the litellm extra", exc_type=ImportError
)
# LiteLLM's own models trip pydantic deprecation and TypedDict warnings: not ours to fix.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

from agentport.backends.litellm import classify_exception  # noqa: E402
from agentport.core import CompletionConfig, ErrorKind, LLMAdapter, Message  # noqa: E402
from agentport.factory import create_llm_adapter  # noqa: E402
from agentport.policies import RetryPolicy, with_retry  # noqa: E402
from agentport.testing import (  # noqa: E402
    CutStream,
    DropConnection,
    FakeModelServer,
    Hang,
    HttpFault,
    JsonReply,
    TextReply,
)


class Verdict(BaseModel):
    claim: str
    supported: bool


def _adapter(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> LLMAdapter:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    return create_llm_adapter(
        "litellm",
        cwd=tmp_path,
        retry=False,
        litellm={"model": "openai/fake-model", "api_base": server.openai_base_url,
                 "api_key": "sk-fake-0123456789", **options},
    )  # fmt: skip


FAST = CompletionConfig(startup_timeout_s=10, idle_timeout_s=10, total_timeout_s=30)


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False])
async def test_text_answer_streamed_or_not(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    server.reply(TextReply("Paris is the capital.", chunk_size=5))
    adapter = _adapter(server, tmp_path, monkeypatch, stream=stream)
    response = (await adapter.complete([Message.user("capital?")], FAST)).unwrap()
    assert response.content == "Paris is the capital."
    assert response.backend == "litellm"
    assert response.usage.output_tokens > 0
    assert server.requests[-1].stream is stream
    assert server.requests[-1].model == "fake-model"


@pytest.mark.anyio
async def test_json_schema_answer_is_parsed(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(JsonReply({"claim": "ice floats", "supported": True}))
    adapter = _adapter(server, tmp_path, monkeypatch)
    config = FAST.model_copy(update={"output_schema": Verdict})
    response = (await adapter.complete([Message.user("judge")], config)).unwrap()
    assert response.parsed == Verdict(claim="ice floats", supported=True)
    assert server.requests[-1].body["response_format"]["type"] == "json_schema"


@pytest.mark.anyio
async def test_401_maps_to_auth_required(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(HttpFault.unauthorized())
    error = await _adapter(server, tmp_path, monkeypatch).complete([Message.user("q")], FAST)
    assert error.failure().kind is ErrorKind.auth_required
    assert not error.failure().retryable


@pytest.mark.anyio
async def test_429_retry_after_reaches_the_retry_policy(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(HttpFault.rate_limited(retry_after=5), "done waiting")
    adapter = _adapter(server, tmp_path, monkeypatch)
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    result = await with_retry(
        lambda: adapter.complete([Message.user("q")], FAST), RetryPolicy(attempts=3), sleep=sleep
    )
    assert result.unwrap().content == "done waiting"
    assert slept == [5.0]
    assert len(server.requests) == 2  # LiteLLM's own retries are off


@pytest.mark.anyio
async def test_500_is_retryable_server_error(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(HttpFault.server_error(), times=None)
    error = await _adapter(server, tmp_path, monkeypatch).complete([Message.user("q")], FAST)
    assert error.failure().kind is ErrorKind.server_error
    assert error.failure().retryable


@pytest.mark.anyio
async def test_dropped_connection_is_retryable(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(DropConnection(), times=None)
    error = await _adapter(server, tmp_path, monkeypatch).complete([Message.user("q")], FAST)
    assert error.failure().kind in (ErrorKind.network, ErrorKind.server_error)
    assert error.failure().retryable


@pytest.mark.anyio
async def test_cut_stream_is_not_a_truncated_success(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(CutStream(text="one two three four five", after_deltas=1), times=None)
    result = await _adapter(server, tmp_path, monkeypatch).complete([Message.user("q")], FAST)
    assert result.failure().retryable


@pytest.mark.anyio
async def test_stalled_stream_ends_at_our_idle_timeout(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(Hang(after_deltas=1))
    adapter = _adapter(server, tmp_path, monkeypatch)
    config = CompletionConfig(startup_timeout_s=10, idle_timeout_s=0.5, total_timeout_s=20)
    error = (await adapter.complete([Message.user("q")], config)).failure()
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "idle")


def test_missing_model_is_a_config_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    adapter = create_llm_adapter("litellm", cwd=tmp_path, retry=False)
    error = anyio.run(adapter.complete, [Message.user("q")]).failure()
    assert error.kind is ErrorKind.config
    assert "openai/" in error.message


def test_exception_table_prefers_the_most_specific_class() -> None:
    import litellm

    exc = litellm.ContextWindowExceededError("too long", model="m", llm_provider="openai")
    error = classify_exception(exc)
    assert error is not None
    assert error.kind is ErrorKind.context_length  # not invalid_request, its base class
    quota = litellm.BadRequestError(
        "You have reached your specified API usage limits", model="m", llm_provider="anthropic"
    )
    error = classify_exception(quota)
    assert error is not None
    # an exhausted quota is its own kind, still not retryable
    assert (error.kind, error.retryable) == (ErrorKind.quota_exhausted, False)
    assert classify_exception(KeyError("bug")) is None  # bugs are not provider errors
