"""What the user's own MCP servers cost every call, and what strict per-call servers save.

For each CLI (claude, gemini; the pinned binaries of `.ci/steps/20-agent-clis`), against
`FakeModelServer` (which answers at once), three calls of one prompt, each REPEAT times:

1. `global`: `ToolPolicy.cli_defaults()` with SERVERS working stdio MCP servers (the MCP
   SDK in Python, as a user's own servers often are) in the user's own configuration;
2. `strict+fn`: the default tool policy plus one Python function as a tool (the call's own
   `functions` server on 127.0.0.1) over the same HOME: strict, the user's servers stay off;
3. `none`: the default tool policy and no servers (no MCP at all).

Prints the median wall time of a call and of its first model request (start-up: how long
before the model is asked anything). Network: loopback only.

    PYTHONPATH=src python benchmarks/mcp_startup.py [--repeat 3] [--servers 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from agentport import create_llm_adapter
from agentport.core import CompletionConfig, Message, ToolPolicy
from agentport.testing import ALLOW_ENV, FakeModelServer

SERVER = '''
from mcp.server.mcpserver import MCPServer
server = MCPServer("user")

@server.tool()
def probe(text: str) -> str:
    """Echo the text."""
    return text

server.run("stdio")
'''


def _bin(name: str) -> str | None:
    prefix = Path(
        os.environ.get("AGENTPORT_CLI_PREFIX") or Path.home() / ".cache/agentport-ci/agent-clis"
    )
    listed = prefix / "bin-dir.txt"
    folder = Path(listed.read_text().strip()) if listed.is_file() else prefix / "bin"
    exe = folder / name
    return str(exe) if exe.exists() else None


def _home(root: Path, name: str, count: int, srv: FakeModelServer) -> tuple[Path, dict[str, Any]]:
    home = root / name
    home.mkdir()
    script = root / "user_server.py"
    script.write_text(SERVER)
    entry = {"command": sys.executable, "args": [str(script)],
             "env": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}}  # fmt: skip
    servers = {f"user{i}": dict(entry) for i in range(count)}
    if name == "claude":
        (home / ".claude.json").write_text(json.dumps({"mcpServers": servers}))
        return home, {"base_url": srv.anthropic_base_url, "api_key": "k", "max_retries": 0}
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"maxAttempts": 1, "disableAutoUpdate": True},
        "privacy": {"usageStatisticsEnabled": False},
        "mcpServers": {k: {**v, "trust": True} for k, v in servers.items()},
    }))  # fmt: skip
    return home, {"base_url": srv.gemini_base_url, "api_key": "k"}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def _one(name: str, exe: str, mode: str, count: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer(default="done") as srv:
        home, options = _home(Path(tmp), name, count, srv)
        options |= {"executable": exe, "env": {"HOME": str(home)}}
        adapter = create_llm_adapter(name, retry=False, model="fake-model", **{name: options})
        fields: dict[str, Any] = {"model": "fake-model", "total_timeout_s": 120}
        if mode == "global":
            fields["tools"] = ToolPolicy.cli_defaults()
        elif mode == "strict+fn":
            fields["functions"] = (add,)
        started = time.monotonic()
        first: list[float] = []
        srv.set_default(lambda req: first.append(time.monotonic()) or "done")  # type: ignore[func-returns-value]
        result = await adapter.complete([Message.user("Say done.")], CompletionConfig(**fields))
        total = time.monotonic() - started
        result.unwrap()
        return total, (first[0] - started) if first else float("nan")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--servers", type=int, default=6)
    args = parser.parse_args()
    os.environ[ALLOW_ENV] = "1"
    print(
        f"{'cli':8} {'mode':10} {'call s':>8} {'first request s':>16}"
        f"  ({args.servers} user servers)"
    )
    for name in ("claude", "gemini"):
        exe = _bin(name)
        if exe is None:
            print(f"{name:8} not installed")
            continue
        for mode in ("global", "strict+fn", "none"):
            runs = [await _one(name, exe, mode, args.servers) for _ in range(args.repeat)]
            total = statistics.median(r[0] for r in runs)
            first = statistics.median(r[1] for r in runs)
            print(f"{name:8} {mode:10} {total:8.2f} {first:16.2f}")


if __name__ == "__main__":
    anyio.run(main)
