"""The real gemini and qwen cut a prompt over 8 MiB on stdin and answer the prefix
(`readStdin`: 8 MiB of UTF-8, a warning, stdin destroyed): against the fake model server,
with the spec's up-front limit lifted, gemini exits 0 after reading 8 MiB and the run fails
`invalid_request` naming the bytes it took (qwen refuses the prefix itself); with the limit
(the default), the prompt is refused before the CLI starts and nothing reaches the server.
Loopback only: run under `unshare -n` (scripts/test.sh)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from _more_clis_util import cli_executable, network_isolated
from agentport import create_llm_adapter
from agentport.backends import gemini, qwen
from agentport.core import CompletionConfig, ErrorKind, Message
from agentport.testing import FakeModelServer

pytestmark = [
    pytest.mark.contract,
    pytest.mark.anyio,
    pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)"),
]
PROMPT = "a" * ((8 << 20) + (1 << 20))  # 9 MiB
CONFIG = CompletionConfig(startup_timeout_s=60, idle_timeout_s=60, total_timeout_s=120)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(default="the answer to a cut prompt") as srv:
        yield srv


def _options(cli: str, server: FakeModelServer, home: Path) -> dict[str, Any]:
    if cli == "gemini":
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"maxAttempts": 1, "disableAutoUpdate": True, "disableUpdateNag": True},
            "privacy": {"usageStatisticsEnabled": False},
        }))  # fmt: skip
        return {"base_url": server.gemini_base_url, "api_key": "test-key"}
    return {"base_url": server.openai_base_url, "api_key": "test-key", "max_retries": 0}


@pytest.mark.parametrize("module", [gemini, qwen], ids=["gemini", "qwen"])
async def test_a_prompt_over_8_mib_is_never_answered_as_if_whole(
    module: Any, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = module.SPEC.name
    exe = cli_executable(cli)
    if exe is None:
        pytest.skip(f"{cli} not installed (.ci/steps/20-agent-clis)")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    options = {"executable": str(exe), **_options(cli, server, tmp_path)}
    if cli == "gemini":
        options["model"] = "gemini-2.5-flash"

    # the default: refused before the CLI starts
    refused = await create_llm_adapter(cli, retry=False, **{cli: options}).complete(
        [Message.user(PROMPT)], CONFIG
    )
    assert isinstance(refused, Failure)
    assert refused.failure().kind is ErrorKind.invalid_request
    assert refused.failure().request_sent is False
    assert server.model_requests == []

    # without the catalog fact, the runner still sees the cut: never a success
    monkeypatch.setattr(module, "SPEC", dataclasses.replace(module.SPEC, stdin_limit_bytes=None))
    result = await create_llm_adapter(cli, retry=False, **{cli: options}).complete(
        [Message.user(PROMPT)], CONFIG
    )
    assert isinstance(result, Failure), result
    error = result.failure()
    if cli == "qwen":  # qwen's own refusal of the prefix ("Context is too large") comes first
        assert "too large" in str(error)
        return
    # gemini 0.61 exits 0 after reading 8 MiB: the runner names what its stdin took
    assert error.kind is ErrorKind.invalid_request, error
    taken = re.search(r"took only (\d+) of (\d+) bytes", str(error))
    assert taken is not None, error
    assert int(taken[2]) == len(PROMPT)
    assert 8 << 20 <= int(taken[1]) <= (8 << 20) + (256 << 10)  # its limit, plus pipe buffers
