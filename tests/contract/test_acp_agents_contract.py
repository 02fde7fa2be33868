"""The ACP backend against REAL agents other than gemini
(tests/contract/test_acp_gemini_contract.py):
`qwen --acp` (qwen-code), `opencode acp` and `copilot --acp`, as .ci/steps/21-more-agent-clis
installs them, each answering from FakeModelServer on 127.0.0.1 and configured the way its own
docs tell users to use an OpenAI-compatible endpoint:

- qwen: `OPENAI_BASE_URL` + `OPENAI_API_KEY`, auth type `openai` (cli-contracts.md §5);
- opencode: a custom provider (`@ai-sdk/openai-compatible`, `options.baseURL`) in
  `OPENCODE_CONFIG_CONTENT`;
- copilot: BYOK, `COPILOT_PROVIDER_BASE_URL` / `_TYPE` / `_API_KEY` and `COPILOT_MODEL`.

Checked for each: an answer, and warm calls (`[llm] warm`): one agent process serves both
calls, each in a fresh session, so the second model request carries nothing of the first.
An agent whose binary is absent is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _acp_agents import AGENTS, acp_options
from _more_clis_util import MARKER_ENV, live_processes, new_marker
from agentport.core import Message
from agentport.factory import create_llm_adapter
from agentport.testing import FakeModelServer

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Any:
    with FakeModelServer(default="hello from the fake model") as srv:
        yield srv


@pytest.fixture(params=[a for a in AGENTS if a != "gemini"])  # gemini: its own file
def options(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: FakeModelServer,
) -> Any:
    found = acp_options(request.param, server, tmp_path / "home")
    if found is None:
        pytest.skip(f"{request.param} CLI not installed (.ci/steps/21-more-agent-clis)")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    found["env"][MARKER_ENV] = new_marker()
    return found


def _model_requests(server: FakeModelServer) -> list[Any]:
    return [r for r in server.requests if not r.is_side and "chat/completions" in r.path]


async def test_acp_agent_answers_through_the_fake_server(
    options: dict[str, Any], server: FakeModelServer
) -> None:
    adapter = create_llm_adapter("acp", retry=False, acp=options)
    response = (await adapter.complete([Message.user("say hello")])).unwrap()
    assert response.content == "hello from the fake model"
    assert _model_requests(server)
    assert live_processes(options["env"][MARKER_ENV]) == []


async def test_acp_agent_warm_calls_reuse_one_agent_with_a_fresh_conversation_each(
    options: dict[str, Any], server: FakeModelServer
) -> None:
    server.script("first answer", "second answer")
    adapter = create_llm_adapter("acp", retry=False, warm=1, acp=options)
    one = (await adapter.complete([Message.user("remember the word pineapple")])).unwrap()
    two = (await adapter.complete([Message.user("which word did I say?")])).unwrap()
    assert (one.content, two.content) == ("first answer", "second answer")
    assert one.raw is not None
    assert two.raw is not None
    assert one.raw.extra["pid"] == two.raw.extra["pid"]
    assert one.raw.session_id != two.raw.session_id
    last = json.dumps(_model_requests(server)[-1].body)
    assert "which word" in last
    assert "pineapple" not in last  # no context leaks between calls
    await adapter.aclose()  # type: ignore[attr-defined]
    assert live_processes(options["env"][MARKER_ENV]) == []
