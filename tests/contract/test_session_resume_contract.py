"""Honest resume against the REAL CLIs (the pinned binaries of .ci/steps/20-agent-clis and
21-more-agent-clis) and FakeModelServer on 127.0.0.1: resuming a session id the CLI does not
have is a typed failure, never an answer from a new session; resuming one it has continues
it. Loopback only: run under `unshare -n` (scripts/test.sh).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

from _more_clis_util import network_isolated
from _session_util import cli_options, model_for
from agentport import create_llm_adapter
from agentport.catalog import get_capability
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    LLMAdapter,
    Param,
    ParamSupport,
    ToolPolicy,
    as_messages,
)
from agentport.testing import ALLOW_ENV, FakeModelServer

pytestmark = [
    pytest.mark.contract,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not network_isolated(), reason="run under `unshare -n` (loopback only) to reach no host"
    ),
]

CLIS = ("claude", "codex", "gemini", "opencode", "qwen", "pi", "copilot", "grok")
UNKNOWN = "0badc0de-0000-4000-8000-000000000000"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Any:
    with FakeModelServer(default="hello from fake") as srv:
        yield srv


def _adapter(
    cli: str, srv: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[LLMAdapter, CompletionConfig]:
    monkeypatch.setenv(ALLOW_ENV, "1")
    model = model_for(cli)
    options = cli_options(cli, srv, tmp_path / "home")
    adapter = create_llm_adapter(cli, retry=False, model=model, **{cli: options})
    work = tmp_path / "work"
    work.mkdir()
    config = CompletionConfig(
        model=model, cwd=work, idle_timeout_s=30, total_timeout_s=120,
        # grok runs only with its own tools
        tools=ToolPolicy.cli_defaults() if cli == "grok" else ToolPolicy(),
    )  # fmt: skip
    return adapter, config


@pytest.mark.parametrize("cli", CLIS)
async def test_resuming_an_unknown_session_is_a_typed_failure(
    cli: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter, config = _adapter(cli, server, tmp_path, monkeypatch)
    asked = config.model_copy(update={"session_id": UNKNOWN})
    result = await adapter.complete(as_messages("third question"), asked)
    error = result.failure()
    if get_capability(cli).support(Param.session_resume) is ParamSupport.IGNORED:
        assert error.kind is ErrorKind.unsupported, error  # refused before the CLI starts
        assert error.request_sent is False
    else:
        assert error.kind is ErrorKind.session_not_found, error
        assert error.details["session_id"] == UNKNOWN
    assert not error.retryable
    assert server.model_requests == [], "a model request was made for a session that is not"


@pytest.mark.parametrize(
    "cli",
    [c for c in CLIS if get_capability(c).support(Param.session_resume) is ParamSupport.NATIVE],
)
async def test_resuming_a_known_session_continues_it(
    cli: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter, config = _adapter(cli, server, tmp_path, monkeypatch)
    server.script("first answer", "second answer")
    first = await adapter.complete(as_messages("first question"), config)
    assert isinstance(first, Success), first
    session = first.unwrap().raw.session_id
    assert session is not None
    resumed = config.model_copy(update={"session_id": session})
    second = await adapter.complete(as_messages("second question"), resumed)
    assert isinstance(second, Success), second
    assert second.unwrap().raw.session_id == session
    assert "first answer" in json.dumps(server.model_requests[-1].body)
