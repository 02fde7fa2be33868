"""hermes spec against a fake `hermes -z` (the real one runs in test_hermes_contract.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _fake_clis_util import claimed, install_fake, live_processes_with, recorded
from agentport.core import CompletionConfig, ErrorKind, Message, Param, ParamSupport, ToolPolicy
from agentport.factory import create_llm_adapter

pytestmark = pytest.mark.anyio
ANSWER = '{"status": "ok", "answer": 42}'


async def test_hermes_reply_and_usage_report_come_through_the_pass_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "hermes")
    home = tmp_path / "hh"
    options = {"base_url": "http://127.0.0.1:9/v1/", "api_key": "k", "home": str(home)}
    adapter = create_llm_adapter("hermes", retry=False, hermes=options)
    config = CompletionConfig(
        model="m-1", max_turns=4, tools=ToolPolicy(allowed_tools=("file", "terminal"))
    )
    response = (await adapter.complete([Message.user("-dash first")], config)).unwrap()
    assert response.content == ANSWER
    assert response.usage.input_tokens == 11
    assert response.raw.session_id == "20261130_000706_d5fe64"
    seen = recorded(record)
    argv = seen["argv"]
    assert argv[0] == "--oneshot=-dash first"  # `=`: a prompt starting with '-' stays a value
    assert claimed("hermes", Param.model) is ParamSupport.NATIVE
    assert "--model=m-1" in argv
    assert claimed("hermes", Param.tool_restriction) is ParamSupport.NATIVE
    assert "--toolsets=file,terminal" in argv
    assert "--resume" not in argv
    assert seen["env"]["HERMES_HOME"] == str(home)
    assert seen["env"]["OPENAI_API_KEY"] == "k"
    written = json.loads((home / "config.yaml").read_text())
    assert written["model"] == {
        "provider": "custom",
        "base_url": "http://127.0.0.1:9/v1",
        "default": "m-1",
    }
    assert claimed("hermes", Param.max_turns) is ParamSupport.NATIVE
    # agentport owns retries: hermes' own API retries are off by default
    assert written["agent"] == {"api_max_retries": 0, "max_turns": 4}


async def test_hermes_failure_reported_with_exit_0_is_not_an_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "hermes")
    monkeypatch.setenv("FAKE_SCENARIO", "http500")
    error = (
        await create_llm_adapter("hermes", retry=False).complete([Message.user("x")])
    ).failure()
    assert error.kind is ErrorKind.server_error
    assert error.exit_code == 0
    assert "API call failed" in error.message


async def test_hermes_sandbox_is_ignored_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "hermes")
    config = CompletionConfig(tools=ToolPolicy(sandbox="read_only"), on_ignored="fail")
    adapter = create_llm_adapter("hermes", retry=False)
    error = (await adapter.complete([Message.user("x")], config)).failure()
    assert error.kind is ErrorKind.unsupported  # -z auto-approves tools: no sandbox


async def test_hermes_hang_is_killed_with_the_pass_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "hermes")
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = create_llm_adapter("hermes", retry=False, hermes={"grace_s": 0.5})
    config = CompletionConfig(startup_timeout_s=1.0, total_timeout_s=20)
    error = (await adapter.complete([Message.user("x")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert live_processes_with(str(record)) == []
