"""The caller's own tools with the REAL agent CLIs, driven through agentport against the fake
model server: `CompletionConfig(functions=(secret_sum,))`. The model calls the function's
tool; the function runs in this process (its arguments are recorded), its result (a token
only it knows) reaches the model's next request, and the CLI's answer carries it.

Strict by default: a working MCP server `planted` sits in the user's own CLI configuration
(the run's HOME); the request the CLI sends at start-up lists the tools it loaded, and the
planted server's tool is not among them. The control run (`ToolPolicy.cli_defaults()`, no
servers of the call's own) shows the planted server does load when the caller asks for the
CLI's own configuration, so the strict run's absence is not an accident of the plant.

Binaries: `.ci/steps/20-agent-clis` (skipped when absent). Loopback only: run under
`unshare -n` (scripts/test.sh).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from _acp_agents import acp_options
from _more_clis_util import cli_executable, network_isolated
from agentport import create_llm_adapter
from agentport.core import CompletionConfig, McpServer, Message, Sandbox, ToolPolicy
from agentport.testing import ALLOW_ENV, FakeModelServer, RecordedRequest, ReplyLike, ToolCallReply

pytest.importorskip("mcp")

pytestmark = [
    pytest.mark.contract,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not network_isolated(), reason="run under `unshare -n` (loopback only) to reach no host"
    ),
]

CLIS = ("claude", "codex", "gemini", "qwen", "opencode", "copilot")

# a stdio MCP server with one tool, planted in the user's own CLI configuration
PLANTED = '''
from mcp.server.mcpserver import MCPServer
server = MCPServer("planted")

@server.tool()
def planted_probe(text: str) -> str:
    """Echo the text."""
    return text

server.run("stdio")
'''


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _real_clis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")


def _planted_entry(tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "planted_server.py"
    script.write_text(PLANTED)
    pythonpath = os.pathsep.join(p for p in sys.path if p)
    return {"command": sys.executable, "args": [str(script)], "env": {"PYTHONPATH": pythonpath}}


def _setup(
    name: str, server: FakeModelServer, home: Path, planted: dict[str, Any]
) -> dict[str, Any]:
    """The backend's options, and the planted server in the user's own configuration."""
    if name == "claude":
        (home / ".claude.json").write_text(json.dumps({"mcpServers": {"planted": planted}}))
        return {"base_url": server.anthropic_base_url, "api_key": "test-key", "max_retries": 0}
    if name == "gemini":
        (home / ".gemini").mkdir(exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"maxAttempts": 1, "disableAutoUpdate": True},
            "privacy": {"usageStatisticsEnabled": False},
            "mcpServers": {"planted": {**planted, "trust": True}},
        }))  # fmt: skip
        return {"base_url": server.gemini_base_url, "api_key": "test-key"}
    if name == "codex":
        (home / ".codex").mkdir(exist_ok=True)
        env = ", ".join(f"{k} = {json.dumps(v)}" for k, v in planted["env"].items())
        (home / ".codex" / "config.toml").write_text(
            "[mcp_servers.planted]\n"
            f"command = {json.dumps(planted['command'])}\n"
            f"args = {json.dumps(planted['args'])}\n"
            f"env = {{ {env} }}\nrequired = true\nstartup_timeout_sec = 60\n"
        )
        return {"base_url": server.openai_base_url, "api_key": "test-key",
                "request_max_retries": 0, "stream_max_retries": 0}  # fmt: skip
    if name == "qwen":
        (home / ".qwen").mkdir(exist_ok=True)
        settings = {"mcpServers": {"planted": {**planted, "trust": True}}}
        (home / ".qwen" / "settings.json").write_text(json.dumps(settings))
        return {"base_url": server.openai_base_url, "api_key": "test-key", "max_retries": 0}
    if name == "opencode":
        (home / ".config" / "opencode").mkdir(parents=True, exist_ok=True)
        local = {"type": "local", "command": [planted["command"], *planted["args"]],
                 "environment": planted["env"], "enabled": True}  # fmt: skip
        settings = {"mcp": {"planted": local}}
        (home / ".config" / "opencode" / "opencode.json").write_text(json.dumps(settings))
        return {"base_url": server.openai_base_url, "api_key": "test-key"}
    if name == "copilot":
        (home / ".copilot").mkdir(exist_ok=True)
        local = {"type": "local", **planted, "tools": ["*"]}
        settings = {"mcpServers": {"planted": local}}
        (home / ".copilot" / "mcp-config.json").write_text(json.dumps(settings))
        return {"base_url": server.openai_base_url, "api_key": "test-key"}
    raise AssertionError(name)


def _offered(req: RecordedRequest) -> list[str]:
    """Tool names the request offers, codex's namespace tools (`mcp__<server>`) included."""
    names = list(req.tool_names)
    body = req.body if isinstance(req.body, dict) else {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            inner = [t.get("name") for t in tool.get("tools") or [] if isinstance(t, dict)]
            names += [f"{tool.get('name')}/{n}" for n in inner]
    return names


def _model(calls: list[str]) -> Callable[[RecordedRequest], ReplyLike]:
    """First wait for every MCP server to connect where the CLI offers that (claude starts
    its first turn while servers are still pending: its init event says `pending`), so a
    server that would load has loaded; then call the caller's tool once when it is offered,
    and answer with its result."""
    waited = searched = False

    def turn(req: RecordedRequest) -> ReplyLike:
        nonlocal waited, searched
        names = _offered(req)
        if "WaitForMcpServers" in names and not waited:
            waited = True
            return ToolCallReply("WaitForMcpServers", {})
        if "tool_search" in names and not searched:  # qwen defers MCP tools behind it
            searched = True
            return ToolCallReply("tool_search", {"query": "planted"})
        if calls and req.has_tool_result and any("secret_sum" in n for n in names):
            return "The tool said: " + " ".join(req.tool_results)
        mine = [n for n in names if n.endswith("secret_sum")]
        if mine and not calls:
            calls.append(mine[0])
            namespace, _, tool = mine[0].rpartition("/")
            return ToolCallReply(tool, {"a": 2, "b": 3}, namespace=namespace or None)
        return "no caller tool was offered"

    return turn


@pytest.mark.parametrize("name", CLIS)
async def test_the_callers_function_runs_and_only_the_callers_servers_load(
    name: str, tmp_path: Path
) -> None:
    exe = cli_executable(name)
    if exe is None:
        pytest.skip(f"{name} not installed")
    home = tmp_path / "home"
    home.mkdir()
    token = "sum-token-" + secrets.token_hex(6)
    ran: list[tuple[int, int]] = []

    def secret_sum(a: int, b: int) -> str:
        """Add two integers and return the sum with a token."""
        ran.append((a, b))
        return f"{a + b} {token}"

    called: list[str] = []
    with FakeModelServer(default="done") as server:
        server.set_default(_model(called))
        options = _setup(name, server, home, _planted_entry(tmp_path)) | {
            "executable": str(exe),
            "env": {"HOME": str(home)},
            "grace_s": 1.0,
        }
        adapter = create_llm_adapter(name, retry=False, model="fake-model", **{name: options})
        config = CompletionConfig(
            model="fake-model", functions=(secret_sum,), idle_timeout_s=60, total_timeout_s=150
        )
        result = await adapter.complete([Message.user("What is 2 + 3? Use the tool.")], config)
        requests = list(server.model_requests)
    assert requests, f"{name} never reached the fake server: {result}"
    offered = sorted({n for r in requests for n in _offered(r)})
    assert called, f"{name} never offered the caller's tool: {offered}, {result}"
    assert not [n for n in offered if "planted" in n], f"{name} loaded the user's server"
    found = " ".join(" ".join(r.tool_results) for r in requests)
    assert "planted_probe" not in found, f"{name}'s tool search found the user's server"
    assert ran == [(2, 3)], f"the function did not run once with the model's arguments: {ran}"
    followed = [r for r in requests if r.has_tool_result]
    assert any(token in " ".join(r.tool_results) for r in followed), "result never reached"
    assert token in result.unwrap().content, result


@pytest.mark.parametrize("name", CLIS)
async def test_the_users_server_loads_when_the_caller_asks_for_the_cli_defaults(
    name: str, tmp_path: Path
) -> None:
    """Control: with the CLI's own configuration the planted server is loaded."""
    exe = cli_executable(name)
    if exe is None:
        pytest.skip(f"{name} not installed")
    home = tmp_path / "home"
    home.mkdir()
    searched: list[str] = []

    def turn(req: RecordedRequest) -> ReplyLike:
        # qwen offers MCP tools behind its tool_search (deferred); claude waits for servers
        if "tool_search" in req.tool_names and not searched:
            searched.append("planted")
            return ToolCallReply("tool_search", {"query": "planted"})
        return _model([])(req) if "WaitForMcpServers" in req.tool_names else "done"

    with FakeModelServer(default="done") as server:
        server.set_default(_model([]) if name == "claude" else turn)
        options = _setup(name, server, home, _planted_entry(tmp_path)) | {
            "executable": str(exe),
            "env": {"HOME": str(home)},
            "grace_s": 1.0,
        }
        adapter = create_llm_adapter(name, retry=False, model="fake-model", **{name: options})
        config = CompletionConfig(
            model="fake-model", tools=ToolPolicy.cli_defaults(), total_timeout_s=150
        )
        result = await adapter.complete([Message.user("Say done.")], config)
        requests = list(server.model_requests)
    offered = sorted({n for r in requests for n in _offered(r)})
    found = " ".join(" ".join(r.tool_results) for r in requests)
    loaded = [n for n in offered if "planted" in n] or "planted_probe" in found
    assert loaded, (name, ", ".join(offered), found[-500:], result)


@pytest.mark.xfail(
    reason="gemini --acp 0.61 takes session/new mcpServers but its one model request offers "
    "none of their tools (measured); strict: a release that does offer them fails this mark",
    strict=True,
)
async def test_acp_session_new_carries_the_callers_function(tmp_path: Path) -> None:
    """ACP (`gemini --acp`): the call's servers travel in `session/new` `mcpServers`. The
    agent asks permission for each tool call, and the call's tool policy answers: here it
    names the caller's tool."""
    exe = cli_executable("gemini")
    if exe is None:
        pytest.skip("gemini not installed")
    ran: list[tuple[int, int]] = []
    token = "acp-token-" + secrets.token_hex(6)

    def secret_sum(a: int, b: int) -> str:
        """Add two integers and return the sum with a token."""
        ran.append((a, b))
        return f"{a + b} {token}"

    called: list[str] = []
    with FakeModelServer(default="done") as server:
        server.set_default(_model(called))
        options = acp_options("gemini", server, tmp_path / "home", exe=exe)
        assert options is not None
        adapter = create_llm_adapter("acp", retry=False, acp=options)
        config = CompletionConfig(
            functions=(secret_sum,),
            tools=ToolPolicy(allowed_tools=("secret_sum",), sandbox=Sandbox.full),
            total_timeout_s=150,
        )
        result = await adapter.complete([Message.user("What is 2 + 3? Use the tool.")], config)
        requests = list(server.model_requests)
    assert called, ([r.tool_names for r in requests], result)
    assert ran == [(2, 3)], result
    assert token in result.unwrap().content, result


ENV_SERVER = '''
import os
from mcp.server.mcpserver import MCPServer
server = MCPServer("envsrv")

@server.tool()
def env_probe(name: str) -> str:
    """The value of an environment variable of this server."""
    return os.environ.get(name, "unset")

server.run("stdio")
'''


@pytest.mark.parametrize("name", CLIS)
async def test_a_stdio_server_of_the_call_gets_its_env(name: str, tmp_path: Path) -> None:
    """A stdio `McpServer` with a secret in `env`: the CLI starts it with that variable (the
    tool's answer carries the value to the model), though no argv of the run carried it."""
    exe = cli_executable(name)
    if exe is None:
        pytest.skip(f"{name} not installed")
    home = tmp_path / "home"
    home.mkdir()
    secret = "env-secret-" + secrets.token_hex(8)
    script = tmp_path / "env_server.py"
    script.write_text(ENV_SERVER)
    pythonpath = os.pathsep.join(p for p in sys.path if p)
    server_config = McpServer(
        name="envsrv", command=sys.executable, args=(str(script),),
        env={"PROBE_SECRET": secret, "PYTHONPATH": pythonpath},
    )  # fmt: skip
    called: list[str] = []

    def turn(req: RecordedRequest) -> ReplyLike:
        names = _offered(req)
        if called and req.has_tool_result:
            return "The tool said: " + " ".join(req.tool_results)
        if "tool_search" in names and not req.has_tool_result:
            return ToolCallReply("tool_search", {"query": "env_probe"})
        mine = [n for n in names if n.endswith("env_probe")]
        if mine and not called:
            called.append(mine[0])
            namespace, _, tool = mine[0].rpartition("/")
            return ToolCallReply(tool, {"name": "PROBE_SECRET"}, namespace=namespace or None)
        return "no caller tool was offered"

    with FakeModelServer(default="done") as server:
        server.set_default(turn)
        options = _setup(name, server, home, _planted_entry(tmp_path)) | {
            "executable": str(exe),
            "env": {"HOME": str(home)},
            "grace_s": 1.0,
        }
        adapter = create_llm_adapter(name, retry=False, model="fake-model", **{name: options})
        config = CompletionConfig(
            model="fake-model", mcp_servers=(server_config,), idle_timeout_s=60,
            total_timeout_s=150,
        )  # fmt: skip
        result = await adapter.complete([Message.user("Read PROBE_SECRET.")], config)
        requests = list(server.model_requests)
    assert called, (sorted({n for r in requests for n in _offered(r)}), result)
    assert any(secret in " ".join(r.tool_results) for r in requests), result


async def test_claude_names_a_server_of_the_call_that_did_not_start(tmp_path: Path) -> None:
    """A call's MCP server that cannot start: real claude runs the call without its tools
    and reports the server's status only in its init line; the answer carries a warning
    naming it (never dropped in silence)."""
    exe = cli_executable("claude")
    if exe is None:
        pytest.skip("claude not installed")
    home = tmp_path / "home"
    home.mkdir()
    broken = McpServer(name="nosuchsrv", command=str(tmp_path / "no-such-server"))
    with FakeModelServer(default="answered without the tool") as server:
        options = _setup("claude", server, home, _planted_entry(tmp_path)) | {
            "executable": str(exe),
            "env": {"HOME": str(home)},
            "grace_s": 1.0,
        }
        adapter = create_llm_adapter("claude", retry=False, model="fake-model", claude=options)
        config = CompletionConfig(
            model="fake-model", mcp_servers=(broken,), idle_timeout_s=60, total_timeout_s=150
        )
        result = await adapter.complete([Message.user("Say hi.")], config)
    answer = result.unwrap()
    assert answer.content == "answered without the tool"
    assert any("nosuchsrv" in w and "did not start" in w for w in answer.warnings), answer
