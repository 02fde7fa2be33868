"""The gjc backend (`gjc -p --mode json`): argv, stdin, end states and error table against a
fake gjc that behaves like its print mode (tests/fixtures/fake_clis/gjc), and the shared
event stream against a REAL binary of it: pi-coding-agent 0.73.1's `-p --mode json`
(.ci/steps/21-more-agent-clis; gjc is built on pi's agent core) driven through this spec
against `FakeModelServer`. Loopback only: run under `unshare -n` (scripts/test.sh)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from returns.result import Failure, Success

from _fake_clis_util import install_fake, live_processes_with, recorded
from _more_clis_util import cli_executable, network_isolated
from agentport import create_llm_adapter
from agentport.catalog import get_capability
from agentport.core import CompletionConfig, ErrorKind, EventType, Message, ToolPolicy
from agentport.factory import create_agent_runtime
from agentport.testing import FakeModelServer

pytestmark = pytest.mark.anyio
ALL_TOOLS = ToolPolicy.cli_defaults()
ANSWER = '{"status": "ok", "answer": 42}'
HEAD = ["-p", "--mode", "json", "--no-session"]


def test_catalog_lists_gjc_unverified_but_checked_against_its_source() -> None:
    for name in ("gjc", "gajae-code", "gajae_code"):
        cap = get_capability(name)
        assert cap.name == "gjc"
    assert cap.verified_against is None
    assert cap.auto_priority is None
    assert cap.checked_against_source is not None
    assert cap.checked_against_source.startswith("Yeachan-Heo/gajae-code@")
    assert "gajae-code" in cap.install_hint


@pytest.mark.parametrize(
    ("tools", "flags"),
    [
        (ToolPolicy(), ["--no-tools"]),
        (ToolPolicy(allowed_tools=("read", "grep")), ["--tools", "read,grep"]),
        (ALL_TOOLS, []),
    ],
    ids=["no-tools", "listed", "own-tools"],
)
async def test_the_tool_policy_becomes_gjc_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tools: ToolPolicy, flags: list[str]
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    adapter = create_llm_adapter("gjc", retry=False)
    response = await adapter.complete([Message.user("hi")], CompletionConfig(tools=tools))
    assert response.unwrap().content == f"[default/default-model] {ANSWER}"
    assert recorded(record)["argv"] == HEAD + flags


async def test_model_provider_system_prompt_and_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    adapter = create_llm_adapter("gjc", retry=False)
    config = CompletionConfig(model="openrouter/qwen3-coder")
    prompt = "hi --tools bash\n" + "ü" * 70_000  # flag-like, multi-byte, larger than a pipe
    response = (
        await adapter.complete([Message.system("be terse"), Message.user(prompt)], config)
    ).unwrap()
    assert response.content == f"[openrouter/qwen3-coder] {ANSWER}"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    assert response.warnings == ()  # agent_end arrived: no MISSING_TERMINAL
    argv = recorded(record)["argv"]
    assert argv[: len(HEAD) + 4] == [*HEAD, "--provider", "openrouter", "--model", "qwen3-coder"]
    assert argv[argv.index("--append-system-prompt") + 1].endswith("system-prompt.md")
    assert "be terse" not in " ".join(argv)  # the system prompt travels in a file
    assert recorded(record)["stdin"] == prompt
    assert live_processes_with(str(record)) == []
    bare = create_llm_adapter("gjc", retry=False, gjc={"provider": "zai"})
    config = CompletionConfig(model="glm-4.6")
    assert (
        (await bare.complete([Message.user("hi")], config))
        .unwrap()
        .content.startswith("[zai/glm-4.6]")
    )


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [
        ("quota", ErrorKind.quota_exhausted),
        ("http500", ErrorKind.server_error),
        ("retry", ErrorKind.server_error),
        ("crash", ErrorKind.process_failed),
    ],
)
async def test_error_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, kind: ErrorKind
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    adapter = create_llm_adapter("gjc", retry=False, gjc={"grace_s": 0.5})
    config = CompletionConfig(total_timeout_s=30)
    result = await adapter.complete([Message.user("hi")], config)
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is kind, error
    if scenario == "quota":
        assert error.retry_after is not None
        assert 2 * 3600 < error.retry_after <= 7900
    assert live_processes_with(str(record)) == []


async def test_a_gjc_that_only_knows_the_removed_rpc_mode_is_a_one_line_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what a driver still sending `--mode rpc` gets from a current gjc: exit 2, its own line
    install_fake(tmp_path, monkeypatch, "gjc")
    adapter = create_llm_adapter("gjc", retry=False, gjc={"extra_args": ["--mode", "rpc"]})
    error = (await adapter.complete([Message.user("hi")], CompletionConfig())).failure()
    assert error.kind is ErrorKind.process_failed
    assert "--mode rpc was removed" in error.message


async def test_a_hang_ends_at_the_idle_timeout_with_no_orphan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "gjc")
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = create_llm_adapter("gjc", retry=False, gjc={"grace_s": 0.5})
    config = CompletionConfig(idle_timeout_s=1.5, total_timeout_s=20)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert error.timeout == "idle"
    assert live_processes_with(str(record)) == []


async def test_runtime_streams_text_deltas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(tmp_path, monkeypatch, "gjc")
    async with create_agent_runtime("gjc") as runtime:
        events = [e async for e in runtime.send("hi", CompletionConfig(tools=ALL_TOOLS))]
    deltas = [e for e in events if e.type is EventType.text]
    assert len(deltas) > 3
    assert events[-1].type is EventType.final
    assert events[-1].content == "".join(e.content for e in deltas)


# ---------------------------------------- the shared protocol on a real binary: pi's print mode

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
def test_real_pi_answers_through_the_gjc_spec_on_the_asked_model(
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
    assert response.warnings == ()  # agent_end seen
    assert len(requests) == 1
    assert requests[0].body["model"] == "m2"  # the asked-for model answered


@real
def test_real_pi_api_error_is_typed_through_the_gjc_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
