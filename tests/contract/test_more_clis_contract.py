"""Real-CLI contract tests for opencode, qwen, pi and copilot against FakeModelServer.

Each backend runs the same cases as the codex/claude/gemini contract suite (plain text; schema
JSON; a tool-call turn; 401; 429; 500; dropped connection; hang -> idle timeout; 8 MiB
answer). Every case must end in the right `Success` or `ErrorKind` within its wall-clock
budget, and leave no live process of the run behind. The binaries come from
.ci/steps/21-more-agent-clis; a backend whose binary is missing is skipped. Loopback only:
run under `unshare -n`. Cases run on asyncio only (the CLI start-up dominates; the adapter's
trio path is covered by the unit tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Failure, Success

from _more_clis_util import (
    MARKER_ENV,
    cli_executable,
    network_isolated,
    new_marker,
    wait_no_live_processes,
)
from agentport import create_agent_runtime, create_llm_adapter
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    EventType,
    Sandbox,
    ToolPolicy,
    as_messages,
)
from agentport.testing import (
    ALLOW_ENV,
    DropConnection,
    FakeModelServer,
    Hang,
    HttpFault,
    LargeReply,
    RecordedRequest,
    TextReply,
    TokenUsage,
    ToolCallReply,
)

pytestmark = [
    pytest.mark.contract,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not network_isolated(), reason="run under `unshare -n` (loopback only) to reach no host"
    ),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def mp(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    return monkeypatch


@dataclass(frozen=True)
class Backend:
    name: str
    options: Callable[[FakeModelServer, Path], dict[str, Any]]
    tool: str
    tool_args: dict[str, Any]
    tool_config: dict[str, Any] = field(default_factory=dict)
    # the CLI's own retries against a server that always fails, at their shortest setting
    fault_budget_s: float = 60.0
    sampling: bool = False  # temperature / max_tokens are NATIVE: check they reach the request
    schema_tool: str | None = None  # NATIVE schema through a synthetic tool of this name
    # tools the CLI offers whatever the allow-list says (documented in the catalog note)
    always_tools: frozenset[str] = frozenset()
    # set when the CLI itself may lose the end of a large answer: the run must then fail as
    # bad_output, never return a truncated answer
    large_answer_loss: str | None = None


def _qwen(server: FakeModelServer, home: Path) -> dict[str, Any]:
    return {"base_url": server.openai_base_url, "api_key": "test-key", "max_retries": 0}


def _opencode(server: FakeModelServer, home: Path) -> dict[str, Any]:
    return {"base_url": server.openai_base_url, "api_key": "test-key"}


def _pi(server: FakeModelServer, home: Path) -> dict[str, Any]:
    return {"base_url": server.openai_base_url, "api_key": "test-key"}


def _copilot(server: FakeModelServer, home: Path) -> dict[str, Any]:
    return {"base_url": server.openai_base_url, "api_key": "test-key"}


BACKENDS = {
    "copilot": Backend(
        "copilot",
        _copilot,
        tool="bash",
        tool_args={"command": "echo hello-from-tool", "description": "greet"},
        # copilot asks before bash; headless that is a denial unless the call allows all
        tool_config={"tools": ToolPolicy(allowed_tools=("bash", "view"), sandbox=Sandbox.full)},
    ),
    "pi": Backend(
        "pi",
        _pi,
        tool="bash",
        tool_args={"command": "echo hello-from-tool"},
        tool_config={"tools": ToolPolicy(allowed_tools=("bash", "read"))},
    ),
    "opencode": Backend(
        "opencode",
        _opencode,
        tool="bash",
        tool_args={"command": "echo hello-from-tool", "description": "greet"},
        tool_config={"tools": ToolPolicy.cli_defaults()},  # opt in: no tools by default
        # 500 / dropped connection: 9 requests over ~70 s (cli-contracts.md retry table)
        fault_budget_s=150.0,
    ),
    "qwen": Backend(
        "qwen",
        _qwen,
        tool="run_shell_command",
        tool_args={"command": "echo hello-from-tool", "description": "greet"},
        tool_config={
            "tools": ToolPolicy(allowed_tools=("run_shell_command",), sandbox=Sandbox.full)
        },
        # 429/5xx: 7 attempts with 1.5 s doubling backoff (~75 s), not configurable
        fault_budget_s=130.0,
        sampling=True,
        schema_tool="structured_output",
        # none: every other built-in and meta tool is excluded
    ),
}

MIB8 = 8 * 1024 * 1024


def _offered_tools(request: RecordedRequest) -> set[str]:
    """Tool names a Chat Completions / Responses / Anthropic request offered the model."""
    tools = request.body.get("tools") or [] if isinstance(request.body, dict) else []
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        names.add(str(function.get("name")))
    return names


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One private HOME per CLI for the whole module (first runs unpack caches there)."""
    return {name: tmp_path_factory.mktemp(f"home-{name}") for name in BACKENDS}


