"""The ACP backend against a REAL agent: `gemini --acp` (gemini-cli, installed by
.ci/steps/20-agent-clis) talking to FakeModelServer on 127.0.0.1. Skipped when the CLI is absent.

Endpoint as a user would configure it: `[llm.acp] command = ["gemini", "--acp"]` with
`GEMINI_API_KEY` + `GOOGLE_GEMINI_BASE_URL` in `[llm.acp] env` and the api-key auth type in
the agent's own settings.json (cli-contracts.md §3).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from _acp_agents import acp_options as agent_options
from _fake_clis_util import live_processes_with
from agentport.core import CompletionConfig, ErrorKind, EventType, Message, Sandbox, ToolPolicy
from agentport.factory import create_agent_runtime, create_llm_adapter
from agentport.testing import FakeModelServer, Hang, HttpFault, ToolCallReply

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


def _gemini() -> str | None:
    # Read at import: the autouse config fixture clears AGENTPORT_* variables.
    explicit = os.environ.get("AGENTPORT_CLI_BIN_DIR")
    prefix = os.environ.get("AGENTPORT_CLI_PREFIX") or str(
        Path.home() / ".cache" / "agentport-ci" / "agent-clis"
    )
    bin_file = Path(prefix) / "bin-dir.txt"
    bin_dir = explicit or (bin_file.read_text().strip() if bin_file.exists() else None)
    if bin_dir and (Path(bin_dir) / "gemini").exists():
        return str(Path(bin_dir) / "gemini")
    return shutil.which("gemini")


GEMINI = _gemini()
if GEMINI is None:
    pytest.skip("gemini CLI not installed (.ci/steps/20-agent-clis)", allow_module_level=True)


@pytest.fixture
def server() -> Any:
    with FakeModelServer(default="hello from the fake model") as srv:
        yield srv


@pytest.fixture
def acp_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeModelServer) -> Any:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    options = agent_options("gemini", server, tmp_path / "home", exe=GEMINI)
    assert options is not None
    options["env"]["ACP_CONTRACT_MARKER"] = str(tmp_path / "marker")
    return options


def _marker(options: dict[str, Any]) -> str:
    return str(options["env"]["ACP_CONTRACT_MARKER"])


def _main_requests(server: FakeModelServer) -> list[Any]:
    return [r for r in server.requests if "streamGenerateContent" in r.path]


async def test_acp_gemini_answers_through_the_fake_server(
    acp_options: dict[str, Any], server: FakeModelServer
) -> None:
    adapter = create_llm_adapter("acp", retry=False, acp=acp_options)
    response = (await adapter.complete([Message.user("say hello")])).unwrap()
    assert response.content == "hello from the fake model"
    assert response.usage.input_tokens > 0
    assert response.raw.extra["agent_info"]["name"] == "gemini-cli"
    assert response.raw.extra["agent_capabilities"]["loadSession"] is True
    assert _main_requests(server)
    assert live_processes_with(_marker(acp_options)) == []


@pytest.mark.parametrize("warm", [None, 1], ids=["cold", "warm"])
async def test_acp_gemini_tool_runs_only_when_the_policy_allows_it(
    acp_options: dict[str, Any], server: FakeModelServer, tmp_path: Path, warm: int | None
) -> None:
    # warm: both calls on one gemini process, whose own folder is not the session's cwd
    adapter = create_llm_adapter("acp", retry=False, warm=warm, acp=acp_options)
    work = tmp_path / "work"
    work.mkdir()
    responses = []
    for sandbox, made in ((None, False), (Sandbox.full, True)):
        server.reply(
            ToolCallReply("run_shell_command", {"command": "touch made.txt"}, then="tool done"),
            api="gemini",
        )
        config = CompletionConfig(cwd=work, tools=ToolPolicy(sandbox=sandbox))
        response = (await adapter.complete([Message.user("make a file")], config)).unwrap()
        responses.append(response)
        assert response.content == "tool done"
        assert response.raw.extra["permissions"][0]["allowed"] is made
        assert (work / "made.txt").exists() is made
    pids = {r.raw.extra["pid"] for r in responses}
    assert len(pids) == (1 if warm else 2)
    if warm:
        await adapter.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (HttpFault.server_error(), ErrorKind.server_error),
        (HttpFault.unauthorized(), ErrorKind.auth_required),
        (HttpFault.rate_limited(retry_after=1), ErrorKind.rate_limited),
    ],
)
async def test_acp_gemini_http_faults_end_in_the_right_kind(
    acp_options: dict[str, Any], server: FakeModelServer, fault: HttpFault, kind: ErrorKind
) -> None:
    server.reply(fault, api="gemini", times=None)
    adapter = create_llm_adapter("acp", retry=False, acp=acp_options)
    config = CompletionConfig(total_timeout_s=60)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is kind, error
    assert error.backend == "acp"
    assert live_processes_with(_marker(acp_options)) == []


async def test_acp_gemini_silent_model_ends_in_idle_timeout_without_orphans(
    acp_options: dict[str, Any], server: FakeModelServer
) -> None:
    server.reply(Hang(), api="gemini", times=None)
    adapter = create_llm_adapter("acp", retry=False, acp=acp_options)
    config = CompletionConfig(idle_timeout_s=3, total_timeout_s=60)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert error.timeout == "idle"
    assert live_processes_with(_marker(acp_options)) == []


async def test_acp_gemini_model_is_set_with_session_set_model(
    acp_options: dict[str, Any], server: FakeModelServer
) -> None:
    adapter = create_llm_adapter("acp", retry=False, acp=acp_options)
    config = CompletionConfig(model="gemini-2.5-pro")
    response = (await adapter.complete([Message.user("hi")], config)).unwrap()
    assert response.model == "gemini-2.5-pro"
    assert any("gemini-2.5-pro" in r.path for r in _main_requests(server))


async def test_acp_gemini_runtime_second_turn_carries_the_first(
    acp_options: dict[str, Any], server: FakeModelServer
) -> None:
    server.script("first answer", "second answer")
    async with create_agent_runtime("acp", acp=acp_options) as runtime:
        one = [e async for e in runtime.send("remember the word pineapple")]
        two = [e async for e in runtime.send("which word?")]
    assert one[-1].type is EventType.final
    assert one[-1].content == "first answer"
    assert two[-1].content == "second answer"
    last = json.dumps(_main_requests(server)[-1].body)
    assert "pineapple" in last  # one live ACP session: the history went along
    assert live_processes_with(_marker(acp_options)) == []


async def test_acp_gemini_warm_calls_reuse_one_agent_with_a_fresh_conversation_each(
    acp_options: dict[str, Any], server: FakeModelServer, tmp_path: Path
) -> None:
    # `[llm] warm = 2`: the second call runs on the first call's gemini process, in a new
    # session: the model sees nothing of the first call (the outside check: what gemini sends)
    server.script("first answer", "second answer")
    adapter = create_llm_adapter("acp", retry=False, warm=2, acp=acp_options)
    work = tmp_path / "work"
    work.mkdir()
    one = (await adapter.complete([Message.user("remember the word pineapple")])).unwrap()
    config = CompletionConfig(cwd=work)
    two = (await adapter.complete([Message.user("which word did I say?")], config)).unwrap()
    assert (one.content, two.content) == ("first answer", "second answer")
    assert one.raw.extra["pid"] == two.raw.extra["pid"]
    assert two.raw.extra["agent_uses"] == 2
    assert one.raw.session_id != two.raw.session_id
    last = json.dumps(_main_requests(server)[-1].body)
    assert "which word" in last
    assert "pineapple" not in last  # no context leaks between calls
    assert live_processes_with(_marker(acp_options)) != []  # kept warm
    await adapter.aclose()  # type: ignore[attr-defined]
    assert live_processes_with(_marker(acp_options)) == []
