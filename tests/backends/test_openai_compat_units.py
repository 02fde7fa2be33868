"""openai_compat without a server: options, request building, error table, stream folding,
and the adapter over `httpx.MockTransport`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from returns.result import Failure

from agentport.backends._openai_wire import FILTERED_WARNING
from agentport.backends.openai_compat import (
    ChatStreamAccumulator,
    EndpointOptions,
    OpenAICompatAdapter,
    build_request,
    classify_http,
    load_options,
    parse_chat_body,
    parse_retry_after,
)
from agentport.catalog import get_capability
from agentport.core import CompletionConfig, ErrorKind, Message, ProviderError

CAP = get_capability("openai_compat")


class City(BaseModel):
    name: str
    population: int


def _adapter(handler: Any, **options: Any) -> OpenAICompatAdapter:
    endpoint = load_options({"base_url": "http://fake.invalid/v1", **options}, environ={})
    return OpenAICompatAdapter(CAP, endpoint, transport=httpx.MockTransport(handler))


def _chat(content: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3,
                  "prompt_tokens_details": {"cached_tokens": 2}},
        **extra,
    }  # fmt: skip


def _sse(*chunks: Any, done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def _delta(text: str | None = None, finish: str | None = None) -> dict[str, Any]:
    delta = {"content": text} if text is not None else {}
    return {"id": "s1", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


# ---- options --------------------------------------------------------------------------------


def test_missing_endpoint_is_a_one_line_config_error() -> None:
    with pytest.raises(ProviderError) as info:
        load_options({}, environ={})
    assert info.value.kind is ErrorKind.config
    assert "base_url" in info.value.message
    assert "\n" not in info.value.message


def test_bad_option_names_the_table_and_field() -> None:
    with pytest.raises(ProviderError) as info:
        load_options({"base_url": "localhost:8080"}, environ={})
    assert info.value.message.startswith("[llm.openai_compat] base_url:")
    with pytest.raises(ProviderError) as info:
        load_options({"base_url": "http://x/v1", "colour": 1}, environ={})
    assert "colour" in info.value.message


def test_env_fallbacks_order_table_then_agentport_then_openai() -> None:
    env = {"AGENTPORT_OPENAI_BASE_URL": "http://a:1/v1/", "OPENAI_BASE_URL": "http://o:2/v1",
           "OPENAI_API_KEY": "sk-openai-key-123456"}  # fmt: skip
    endpoint = load_options({}, environ=env)
    assert endpoint.base_url == "http://a:1/v1"
    assert endpoint.api_key == "sk-openai-key-123456"
    assert load_options({"base_url": "http://t:3/v1"}, environ=env).base_url == "http://t:3/v1"
    only_key = load_options({}, environ={"OPENAI_API_KEY": "sk-x-123456789"})
    assert only_key.base_url == "https://api.openai.com/v1"


# ---- request building -----------------------------------------------------------------------


def test_request_carries_model_sampling_and_schema_format() -> None:
    config = CompletionConfig(model="qwen", temperature=0.3, max_tokens=40)
    body = build_request(
        [Message.system("s"), Message.user("u")],
        config,
        EndpointOptions(),
        json_schema=City.model_json_schema(),
    )
    assert body["model"] == "qwen"
    assert body["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
    ]
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 40
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "City"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["name", "population"]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_request_leaves_out_unset_model_and_uses_completion_tokens_field() -> None:
    options = EndpointOptions(stream=False, max_tokens_field="max_completion_tokens")
    body = build_request([Message.user("u")], CompletionConfig(max_tokens=5), options)
    assert "model" not in body
    assert "stream" not in body
    assert body["max_completion_tokens"] == 5
    assert "max_tokens" not in body


# ---- error table ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "kind", "retryable"),
    [
        (401, '{"error": {"message": "bad key"}}', ErrorKind.auth_required, False),
        (403, "forbidden", ErrorKind.auth_required, False),
        (429, '{"error": {"message": "slow down"}}', ErrorKind.rate_limited, True),
        (429, '{"error": {"code": "insufficient_quota", "message": "no"}}',
         ErrorKind.quota_exhausted, False),  # an exhausted quota is its own kind
        (400, '{"error": {"message": "You have reached your specified API usage limits"}}',
         ErrorKind.quota_exhausted, False),
        (400, '{"error": {"code": "context_length_exceeded", "message": "too long"}}',
         ErrorKind.context_length, False),
        (400, '{"error": "the request exceeds the available context size (n_ctx 2048)"}',
         ErrorKind.context_length, False),
        (400, '{"error": {"message": "temperature must be <= 2"}}', ErrorKind.invalid_request,
         False),
        (404, '{"error": {"message": "model nope not found"}}', ErrorKind.model_not_found,
         False),
        (404, '{"error": {"message": "Not Found"}}', ErrorKind.config, False),
        (400, '{"error": {"message": "blocked", "code": "content_policy_violation"}}',
         ErrorKind.content_filter, False),
        (529, '{"error": {"type": "overloaded_error", "message": "Overloaded"}}',
         ErrorKind.overloaded, True),
        (503, '{"error": {"message": "The model is overloaded. Please try again later."}}',
         ErrorKind.overloaded, True),
        (500, "boom", ErrorKind.server_error, True),
        (503, "", ErrorKind.server_error, True),
    ],
)  # fmt: skip
def test_http_status_maps_to_error_kind(
    status: int, body: str, kind: ErrorKind, retryable: bool
) -> None:
    error = classify_http(status, body, {}, "openai_compat")
    assert (error.kind, error.retryable, error.status) == (kind, retryable, status)


def test_retry_after_is_read_in_seconds_ms_and_http_date() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480) == 10
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert classify_http(429, "", {"Retry-After": "2"}).retry_after == 2.0


def test_error_message_never_leaks_the_api_key() -> None:
    error = classify_http(401, '{"error": {"message": "Incorrect API key sk-abcdefghijklmnop"}}')
    assert "abcdefghijklmnop" not in str(error)


# ---- response parsing -----------------------------------------------------------------------


def test_body_gives_content_usage_and_finish_reason() -> None:
    response = parse_chat_body(_chat("hi"), "openai_compat").unwrap()
    assert (response.content, response.model, response.finish_reason) == ("hi", "m", "stop")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (7, 3)
    assert response.usage.cached_tokens == 2


def test_body_without_choices_is_bad_output_not_empty_success() -> None:
    assert parse_chat_body({"choices": []}).failure().kind is ErrorKind.bad_output
    empty = _chat("")
    empty["choices"][0]["finish_reason"] = "length"
    assert "max_tokens" in parse_chat_body(empty).failure().message


def test_a_filtered_answer_is_never_a_plain_success() -> None:
    """Regression: `finish_reason: content_filter` was a Success flagged only there. A part
    the filter let through is kept with a warning; nothing at all is `content_filter`."""
    partial = _chat("The first half")
    partial["choices"][0]["finish_reason"] = "content_filter"
    kept = parse_chat_body(partial).unwrap()
    assert kept.content == "The first half"
    assert kept.warnings == (FILTERED_WARNING,)
    blocked = _chat("")
    blocked["choices"][0]["finish_reason"] = "content_filter"
    error = parse_chat_body(blocked).failure()
    assert (error.kind, error.retryable) == (ErrorKind.content_filter, False)


def test_stream_split_into_deltas_is_joined_with_usage() -> None:
    acc = ChatStreamAccumulator("x")
    usage = {"id": "s1", "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}}
    for line in _sse(_delta("Hel"), _delta("lo"), _delta(None, "stop"), usage).decode().split("\n"):
        assert acc.feed(line) is None
    response = acc.result().unwrap()
    assert response.content == "Hello"
    assert response.usage.output_tokens == 2


def test_stream_cut_before_the_end_is_a_retryable_network_error() -> None:
    acc = ChatStreamAccumulator("x")
    acc.feed(f"data: {json.dumps(_delta('Hel'))}")
    error = acc.result().failure()
    assert error.kind is ErrorKind.network
    assert error.retryable
    assert error.raw_text == "Hel"


def test_error_event_inside_the_stream_is_classified() -> None:
    acc = ChatStreamAccumulator("x")
    error = acc.feed('data: {"error": {"message": "maximum context length is 10 tokens"}}')
    assert error is not None
    assert error.kind is ErrorKind.context_length


# ---- adapter over MockTransport -------------------------------------------------------------


@pytest.mark.anyio
async def test_adapter_streams_and_sends_bearer_key() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=_sse(_delta("o"), _delta("k", "stop")),
                              headers={"content-type": "text/event-stream"})  # fmt: skip

    adapter = _adapter(handler, api_key="sk-test-123456789")
    response = (await adapter.complete([Message.user("hi")])).unwrap()
    assert response.content == "ok"
    assert response.backend == "openai_compat"
    assert seen[0].url.path == "/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer sk-test-123456789"


@pytest.mark.anyio
async def test_native_schema_answer_is_parsed_into_the_model() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=_chat('{"name": "Oslo", "population": 700000}'))

    adapter = _adapter(handler, stream=False)
    result = await adapter.complete([Message.user("a city")], CompletionConfig(output_schema=City))
    assert result.unwrap().parsed == City(name="Oslo", population=700000)
    assert bodies[0]["response_format"]["type"] == "json_schema"


@pytest.mark.anyio
async def test_prompt_mode_puts_schema_in_prompt_and_reprompts_on_mismatch() -> None:
    bodies: list[dict[str, Any]] = []
    answers = iter(['{"name": "Oslo"}', '{"name": "Oslo", "population": 1}'])

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=_chat(next(answers)))

    adapter = _adapter(handler, stream=False, structured_output="prompt")
    result = await adapter.complete([Message.user("a city")], CompletionConfig(output_schema=City))
    assert result.unwrap().parsed == City(name="Oslo", population=1)
    assert "response_format" not in bodies[0]
    assert "JSON schema" in bodies[0]["messages"][-1]["content"]
    assert "population" in bodies[1]["messages"][-1]["content"]  # the validation error


@pytest.mark.anyio
async def test_choices_are_matched_and_stray_text_reprompted() -> None:
    answers = iter(["Maybe", " <judge>No</judge>\n"])

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=_chat(next(answers)))

    adapter = _adapter(handler, stream=False)
    config = CompletionConfig(choices=("<judge>Yes</judge>", "<judge>No</judge>"))
    assert (await adapter.complete([Message.user("?")], config)).unwrap().content == (
        "<judge>No</judge>"
    )


@pytest.mark.anyio
async def test_ignored_param_warns_or_fails_by_policy() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=_chat("ok"))

    adapter = _adapter(handler, stream=False)
    warned = await adapter.complete([Message.user("q")], CompletionConfig(web_search=True))
    assert any("web_search" in w for w in warned.unwrap().warnings)
    failed = await adapter.complete(
        [Message.user("q")], CompletionConfig(web_search=True, on_ignored="fail")
    )
    assert failed.failure().kind is ErrorKind.unsupported


@pytest.mark.anyio
async def test_connection_refused_is_a_retryable_network_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    result = await _adapter(handler).complete([Message.user("q")])
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.network
    assert result.failure().retryable


@pytest.mark.anyio
async def test_http_error_status_becomes_failure_with_status() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            429, json={"error": {"message": "slow"}}, headers={"Retry-After": "4"}
        )

    error = (await _adapter(handler).complete([Message.user("q")])).failure()
    assert (error.kind, error.status, error.retry_after) == (ErrorKind.rate_limited, 429, 4.0)


def test_factory_builds_it_from_the_options_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentport.factory import create_llm_adapter

    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    adapter = create_llm_adapter(
        "vllm", retry=False, openai_compat={"base_url": "http://127.0.0.1:9/v1"}
    )
    assert isinstance(adapter, OpenAICompatAdapter)
    assert adapter.base_url == "http://127.0.0.1:9/v1"


def test_a_pyproject_without_an_agentport_table_does_not_break_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentport.config import load_settings

    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(tmp_path))  # base_url needs trust

    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    (tmp_path / "agentport.toml").write_text(
        '[llm.openai_compat]\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    llm = load_settings(cwd=tmp_path).llm
    assert llm.options("openai_compat") == {"base_url": "http://127.0.0.1:9/v1"}