async def _run(
    backend: Backend,
    server: FakeModelServer,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    budget_s: float,
    **config: Any,
) -> tuple[Any, float]:
    exe = cli_executable(backend.name)
    if exe is None:
        pytest.skip(f"{backend.name} not installed (run .ci/steps/21-more-agent-clis)")
    monkeypatch.setenv(ALLOW_ENV, "1")
    marker = new_marker()
    options = backend.options(server, home) | {
        "executable": str(exe),
        "env": {"HOME": str(home), MARKER_ENV: marker},
        "grace_s": 1.0,
    }
    adapter = create_llm_adapter(
        backend.name, retry=False, model="fake-model", **{backend.name: options}
    )
    base: dict[str, Any] = {
        "model": "fake-model",
        "startup_timeout_s": 60.0,
        "idle_timeout_s": 30.0,
        "total_timeout_s": budget_s,
    }
    started = time.monotonic()
    result = await adapter.complete(as_messages("Say hi"), CompletionConfig(**(base | config)))
    elapsed = time.monotonic() - started
    assert wait_no_live_processes(marker) == [], "processes of the run outlived it"
    assert elapsed < budget_s + 5
    return result, elapsed


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[str(request.param)]


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        yield srv


async def test_plain_text_answer_comes_back_whole(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    server.default = "Hi there, from the fake model!"
    sampling = {"temperature": 0.25, "max_tokens": 123} if backend.sampling else {}
    result, _ = await _run(backend, server, homes[backend.name], mp, 90, **sampling)
    assert isinstance(result, Success), result
    assert result.unwrap().content == "Hi there, from the fake model!"
    turn = [r for r in server.model_requests if "Say hi" in r.user_text]
    assert turn
    if sampling:
        assert turn[0].body["temperature"] == 0.25
        assert turn[0].body["max_tokens"] == 123


async def test_schema_answer_is_parsed_json(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    schema = {
        "type": "object",
        "properties": {"status": {"type": "string"}, "answer": {"type": "integer"}},
        "required": ["status", "answer"],
        "additionalProperties": False,
    }
    server.default = {"status": "ok", "answer": 42}
    result, _ = await _run(backend, server, homes[backend.name], mp, 120, output_schema=schema)
    assert isinstance(result, Success), result
    assert result.unwrap().parsed == {"status": "ok", "answer": 42}
    if backend.schema_tool:  # NATIVE: the CLI offered its schema tool and took the call
        assert backend.schema_tool in _offered_tools(server.model_requests[0])
        assert len(server.model_requests) == 1


async def test_tool_call_turn_runs_the_tool_and_answers_after_it(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    server.reply(ToolCallReply(backend.tool, backend.tool_args, then="done after the tool"))
    result, _ = await _run(backend, server, homes[backend.name], mp, 120, **backend.tool_config)
    assert isinstance(result, Success), result
    assert result.unwrap().content == "done after the tool"
    follow_up = server.model_requests[-1].raw.decode("utf-8", "replace")
    assert "hello-from-tool" in follow_up  # the tool really ran and its output went back
    policy = backend.tool_config.get("tools")
    if isinstance(policy, ToolPolicy) and policy.allowed_tools is not None:
        offered = _offered_tools(server.model_requests[0])
        assert backend.tool in offered
        assert offered <= set(policy.allowed_tools) | backend.always_tools, offered


async def test_a_server_the_tool_detached_ends_with_the_call(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    """A tool that starts a dev server in a session of its own (`setsid ... &`): the process
    left the CLI's group, and still ends with the call (`_run` asserts no process of the
    run is alive)."""
    token = f"agentport-dev-server-{new_marker()}"
    command = f"setsid sh -c 'sleep 1000' {token} </dev/null >/dev/null 2>&1 & echo started"
    args = {**backend.tool_args, "command": command}
    server.reply(ToolCallReply(backend.tool, args, then="done after the tool"))
    result, _ = await _run(backend, server, homes[backend.name], mp, 120, **backend.tool_config)
    assert isinstance(result, Success), result
    assert "started" in server.model_requests[-1].raw.decode("utf-8", "replace")  # it ran
    assert _with_token(token) == []


def _with_token(token: str) -> list[str]:
    """Pids whose command line holds *token*."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and token.encode() in (proc / "cmdline").read_bytes():
                found.append(proc.name)
        except OSError:
            continue
    return found


#: what each CLI's stream says a run with a tool step spent: every request's usage summed
#: (pi, opencode: one report per request; qwen: the run's total), or nothing (copilot's
#: `--output-format json` carries no token counts)
TOOL_RUN_USAGE = {"pi": (3000, 30), "opencode": (3000, 30), "qwen": (3000, 30), "copilot": (0, 0)}


async def test_usage_of_a_tool_step_counts_both_model_requests(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    """The tool-call request costs 1000 in / 10 out, the answer after the tool 2000 / 20: the
    run spent 3000 / 30, not the last request's 2000 / 20."""
    then = TextReply("done after the tool", usage=TokenUsage(input_tokens=2000, output_tokens=20))
    first = TokenUsage(input_tokens=1000, output_tokens=10)
    server.reply(ToolCallReply(backend.tool, backend.tool_args, then=then, usage=first))
    result, _ = await _run(backend, server, homes[backend.name], mp, 120, **backend.tool_config)
    assert isinstance(result, Success), result
    usage = result.unwrap().usage
    assert (usage.input_tokens, usage.output_tokens) == TOOL_RUN_USAGE[backend.name]


FAULTS: dict[str, tuple[Callable[[], Any], ErrorKind]] = {
    "http401": (HttpFault.unauthorized, ErrorKind.auth_required),
    "http429": (lambda: HttpFault.rate_limited(retry_after=1), ErrorKind.rate_limited),
    "http500": (HttpFault.server_error, ErrorKind.server_error),
    "dropped": (DropConnection, ErrorKind.network),
}


async def test_api_failures_are_classified_not_returned_as_answers(
    backend: Backend, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    """401, 429, 500 and a dropped connection, each against its own always-failing server,
    run concurrently (the CLIs' retry loops dominate the wall time)."""
    kinds: dict[str, ErrorKind | str] = {}
    details: dict[str, str] = {}

    async def one(fault: str) -> None:
        make, _ = FAULTS[fault]
        # a HOME per concurrent run: opencode runs sharing one data folder failed at random
        home = homes[backend.name] / f"fault-{fault}"
        home.mkdir(exist_ok=True)
        with FakeModelServer() as server:
            server.default = make()
            result, _ = await _run(
                backend,
                server,
                home,
                mp,
                backend.fault_budget_s,
                startup_timeout_s=backend.fault_budget_s,
                idle_timeout_s=backend.fault_budget_s,
            )
        kinds[fault] = result.failure().kind if isinstance(result, Failure) else repr(result)
        details[fault] = repr(result.failure() if isinstance(result, Failure) else result)

    async with anyio.create_task_group() as tg:
        for fault in FAULTS:
            tg.start_soon(one, fault)
    assert kinds == {fault: kind for fault, (_, kind) in FAULTS.items()}, details


async def test_hanging_model_ends_in_the_idle_timeout(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    server.default = Hang()
    # some CLIs print nothing before the model's first byte: the start-up budget then applies
    result, elapsed = await _run(
        backend, server, homes[backend.name], mp, 60, startup_timeout_s=20.0, idle_timeout_s=8.0
    )
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.timeout
    assert elapsed < 40


async def test_eight_mebibyte_answer_arrives_intact(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    reply = LargeReply(size=MIB8)
    server.default = reply
    result, _ = await _run(backend, server, homes[backend.name], mp, 120)
    if backend.large_answer_loss and isinstance(result, Failure):
        # known CLI defect (see the docs page): a clear failure, not a silent partial answer
        assert result.failure().kind is ErrorKind.bad_output, result.failure()
        return
    assert isinstance(result, Success), result
    assert len(result.unwrap().content) == MIB8
    assert result.unwrap().content == reply.text


async def test_runtime_streams_events_and_ends_with_the_final_answer(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], mp: pytest.MonkeyPatch
) -> None:
    exe = cli_executable(backend.name)
    if exe is None:
        pytest.skip(f"{backend.name} not installed (run .ci/steps/21-more-agent-clis)")
    mp.setenv(ALLOW_ENV, "1")
    marker = new_marker()
    options = backend.options(server, homes[backend.name]) | {
        "executable": str(exe),
        "env": {"HOME": str(homes[backend.name]), MARKER_ENV: marker},
    }
    server.default = "streamed hello"
    runtime = create_agent_runtime(backend.name, model="fake-model", **{backend.name: options})
    with anyio.fail_after(90):
        async with runtime:
            events = [e async for e in runtime.send("Say hi")]
    assert events[-1].type is EventType.final, events[-1]
    assert events[-1].content == "streamed hello"
    assert runtime.handle.session_id  # every one of these CLIs reports a session id
    assert wait_no_live_processes(marker) == []


def test_agentport_complete_works_with_a_user_config_file(
    backend: Backend, server: FakeModelServer, homes: dict[str, Path], tmp_path: Path
) -> None:
    """`agentport complete "Say hi" --backend B` with the endpoint in the user's config file,
    the way the docs page tells a user to write it."""
    exe = cli_executable(backend.name)
    if exe is None:
        pytest.skip(f"{backend.name} not installed (run .ci/steps/21-more-agent-clis)")
    server.default = "Hi from the config file"
    table = backend.options(server, homes[backend.name])
    lines = ["[llm]", 'model = "fake-model"', "", f"[llm.{backend.name}]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    config = tmp_path / "config.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env |= {
        "AGENTPORT_CONFIG_FILE": str(config),
        "HOME": str(homes[backend.name]),
        "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "agentport", "complete", "Say hi", "--backend", backend.name],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hi from the config file"
