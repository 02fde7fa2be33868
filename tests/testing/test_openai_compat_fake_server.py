"""openai_compat against `FakeModelServer` on 127.0.0.1: text, JSON schema, streaming, and
the faults a real server produces (401, 429 + Retry-After, 500, dropped connection, cut
stream, hang)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agentport.backends.openai_compat import OpenAICompatAdapter
from agentport.core import CompletionConfig, ErrorKind, LLMAdapter, Message
from agentport.factory import create_llm_adapter
from agentport.policies import RetryPolicy, with_retry
from agentport.testing import (
    ApiKind,
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
        "openai_compat",
        cwd=tmp_path,
        retry=False,
        model="fake-model",
        openai_compat={"base_url": server.openai_base_url, "api_key": "sk-fake-0123456789",
                       **options},
    )  # fmt: skip


FAST = CompletionConfig(startup_timeout_s=5, idle_timeout_s=5, total_timeout_s=20)


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False])
async def test_text_answer_with_usage_streamed_or_not(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    server.reply(TextReply("The sky is blue.", chunk_size=4))
    adapter = _adapter(server, tmp_path, monkeypatch, stream=stream)
    result = await adapter.complete([Message.system("be brief"), Message.user("sky?")], FAST)
    response = result.unwrap()
    assert response.content == "The sky is blue."
    assert response.usage.output_tokens > 0
    (request,) = server.requests
    assert request.api is ApiKind.CHAT
    assert request.stream is stream
    assert request.model == "fake-model"
    assert request.system_text == "be brief"
    assert request.header("authorization") == "Bearer sk-fake-0123456789"


@pytest.mark.anyio
async def test_json_schema_is_sent_natively_and_parsed(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(JsonReply({"claim": "water is wet", "supported": True}))
    adapter = _adapter(server, tmp_path, monkeypatch)
    config = FAST.model_copy(update={"output_schema": Verdict})
    response = (await adapter.complete([Message.user("judge")], config)).unwrap()
    assert response.parsed == Verdict(claim="water is wet", supported=True)
    body = server.requests[0].body
    assert body["response_format"]["json_schema"]["schema"]["title"] == "Verdict"


@pytest.mark.anyio
async def test_401_is_auth_required_and_not_retried(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(HttpFault.unauthorized())
    adapter = _adapter(server, tmp_path, monkeypatch)
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    result = await with_retry(
        lambda: adapter.complete([Message.user("q")], FAST), RetryPolicy(attempts=3), sleep=sleep
    )
    error = result.failure()
    assert (error.kind, error.status) == (ErrorKind.auth_required, 401)
    assert len(server.requests) == 1
    assert slept == []


@pytest.mark.anyio
async def test_429_retry_after_is_honoured_by_the_retry_policy(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(HttpFault.rate_limited(retry_after=7), "after the wait")
    adapter = _adapter(server, tmp_path, monkeypatch)
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    policy = RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=30)
    result = await with_retry(
        lambda: adapter.complete([Message.user("q")], FAST), policy, sleep=sleep
    )
    assert result.unwrap().content == "after the wait"
    assert slept == [7.0]
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_500_is_a_retryable_server_error(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(HttpFault.server_error())
    adapter = _adapter(server, tmp_path, monkeypatch)
    error = (await adapter.complete([Message.user("q")], FAST)).failure()
    assert (error.kind, error.status, error.retryable) == (ErrorKind.server_error, 500, True)


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False])
async def test_dropped_connection_is_a_retryable_network_error(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    server.reply(DropConnection())
    adapter = _adapter(server, tmp_path, monkeypatch, stream=stream)
    error = (await adapter.complete([Message.user("q")], FAST)).failure()
    assert error.kind is ErrorKind.network
    assert error.retryable


@pytest.mark.anyio
async def test_stream_cut_mid_answer_is_network_not_a_truncated_success(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(CutStream(text="one two three four", after_deltas=1))
    adapter = _adapter(server, tmp_path, monkeypatch)
    error = (await adapter.complete([Message.user("q")], FAST)).failure()
    assert error.kind is ErrorKind.network
    assert error.retryable


@pytest.mark.anyio
async def test_silent_server_hits_the_startup_timeout(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(Hang())
    adapter = _adapter(server, tmp_path, monkeypatch)
    config = CompletionConfig(startup_timeout_s=0.3, idle_timeout_s=5, total_timeout_s=10)
    error = (await adapter.complete([Message.user("q")], config)).failure()
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "startup")


@pytest.mark.anyio
async def test_stream_that_stalls_after_some_output_hits_the_idle_timeout(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(Hang(after_deltas=1))
    adapter = _adapter(server, tmp_path, monkeypatch)
    config = CompletionConfig(startup_timeout_s=5, idle_timeout_s=0.3, total_timeout_s=10)
    error = (await adapter.complete([Message.user("q")], config)).failure()
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "idle")


@pytest.mark.anyio
async def test_retrying_adapter_from_the_factory_recovers_from_a_500(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    server.script(HttpFault.server_error(), "second time lucky")
    adapter = create_llm_adapter(
        "ollama",
        cwd=tmp_path,
        retry_attempts=2,
        retry_base_delay_s=0.01,
        retry_max_delay_s=0.01,
        openai_compat={"base_url": server.openai_base_url},
    )
    assert not isinstance(adapter, OpenAICompatAdapter)  # wrapped in the retry policy
    result = await adapter.complete([Message.user("q")], FAST)
    assert result.unwrap().content == "second time lucky"
    assert "model" not in server.requests[-1].body  # no model configured: left out


def test_cli_complete_with_choices_against_an_env_configured_endpoint(
    server: FakeModelServer, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    server.script("I think <judge>No</judge>", "<judge>Yes</judge>")
    env = {**os.environ, "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
           "AGENTPORT_OPENAI_BASE_URL": server.openai_base_url}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-m", "agentport", "complete", "Is the sky blue?", "-b", "vllm",
         "--choice", "<judge>Yes</judge>", "--choice", "<judge>No</judge>"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "<judge>No</judge>"  # the one choice its first answer held
    assert "<judge>Yes</judge>" in server.requests[0].user_text
