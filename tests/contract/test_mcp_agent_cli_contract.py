"""REAL agent CLIs as MCP clients of `agentport mcp`, each configured the way its docs say
(Claude Code: a `--mcp-config` file with `mcpServers`; Gemini CLI: `mcpServers` in
`~/.gemini/settings.json`), driven headless against the fake model server, which answers
with a call of the agentport `complete` tool and then echoes the tool result. The agentport
server's configured (scripted) backend answers with a token only the server knows, so the
token in the model's follow-up request proves the server ran the call, and the token in the
CLI's final answer proves the result reached the agent.

Runs inside `unshare -n` (scripts/test.sh) like the other contract tests."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentport.testing import (
    FakeModelServer,
    RecordedRequest,
    ReplyLike,
    ToolCallReply,
)

pytestmark = pytest.mark.contract


def _cli(name: str) -> Path:
    prefix = os.environ.get("AGENTPORT_CLI_PREFIX") or str(
        Path.home() / ".cache" / "agentport-ci" / "agent-clis"
    )
    marker = Path(prefix) / "bin-dir.txt"
    folder = Path(marker.read_text().strip()) if marker.is_file() else Path(prefix) / "bin"
    exe = folder / name
    if not exe.exists():
        pytest.skip(f"{name} not installed: run .ci/steps/20-agent-clis (see docs/runner.md)")
    if {name for _, name in socket.if_nameindex()} - {"lo"}:
        pytest.skip("network not isolated: run through scripts/test.sh (unshare -n)")
    return exe


TOOL = "mcp__agentport__complete"


def _scripted_model() -> Callable[[RecordedRequest], ReplyLike]:
    """The model's turns, as a model meets Claude Code's defaults. Since 2.1.3xx tool search
    is on by default: MCP tools are listed as deferred and only offered after the model calls
    `ToolSearch` with `select:<name>`. Older releases did not wait for MCP servers before the
    first turn (agentport's server takes seconds to import), so while neither the tool nor
    `ToolSearch` is offered the model calls claude's own `WaitForMcpServers`. Then it calls
    the agentport tool once and answers with the tool's result. After a bounded number of
    turns it gives up, so a change in claude fails the test in seconds, not at its timeout."""
    called = False
    turns = 0

    def turn(req: RecordedRequest) -> ReplyLike:
        nonlocal called, turns
        if not req.tool_names:  # claude's side request for a session title
            return "agentport session"
        turns += 1
        if turns > 12:
            return "gave up: the agentport tool was never offered"
        if called and req.has_tool_result:
            return f"The tool said: {' '.join(req.tool_results)}"
        if TOOL in req.tool_names:
            called = True
            return ToolCallReply(TOOL, {"prompt": "What is the magic word?"})
        if "ToolSearch" in req.tool_names:
            return ToolCallReply("ToolSearch", {"query": f"select:{TOOL}", "max_results": 5})
        return ToolCallReply("WaitForMcpServers", {})

    return turn


def test_claude_calls_an_agentport_tool_over_mcp(tmp_path: Path) -> None:
    exe = _cli("claude")
    token = "agentport-" + secrets.token_hex(6)
    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "agentport.toml"
    config.write_text(f'[llm]\nbackend = "scripted"\n[llm.scripted]\ndefault = "{token}"\n')
    # the file `claude --mcp-config` reads (the same `mcpServers` shape as a project .mcp.json)
    mcp_config = tmp_path / "mcp.json"
    server_env = {
        "AGENTPORT_CONFIG_FILE": str(config),
        "AGENTPORT_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    mcp_config.write_text(json.dumps({
        "mcpServers": {
            "agentport": {
                "command": sys.executable,
                "args": ["-m", "agentport", "mcp", "--root", str(tmp_path)],
                "env": server_env,
            }
        }
    }))  # fmt: skip
    with FakeModelServer() as srv:
        srv.set_default(_scripted_model())
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "ANTHROPIC_BASE_URL": srv.anthropic_base_url.rstrip("/"),
            "ANTHROPIC_API_KEY": "test-key",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "MCP_TIMEOUT": "120000",  # the server's first start imports the SDK: allow 2 min
        }
        done = subprocess.run(
            [str(exe), "-p", "--output-format", "json", "--mcp-config", str(mcp_config),
             "--strict-mcp-config", "--allowedTools=mcp__agentport__complete",
             "Ask agentport for the magic word."],
            capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        requests = srv.model_requests
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert requests, "claude never reached the fake model server"
    summary = [(len(r.tool_names), r.tool_results) for r in requests]
    offered = [r for r in requests if "mcp__agentport__complete" in r.tool_names]
    assert offered, (summary, done.stdout[-1500:], done.stderr[-1500:])
    results = [r for r in requests if r.has_tool_result]
    assert results, "claude never sent the tool result back"
    # the token only the agentport server knows came back as the tool's result
    assert any(token in " ".join(r.tool_results) for r in results), summary
    final = json.loads(done.stdout)
    assert token in final["result"], final


def _complete_caller(token_box: list[str]) -> Callable[[RecordedRequest], ReplyLike]:
    """Call the offered tool whose name ends in `complete` (Gemini CLI lists MCP tools under
    their own name, or `server__tool` on a clash), then answer with its result."""
    called = False

    def turn(req: RecordedRequest) -> ReplyLike:
        nonlocal called
        names = [n for n in req.tool_names if n.endswith("complete")]
        if called and req.has_tool_result:
            return f"The tool said: {' '.join(req.tool_results)}"
        if names and not called:
            called = True
            token_box.append(names[0])
            return ToolCallReply(names[0], {"prompt": "What is the magic word?"})
        return "no agentport tool offered"

    return turn


def test_gemini_calls_an_agentport_tool_over_mcp(tmp_path: Path) -> None:
    """Gemini CLI with agentport registered in `~/.gemini/settings.json` `mcpServers`."""
    exe = _cli("gemini")
    token = "agentport-" + secrets.token_hex(6)
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    config = tmp_path / "agentport.toml"
    config.write_text(f'[llm]\nbackend = "scripted"\n[llm.scripted]\ndefault = "{token}"\n')
    server_env = {
        "AGENTPORT_CONFIG_FILE": str(config),
        "AGENTPORT_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"maxAttempts": 1, "disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "mcpServers": {
            "agentport": {
                "command": sys.executable,
                "args": ["-m", "agentport", "mcp", "--root", str(tmp_path)],
                "env": server_env,
                "timeout": 120000,
                "trust": True,
            }
        },
    }))  # fmt: skip
    called: list[str] = []
    with FakeModelServer() as srv:
        srv.set_default(_complete_caller(called))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "GOOGLE_GEMINI_BASE_URL": srv.gemini_base_url.rstrip("/"),
            "GEMINI_API_KEY": "test-key",
        }
        done = subprocess.run(
            [str(exe), "--output-format", "json", "--skip-trust", "--model=gemini-2.5-flash",
             "--allowed-mcp-server-names=agentport", "-p", "Ask agentport for the magic word."],
            capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        requests = srv.model_requests
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    summary = [(r.tool_names, r.tool_results) for r in requests]
    assert called, summary  # the agentport tool was offered and the model called it
    results = [r for r in requests if r.has_tool_result]
    assert any(token in " ".join(r.tool_results) for r in results), summary
    final = json.loads(done.stdout[done.stdout.index("{") :])
    assert token in final["response"], final


def _toml_table(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in values.items()) + "}"


def test_codex_calls_an_agentport_tool_over_mcp_and_apply_needs_approval(tmp_path: Path) -> None:
    """codex with agentport in `$CODEX_HOME/config.toml` `[mcp_servers.agentport]` as
    docs/mcp.md gives it: `required = true` (codex waits for the server before its first
    model request; without it the first request offers no agentport tool) and codex's
    default tool approvals. codex offers the server's tools as a Responses `namespace` tool
    `mcp__agentport` and runs a call of `complete` (annotated read-only) at once; `apply`
    (destructive) is refused headless, before it reaches the server. Regression: the
    documented setup listed no agentport tool, and no test drove codex as a client."""
    exe = _cli("codex")
    token = "agentport-" + secrets.token_hex(6)
    home = tmp_path / "codex-home"
    home.mkdir()
    config = tmp_path / "agentport.toml"
    config.write_text(f'[llm]\nbackend = "scripted"\n[llm.scripted]\ndefault = "{token}"\n')
    server_env = {
        "AGENTPORT_CONFIG_FILE": str(config),
        "AGENTPORT_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    steps: list[str] = []

    def turn(req: RecordedRequest) -> ReplyLike:
        offered = [t for t in req.body.get("tools") or [] if t.get("name") == "mcp__agentport"]
        if not offered:
            return "no agentport tool offered"
        if req.has_tool_result and len(steps) == 2:
            return f"The tool said: {' '.join(req.tool_results)}"
        if req.has_tool_result:
            steps.append("apply")
            args = {"graph": "graph.json", "query_id": "0" * 16, "actions": [], "approve": True}
            return ToolCallReply("apply", args, namespace="mcp__agentport")
        steps.append("complete")
        args = {"prompt": "What is the magic word?"}
        return ToolCallReply("complete", args, namespace="mcp__agentport")

    with FakeModelServer() as srv:
        srv.set_default(turn)
        (home / "config.toml").write_text(
            'model = "gpt-5.4"\nmodel_provider = "fake"\n'
            "[model_providers.fake]\n"
            f'name = "fake"\nbase_url = "{srv.openai_base_url}"\nenv_key = "FAKE_KEY"\n'
            'wire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
            "[mcp_servers.agentport]\n"
            f"command = {json.dumps(sys.executable)}\n"
            f'args = ["-m", "agentport", "mcp", "--root", {json.dumps(str(tmp_path))}]\n'
            f"env = {_toml_table(server_env)}\n"
            "required = true\nstartup_timeout_sec = 120\ntool_timeout_sec = 600\n"
        )
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "CODEX_HOME": str(home),
            "FAKE_KEY": "test-key",
        }
        done = subprocess.run(
            [str(exe), "exec", "--json", "--skip-git-repo-check", "--color", "never",
             f"--cd={tmp_path}", "Ask agentport for the magic word."],
            capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        requests = srv.model_requests
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert steps == ["complete", "apply"], (steps, done.stdout[-2000:])
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    calls = {
        e["item"]["tool"]: e["item"]
        for e in events
        if e.get("type") == "item.completed" and e["item"].get("type") == "mcp_tool_call"
    }
    assert calls["complete"]["status"] == "completed", calls
    assert calls["complete"]["result"]["structured_content"]["content"] == token
    # the token only the agentport server knows reached the model as the tool's result
    assert any(token in " ".join(r.tool_results) for r in requests if r.has_tool_result)
    assert calls["apply"]["status"] == "failed", calls
    assert "requires approval" in calls["apply"]["error"]["message"], calls
    assert not (tmp_path / "graph.json").exists()
