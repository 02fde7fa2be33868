"""Contract tests: the REAL codex / claude / gemini CLIs, driven through agentport (configured
as a user would: agentport.toml) against FakeModelServer on 127.0.0.1.

The CLIs come from `.ci/steps/20-agent-clis` (pinned npm versions); their bin folder is
`$AGENTPORT_CLI_BIN_DIR`, else the path in `$AGENTPORT_CLI_PREFIX/bin-dir.txt` (default prefix
`~/.cache/agentport-ci/agent-clis`). The tests skip when the CLIs are not installed, and when
the network is not isolated (run them through scripts/test.sh, which uses `unshare -n`), so
they can reach nothing but 127.0.0.1. Each case asserts the outcome AND that no process of the
CLI's group is left.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from agentport import create_agent_runtime, create_llm_adapter
from agentport.catalog import get_capability
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    EventType,
    LLMAdapter,
    Message,
    Param,
    ParamSupport,
    ProviderError,
    Sandbox,
    ToolPolicy,
)
from agentport.testing import (
    DropConnection,
    FakeModelServer,
    Hang,
    HttpFault,
    JsonReply,
    LargeReply,
    TextReply,
    TokenUsage,
    ToolCallReply,
)
from agentport.transport import group_members

pytestmark = [pytest.mark.contract, pytest.mark.anyio]

CLIS = ("codex", "claude", "gemini")
SCHEMA = {
    "type": "object",
    "properties": {"status": {"type": "string"}, "answer": {"type": "integer"}},
    "required": ["status", "answer"],
}


def _bin_dir() -> tuple[Path | None, str]:
    explicit = os.environ.get("AGENTPORT_CLI_BIN_DIR")
    if explicit:
        return Path(explicit), "AGENTPORT_CLI_BIN_DIR"
    prefix = os.environ.get("AGENTPORT_CLI_PREFIX") or str(
        Path.home() / ".cache" / "agentport-ci" / "agent-clis"
    )
    marker = Path(prefix) / "bin-dir.txt"
    if marker.is_file():
        return Path(marker.read_text().strip()), str(marker)
    return None, ""


BIN_DIR, BIN_SOURCE = _bin_dir()  # read at import: the autouse fixtures clear AGENTPORT_*


def _network_isolated() -> bool:
    # the interfaces of THIS network namespace (/sys/class/net may show the host's)
    return {name for _, name in socket.if_nameindex()} <= {"lo"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the real CLIs are slow enough; the runner is tested on trio elsewhere


@pytest.fixture(params=CLIS)
def cli(request: pytest.FixtureRequest) -> str:
    name = str(request.param)
    if BIN_DIR is None:
        pytest.skip("agent CLIs not installed: run .ci/steps/20-agent-clis (see docs/runner.md)")
    exe = BIN_DIR / name
    if not exe.exists():  # installed by CI but missing: that is a failure, not a skip
        pytest.fail(f"{exe} missing (bin folder from {BIN_SOURCE})")
    if not _network_isolated():
        pytest.skip("network not isolated: run through scripts/test.sh (unshare -n)")
    return name


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(default="hello from fake") as srv:
        yield srv


def _options(cli: str, srv: FakeModelServer) -> dict[str, Any]:
    exe = str(BIN_DIR / cli) if BIN_DIR else cli
    if cli == "codex":  # request/stream retries off: one request per fault
        return {"executable": exe, "base_url": srv.openai_base_url, "api_key": "test-key",
                "request_max_retries": 0, "stream_max_retries": 0}  # fmt: skip
    if cli == "claude":
        return {"executable": exe, "base_url": srv.anthropic_base_url, "api_key": "test-key",
                "max_retries": 0}  # fmt: skip
    return {"executable": exe, "base_url": srv.gemini_base_url, "api_key": "test-key"}


def _toml(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value).lower()


@pytest.fixture
def project(
    cli: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """An isolated HOME plus a project folder whose agentport.toml points the backend at the
    fake server, exactly as a user would configure it."""
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".codex").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    # gemini reads auth type and retries only from settings.json (cli-contracts.md §3)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"maxAttempts": 1, "disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
    }))  # fmt: skip
    proj = tmp_path / "project"
    proj.mkdir()
    table = "\n".join(f"{k} = {_toml(v)}" for k, v in _options(cli, server).items())
    model = 'model = "gemini-2.5-flash"\n' if cli == "gemini" else ""
    (proj / "agentport.toml").write_text(
        f'[llm]\nbackend = "{cli}"\n{model}retry_attempts = 1\n'
        f"idle_timeout_s = 20\ntotal_timeout_s = 90\n\n[llm.{cli}]\n{table}\n"
    )
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(proj))  # the user's own project
    return proj


def _adapter(project: Path) -> LLMAdapter:
    return create_llm_adapter(cwd=project)


def _pid(result: Success[Any] | Failure[ProviderError]) -> int:
    if isinstance(result, Failure):
        return int(result.failure().details["pid"])
    return int(result.unwrap().raw.extra["pid"])


def _assert_no_leftovers(result: Any) -> None:
    assert group_members(_pid(result)) == [], "processes of the CLI's group are still alive"


async def test_plain_text(cli: str, project: Path, server: FakeModelServer) -> None:
    result = await _adapter(project).complete([Message.user("Say hi")])
    assert isinstance(result, Success), result
    assert result.unwrap().content == "hello from fake"
    assert result.unwrap().backend == cli
    assert server.model_requests, "the CLI never reached the fake server"
    _assert_no_leftovers(result)


async def test_schema_constrained_json(cli: str, project: Path, server: FakeModelServer) -> None:
    server.set_default(JsonReply({"status": "ok", "answer": 42}))
    config = CompletionConfig(output_schema=SCHEMA, idle_timeout_s=20, total_timeout_s=90)
    result = await _adapter(project).complete([Message.user("Give the status")], config)
    assert isinstance(result, Success), result
    assert result.unwrap().parsed == {"status": "ok", "answer": 42}
    _assert_no_leftovers(result)


_TOOL = {
    "codex": ("exec_command", {"cmd": "echo hello-from-tool"}, None),
    "claude": ("Bash", {"command": "echo hello-from-tool", "description": "greet"}, ("Bash",)),
    "gemini": ("run_shell_command", {"command": "echo hello-from-tool"}, None),
}


async def test_tool_call_turn(cli: str, project: Path, server: FakeModelServer) -> None:
    name, args, allowed = _TOOL[cli]
    server.reply(ToolCallReply(name, args, then="tool done"))
    sandbox = Sandbox.full if cli == "gemini" else None  # gemini offers shell only in yolo
    config = CompletionConfig(
        tools=ToolPolicy(allowed_tools=allowed, sandbox=sandbox),
        idle_timeout_s=20, total_timeout_s=90,
    )  # fmt: skip
    async with create_agent_runtime(cwd=project) as rt:
        events = [e async for e in rt.send("Run the greeting", config)]
    types = [e.type for e in events]
    assert EventType.tool_call in types, types
    assert EventType.tool_result in types, types
    assert events[-1].type is EventType.final, events[-1]
    assert events[-1].content == "tool done"
    tool_result = next(e for e in events if e.type is EventType.tool_result)
    assert "hello-from-tool" in tool_result.content
    response = events[-1].metadata["response"]
    assert group_members(response.raw.extra["pid"]) == []


async def test_usage_of_a_tool_run_counts_every_model_request(
    cli: str, project: Path, server: FakeModelServer
) -> None:
    """1000 in / 10 out for the tool call, 2000 / 20 for the answer after it: each CLI's own
    total (`usage_mode` cumulative) says the run spent at least the 3000 / 30 of both."""
    name, args, allowed = _TOOL[cli]
    then = TextReply("tool done", usage=TokenUsage(input_tokens=2000, output_tokens=20))
    first = TokenUsage(input_tokens=1000, output_tokens=10)
    server.reply(ToolCallReply(name, args, then=then, usage=first))
    sandbox = Sandbox.full if cli == "gemini" else None
    config = CompletionConfig(
        tools=ToolPolicy(allowed_tools=allowed, sandbox=sandbox),
        idle_timeout_s=20, total_timeout_s=90,
    )  # fmt: skip
    result = await _adapter(project).complete([Message.user("Run the greeting")], config)
    assert isinstance(result, Success), result
    usage = result.unwrap().usage
    served = server.model_requests
    assert len(served) >= 2
    # every request the CLI made: the two scripted ones, and any the CLI adds on its own
    assert usage.input_tokens >= 3000, (usage, len(served))
    assert usage.output_tokens >= 30, (usage, len(served))
    if len(served) == 2:
        assert (usage.input_tokens, usage.output_tokens) == (3000, 30)


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (HttpFault.unauthorized(), ErrorKind.auth_required),
        (HttpFault.rate_limited(retry_after=0), ErrorKind.rate_limited),
        (HttpFault.server_error(), ErrorKind.server_error),
        (DropConnection(), ErrorKind.network),
    ],
    ids=["401", "429", "500", "dropped"],
)
async def test_http_faults_are_classified(
    cli: str, project: Path, server: FakeModelServer, fault: Any, kind: ErrorKind
) -> None:
    server.set_default(fault)
    result = await _adapter(project).complete([Message.user("Say hi")])
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is kind, f"{error!s} / stderr: {error.stderr_tail[-500:]}"
    assert error.backend == cli
    _assert_no_leftovers(result)


async def test_hang_ends_in_idle_timeout(cli: str, project: Path, server: FakeModelServer) -> None:
    server.set_default(Hang())
    config = CompletionConfig(idle_timeout_s=4, total_timeout_s=60)
    result = await _adapter(project).complete([Message.user("Say hi")], config)
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.timeout
    assert result.failure().timeout == "idle"
    _assert_no_leftovers(result)


async def test_eight_mebibyte_answer(cli: str, project: Path, server: FakeModelServer) -> None:
    big = LargeReply()
    server.set_default(big)
    result = await _adapter(project).complete([Message.user("Say a lot")])
    assert isinstance(result, Success), result
    content = result.unwrap().content
    assert len(content) == big.size
    assert content == big.text
    _assert_no_leftovers(result)


def test_catalog_records_the_versions_these_tests_ran_on(cli: str) -> None:
    import subprocess

    assert BIN_DIR is not None
    out = subprocess.run(
        [str(BIN_DIR / cli), "--version"], capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    verified = get_capability(cli).verified_against
    assert verified is not None
    assert verified in out.stdout, (verified, out.stdout)


def test_agentport_complete_command_as_a_user_runs_it(
    cli: str, project: Path, server: FakeModelServer
) -> None:
    import subprocess
    import sys

    script = Path(sys.executable).parent / "agentport"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "agentport.cli"]
    out = subprocess.run(
        [*argv, "complete", "Say hi", "--backend", cli], cwd=project, capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello from fake"
    assert server.model_requests


async def test_runtime_second_turn_resumes_the_session(
    cli: str, project: Path, server: FakeModelServer
) -> None:
    if get_capability(cli).support(Param.session_resume) is not ParamSupport.NATIVE:
        pytest.skip(
            f"{cli} declares session_resume {get_capability(cli).support(Param.session_resume)}"
        )
    server.script("first answer", "second answer")
    async with create_agent_runtime(cwd=project) as rt:
        first = [e async for e in rt.send("first question")]
        session = rt.handle.session_id
        second = [e async for e in rt.send("second question")]
    assert first[-1].content == "first answer"
    assert second[-1].content == "second answer"
    assert session is not None
    assert rt.handle.session_id == session
    body = json.dumps(server.model_requests[-1].body)
    assert "first answer" in body, "the second turn did not carry the first turn's history"
