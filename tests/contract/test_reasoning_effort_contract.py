"""`reasoning_effort` reaches the model request, checked against the REAL CLIs.

For every backend that declares the param NATIVE, one call with `reasoning_effort="low"`
runs the real CLI (configured as its own docs tell a user: a custom endpoint and key) against
FakeModelServer, and the recorded model request must carry the level in that wire format's
field: Responses `reasoning.effort` (codex), Anthropic `output_config.effort` (claude), Chat
Completions `reasoning_effort` (pi, copilot, qwen). A second call without the setting, in the
same home, must not ask for "low" (no CLI defaults to it): the field is ours, and the level
does not persist between calls. Loopback only: run under `unshare -n` (scripts/test.sh).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

from _more_clis_util import (
    MARKER_ENV,
    cli_executable,
    network_isolated,
    new_marker,
    wait_no_live_processes,
)
from agentport import create_llm_adapter
from agentport.catalog import all_backends
from agentport.core import CompletionConfig, Param, ParamSupport, as_messages
from agentport.testing import ALLOW_ENV, FakeModelServer, RecordedRequest

pytestmark = [
    pytest.mark.contract,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not network_isolated(), reason="run under `unshare -n` (loopback only) to reach no host"
    ),
]

# the CLIs whose real binary CI installs, with the request field that carries the level
REAL_CLIS = ("claude", "codex", "copilot", "pi", "qwen")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(default="effort answer") as srv:
        yield srv


def effort_in(request: RecordedRequest) -> Any:
    """The reasoning level a recorded model request asks for, in any of the wire formats
    (None when it asks for none)."""
    body = request.body if isinstance(request.body, dict) else {}
    if "reasoning_effort" in body:
        return body["reasoning_effort"]
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        return reasoning["effort"]
    output = body.get("output_config")
    if isinstance(output, dict) and output.get("effort") is not None:
        return output["effort"]
    return None


def _options(name: str, server: FakeModelServer) -> dict[str, Any]:
    if name == "claude":
        return {"base_url": server.anthropic_base_url, "api_key": "test-key", "max_retries": 0}
    options: dict[str, Any] = {"base_url": server.openai_base_url, "api_key": "test-key"}
    if name == "codex":
        options |= {"request_max_retries": 0, "stream_max_retries": 0}
    if name == "qwen":
        options["max_retries"] = 0
    return options


async def _call(
    name: str, server: FakeModelServer, home: Path, mp: pytest.MonkeyPatch, **config: Any
) -> RecordedRequest:
    exe = cli_executable(name)
    if exe is None:
        pytest.skip(f"{name} not installed (run .ci/steps/20-agent-clis and 21-more-agent-clis)")
    mp.setenv(ALLOW_ENV, "1")
    marker = new_marker()
    options = _options(name, server) | {
        "executable": str(exe),
        "env": {"HOME": str(home), MARKER_ENV: marker},
        "grace_s": 1.0,
    }
    adapter = create_llm_adapter(name, retry=False, model="fake-model", **{name: options})
    before = len(server.model_requests)
    result = await adapter.complete(
        as_messages("Think about it"),
        CompletionConfig(
            model="fake-model", startup_timeout_s=60, idle_timeout_s=30, total_timeout_s=90,
            **config,
        ),
    )  # fmt: skip
    assert wait_no_live_processes(marker) == [], "processes of the run outlived it"
    assert isinstance(result, Success), result
    assert result.unwrap().content == "effort answer"
    assert not any("reasoning_effort" in w for w in result.unwrap().warnings)
    turns = [r for r in server.model_requests[before:] if "Think about it" in r.user_text]
    assert turns, "the CLI never sent the prompt to the fake server"
    return turns[-1]


@pytest.mark.parametrize("name", REAL_CLIS)
async def test_the_level_reaches_the_model_request(
    name: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    asked = await _call(name, server, home, monkeypatch, reasoning_effort="low")
    assert effort_in(asked) == "low", asked.body
    # without the setting the CLI keeps its own default (claude 2.1: high; the others: none),
    # and nothing of the earlier call stuck in the home
    plain = await _call(name, server, home, monkeypatch)
    assert effort_in(plain) != "low", plain.body


def test_every_native_cli_is_covered_here() -> None:
    """A CLI backend that declares reasoning_effort NATIVE is in REAL_CLIS (its binary is
    installed by CI) so the claim is checked against the real program."""
    native = {
        cap.name
        for cap in all_backends()
        if cap.kind.value == "cli" and cap.support(Param.reasoning_effort) is ParamSupport.NATIVE
    }
    assert native == set(REAL_CLIS)
