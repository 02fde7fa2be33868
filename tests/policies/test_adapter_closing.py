"""Every adapter the factory builds is an async context manager (`LLMAdapter` declares
`aclose`, `__aenter__`, `__aexit__`): for every backend of the catalog, bare and under the
policy layer, and for a failover chain, `async with` gives the adapter back, closes it on
the way out (also when the body raises) and a second `aclose()` is harmless. Building an
adapter starts nothing, so real backends are allowed here without running any."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from returns.result import Result, Success

from agentport import create_llm_adapter
from agentport._guard import ALLOW_ENV
from agentport.catalog import all_backends
from agentport.core import (
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    LLMAdapter,
    Message,
    ProviderError,
)
from agentport.policies import Budget, BudgetAdapter, RetryingAdapter

_OPTIONS = {"openai_compat": {"openai_compat": {"base_url": "http://127.0.0.1:9/v1"}}}


@pytest.fixture(autouse=True)
def _allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(tmp_path))


class _Boom(Exception):
    pass


async def _closes(adapter: LLMAdapter) -> None:
    assert isinstance(adapter, LLMAdapter)
    async with adapter as entered:
        assert entered is adapter
    with pytest.raises(_Boom):
        async with adapter:
            raise _Boom
    await adapter.aclose()
    await adapter.aclose()


@pytest.mark.parametrize("name", [c.name for c in all_backends()])
@pytest.mark.parametrize("retry", [False, True], ids=["bare", "policies"])
def test_every_backend_adapter_is_an_async_context_manager(
    name: str, retry: bool, tmp_path: Path
) -> None:
    try:
        adapter = create_llm_adapter(name, cwd=tmp_path, retry=retry, **_OPTIONS.get(name, {}))
    except ProviderError as exc:  # litellm, local: their extra is not installed here
        if exc.kind is not ErrorKind.not_installed:
            raise
        pytest.skip(exc.message)
    anyio.run(_closes, adapter)


def test_a_failover_chain_is_one_too(tmp_path: Path) -> None:
    anyio.run(_closes, create_llm_adapter("echo,scripted", cwd=tmp_path))


class _Kept(ClosableAdapter):
    """An adapter that keeps something between calls and counts its closes."""

    backend = "kept"

    def __init__(self) -> None:
        self.closed = 0

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        return Success(CompletionResponse(content="ok", backend=self.backend))

    async def aclose(self) -> None:
        self.closed += 1


def test_leaving_a_wrapper_closes_what_it_wraps_once() -> None:
    inner = _Kept()

    async def main() -> None:
        async with RetryingAdapter(BudgetAdapter(inner, Budget(calls=1))) as llm:
            assert (await llm.complete([Message.user("q")])).unwrap().content == "ok"
            assert inner.closed == 0

    anyio.run(main)
    assert inner.closed == 1


def test_a_callers_adapter_without_aclose_is_still_wrapped_and_left_as_is() -> None:
    class _Bare:  # written before LLMAdapter declared aclose
        backend = "bare"

        async def complete(
            self, messages: Sequence[Message], config: CompletionConfig | None = None
        ) -> Result[CompletionResponse, ProviderError]:
            return Success(CompletionResponse(content="ok", backend=self.backend))

    async def main() -> None:
        async with BudgetAdapter(_Bare(), Budget(calls=1)) as llm:  # type: ignore[arg-type]
            assert (await llm.complete([Message.user("q")])).unwrap().content == "ok"

    anyio.run(main)
