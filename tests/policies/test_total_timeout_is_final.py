"""A `timeout="total"` failure (the whole call's deadline, `total_timeout_s`) is not retryable,
on every backend, with retries off as with them on: docs/errors.md's rule, decided once where
`ProviderError` picks its default. Table over every CLI backend of the catalog (an executable
that never answers), openai_compat and LiteLLM against a FakeModelServer that never answers.
With retries on, a backend's own limit hit at an attempt's bound is an `attempt` timeout and is
retried (tests/policies/test_call_deadline.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _fake_clis_util import ALL_TOOLS_ONLY
from agentport import create_llm_adapter
from agentport.catalog import all_backends
from agentport.core import (
    BackendKind,
    CompletionConfig,
    ErrorKind,
    Message,
    ProviderError,
    ToolPolicy,
)
from agentport.testing import FakeModelServer, Hang

pytestmark = pytest.mark.anyio

CLI_BACKENDS = sorted(c.name for c in all_backends() if c.kind is BackendKind.cli)
CONFIG = CompletionConfig(total_timeout_s=1.0, idle_timeout_s=30, startup_timeout_s=30)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@given(st.sampled_from(list(ErrorKind)), st.sampled_from([None, "startup", "idle", "attempt",
                                                          "total"]))  # fmt: skip
def test_the_default_retryable_of_a_timeout_follows_which_limit(
    kind: ErrorKind, which: str | None
) -> None:
    error = ProviderError(kind, "x", timeout=which)  # type: ignore[arg-type]
    if kind is ErrorKind.timeout:
        assert error.retryable is (which != "total")
    assert ProviderError(kind, "x", timeout=which, retryable=True).retryable  # type: ignore[arg-type]


def _never_answers(tmp_path: Path) -> Path:
    exe = tmp_path / "never-answers"
    exe.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    exe.chmod(0o755)
    return exe


@pytest.mark.parametrize("backend", CLI_BACKENDS)
async def test_every_cli_backend_total_timeout_is_final(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    options: dict[str, object] = {"executable": str(_never_answers(tmp_path))}
    if backend == "acp":
        options = {"command": [str(_never_answers(tmp_path))]}
    llm = create_llm_adapter(backend, retry=False, **{backend: options})
    # the CLIs that only run with their own tools refuse least privilege before running
    config = CONFIG.model_copy(
        update={"tools": ToolPolicy.cli_defaults()} if backend in ALL_TOOLS_ONLY else {}
    )
    with anyio.fail_after(20):
        error = (await llm.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout, error
    assert error.timeout == "total", error
    assert not error.retryable, error


@pytest.mark.parametrize("backend", ["openai_compat", "litellm"])
async def test_http_backends_total_timeout_is_final(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "litellm":
        pytest.importorskip("litellm")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer() as server:
        server.set_default(Hang())
        if backend == "openai_compat":
            options = {"base_url": server.openai_base_url, "api_key": "k", "stream": False}
        else:
            options = {"model": "openai/m", "api_base": server.openai_base_url, "api_key": "k"}
        llm = create_llm_adapter(backend, retry=False, **{backend: options})
        with anyio.fail_after(20):
            error = (await llm.complete([Message.user("hi")], CONFIG)).failure()
    assert error.kind is ErrorKind.timeout, error
    assert error.timeout == "total", error
    assert not error.retryable, error
