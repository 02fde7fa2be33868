"""The gjc backend (`gjc --mode rpc`): its stdin dialogue, its policy refusal, its end states and
error table against a fake gjc that behaves like the real rpc mode (commands handled
concurrently, exit at stdin's EOF), and the shared protocol against a REAL binary of it:
pi-coding-agent 0.73.1's `--mode rpc` (.ci/steps/21-more-agent-clis) driven through this spec
against `FakeModelServer`. Loopback only: run under `unshare -n` (scripts/test.sh)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Failure, Success

from _fake_clis_util import install_fake, live_processes_with, recorded
from _more_clis_util import cli_executable, network_isolated
from agentport import create_llm_adapter
from agentport.backends import gjc
from agentport.backends._endstate import RunWatch
from agentport.backends._spec import RunOutcome
from agentport.catalog import get_capability
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    EventType,
    Message,
    Sandbox,
    ToolPolicy,
)
from agentport.factory import create_agent_runtime
from agentport.testing import FakeModelServer

pytestmark = pytest.mark.anyio
ALL_TOOLS = ToolPolicy.cli_defaults()
ANSWER = '{"status": "ok", "answer": 42}'


def _commands(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in recorded(record)["stdin"].splitlines()]


def test_catalog_lists_gjc_unverified_with_its_aliases() -> None:
    for name in ("gjc", "gajae-code", "gajae_code"):
        cap = get_capability(name)
        assert cap.name == "gjc"
    assert cap.verified_against is None
    assert cap.auto_priority is None
    assert "gajae-code" in cap.install_hint


@pytest.mark.parametrize(
    "tools",
    [ToolPolicy(), ToolPolicy(allowed_tools=("read",)), ToolPolicy(sandbox=Sandbox.read_only)],
)
async def test_every_policy_but_its_own_tools_is_refused_before_the_cli_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tools: ToolPolicy
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    adapter = create_llm_adapter("gjc", retry=False)
    result = await adapter.complete([Message.user("hi")], CompletionConfig(tools=tools))
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.unsupported
    assert not record.exists()  # never spawned


async def test_prompt_waits_for_the_model_switch_ack_and_stdin_is_held_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fake answers on whatever model is current when the prompt arrives (the real rpc mode
    # handles commands concurrently) and exits at stdin's EOF: a prompt written behind the
    # switch, or stdin closed after it, gives the wrong model or no answer at all.
    record = install_fake(tmp_path, monkeypatch, "gjc")
    adapter = create_llm_adapter("gjc", retry=False)
    config = CompletionConfig(tools=ALL_TOOLS, model="openrouter/qwen3-coder")
    response = (
        await adapter.complete([Message.system("be terse"), Message.user("hi")], config)
    ).unwrap()
    assert response.content == f"[openrouter/qwen3-coder] {ANSWER}"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    assert response.warnings == ()  # agent_end arrived: no MISSING_TERMINAL
    commands = _commands(record)
    assert [c["type"] for c in commands] == ["set_model", "prompt"]
    assert commands[0] == {
        "id": "agentport-model", "type": "set_model",
        "provider": "openrouter", "modelId": "qwen3-coder",
    }  # fmt: skip
    assert commands[1]["message"].startswith("System instructions:\nbe terse")
    assert recorded(record)["argv"] == ["--mode", "rpc", "--no-session"]
    assert live_processes_with(str(record)) == []


async def test_the_provider_option_and_a_bare_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    config = CompletionConfig(tools=ALL_TOOLS, model="glm-4.6")
    bare = await create_llm_adapter("gjc", retry=False).complete([Message.user("hi")], config)
    assert isinstance(bare, Failure)
    assert bare.failure().kind is ErrorKind.config
    assert "provider/glm-4.6" in bare.failure().message
    adapter = create_llm_adapter("gjc", retry=False, gjc={"provider": "zai"})
    assert (
        (await adapter.complete([Message.user("hi")], config))
        .unwrap()
        .content.startswith("[zai/glm-4.6]")
    )
    assert _commands(record)[0]["provider"] == "zai"


async def test_protocol_v2_envelopes_decode_like_bare_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "gjc")
    monkeypatch.setenv("FAKE_SCENARIO", "v2")
    config = CompletionConfig(tools=ALL_TOOLS)
    response = (await create_llm_adapter("gjc", retry=False).complete(
        [Message.user("hi")], config)).unwrap()  # fmt: skip
    assert response.content == f"[default/default-model] {ANSWER}"
    assert response.warnings == ()


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [
        ("quota", ErrorKind.quota_exhausted),
        ("http500", ErrorKind.server_error),
        ("host", ErrorKind.unsupported),
        ("crash", ErrorKind.process_failed),
    ],
)
async def test_error_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, kind: ErrorKind
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    adapter = create_llm_adapter("gjc", retry=False, gjc={"grace_s": 0.5})
    config = CompletionConfig(tools=ALL_TOOLS, total_timeout_s=30)
    result = await adapter.complete([Message.user("hi")], config)
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is kind, error
    if scenario == "quota":
        assert error.retry_after is not None
        assert 2 * 3600 < error.retry_after <= 7900
    if scenario == "host":
        assert "extension_ui_request" in error.message
    assert live_processes_with(str(record)) == []


async def test_a_failed_model_switch_sends_no_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    monkeypatch.setenv("FAKE_SCENARIO", "bad_model")
    config = CompletionConfig(tools=ALL_TOOLS, model="nope/zz", total_timeout_s=30)
    result = await create_llm_adapter("gjc", retry=False).complete([Message.user("hi")], config)
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.model_not_found, result
    assert [c["type"] for c in _commands(record)] == ["set_model"]


async def test_a_hang_after_the_ack_ends_at_the_idle_timeout_with_no_orphan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = create_llm_adapter("gjc", retry=False, gjc={"grace_s": 0.5})
    config = CompletionConfig(tools=ALL_TOOLS, idle_timeout_s=1.5, total_timeout_s=20)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert error.timeout == "idle"
    assert live_processes_with(str(record)) == []


async def test_runtime_streams_text_deltas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(tmp_path, monkeypatch, "gjc")
    config = CompletionConfig(tools=ALL_TOOLS)
    async with create_agent_runtime("gjc") as runtime:
        events = [e async for e in runtime.send("hi", config)]
    deltas = [e for e in events if e.type is EventType.text]
    assert len(deltas) > 3
    assert events[-1].type is EventType.final
    assert events[-1].content == "".join(e.content for e in deltas)


def test_a_host_frame_is_an_error_and_an_ack_is_not() -> None:
    host = gjc.decode({"type": "host_tool_call", "id": "t1"})
    assert host is not None
    assert host.is_error
    assert gjc.decode({"type": "response", "command": "prompt", "success": True}) is None
    outcome = RunOutcome(exit_code=None, stderr_tail="", events=[host])
    error = gjc.classify(outcome)
    assert error is not None
    assert error.kind is ErrorKind.unsupported


@pytest.mark.parametrize(
    "frame",
    [
        {"id": "m", "type": "response", "command": "set_model", "success": False, "error": "x"},
        {"type": "extension_ui_request", "id": "ui-1", "method": "confirm"},
        {"type": "host_tool_call", "id": "t1"},
    ],
    ids=["refused-ack", "ui-request", "host-tool"],
)
def test_an_error_nothing_can_follow_stops_the_run_without_the_error_grace(
    frame: dict[str, Any],
) -> None:
    # a refused switch means the prompt is never sent, and a host request is never answered:
    # waiting `error_grace_s` (5 s) for a recovery would only delay the failure
    event = gjc.decode(frame)
    assert event is not None
    assert event.is_error
    assert RunWatch().feed(event) is True  # stop now, not "stop unless output within N s"
    pi_error = {"type": "message_end", "message": {"role": "assistant", "stopReason": "error"}}
    assert isinstance(RunWatch().feed(gjc.decode(pi_error)), float)  # pi may auto-retry


# ---------------------------------------- the shared protocol on a real binary: pi's rpc mode

PI = cli_executable("pi")
real = pytest.mark.skipif(
    PI is None or not network_isolated(),
    reason="pi not installed (.ci/steps/21-more-agent-clis) or network not isolated",
)


def _pi_agent_dir(tmp_path: Path, srv: FakeModelServer) -> Path:
    folder = tmp_path / "pi-agent"
    folder.mkdir()
    provider = {
        "baseUrl": srv.openai_base_url.rstrip("/"),
        "api": "openai-completions",
        "apiKey": "PI_TEST_KEY",
        "models": [{"id": "m1", "contextWindow": 32000, "maxTokens": 512}, {"id": "m2"}],
    }
    (folder / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
    retry = {"retry": {"maxRetries": 0, "provider": {"maxRetries": 0}}}
    (folder / "settings.json").write_text(json.dumps(retry))
    return folder


@real
def test_real_pi_rpc_answers_through_the_gjc_spec_on_the_switched_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer() as srv:
        srv.reply("pong from the model")
        env = {"PI_CODING_AGENT_DIR": str(_pi_agent_dir(tmp_path, srv)), "PI_TEST_KEY": "k"}
        env |= {"PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
        adapter = create_llm_adapter(
            "gjc", retry=False, gjc={"executable": str(PI), "env": env, "provider": "fake"}
        )
        config = CompletionConfig(tools=ALL_TOOLS, model="m2", total_timeout_s=90)
        result = anyio.run(lambda: adapter.complete([Message.user("ping")], config))
        requests = srv.model_requests
    assert isinstance(result, Success), result
    response = result.unwrap()
    assert response.content == "pong from the model"
    assert response.warnings == ()  # agent_end seen: stdin was held open for the whole turn
    assert len(requests) == 1
    assert requests[0].body["model"] == "m2"  # the switched model answered


@real
def test_real_pi_rpc_api_error_is_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentport.testing import HttpFault

    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer() as srv:
        srv.set_default(HttpFault(401))
        env = {"PI_CODING_AGENT_DIR": str(_pi_agent_dir(tmp_path, srv)), "PI_TEST_KEY": "k"}
        adapter = create_llm_adapter(
            "gjc", retry=False, gjc={"executable": str(PI), "env": env, "provider": "fake"}
        )
        config = CompletionConfig(tools=ALL_TOOLS, model="m1", total_timeout_s=90)
        result = anyio.run(lambda: adapter.complete([Message.user("ping")], config))
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.auth_required, result
