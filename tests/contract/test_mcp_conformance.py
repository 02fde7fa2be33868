"""`agentport mcp --http` against the official MCP conformance suite
(@modelcontextprotocol/conformance, installed by .ci/steps/23-mcp-conformance), started
the way a user starts it, and SSE event ids checked on the wire.

Every scenario that applies to a server with agentport's capabilities (tools and prompts,
no resources of its own, no logging or completion capability, no sampling or elicitation)
must pass. The others test the suite's own reference server: they call fixture tools,
prompts and resources (`test_simple_text`, `test://static-text`, ...) that only that
server has (`NOT_APPLICABLE`, with the reason; docs/mcp.md lists them).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install -e '.[mcp]'")

PREFIX = Path(
    os.environ.get("AGENTPORT_MCP_CONFORMANCE_PREFIX")
    or Path.home() / ".cache" / "agentport-ci" / "mcp-conformance"
)
MUST_PASS = (
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "server-sse-multiple-streams",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
)
_FIXTURE = "calls a fixture of the suite's reference server that agentport does not have"
NOT_APPLICABLE = {
    "logging-set-level": "agentport declares no logging capability (-32601 is the answer)",
    "completion-complete": "agentport declares no completions capability",
    "tools-call-simple-text": _FIXTURE,
    "tools-call-image": _FIXTURE,
    "tools-call-audio": _FIXTURE,
    "tools-call-embedded-resource": _FIXTURE,
    "tools-call-mixed-content": _FIXTURE,
    "tools-call-with-logging": _FIXTURE,
    "tools-call-with-progress": _FIXTURE + " (progress: tests/mcp_server/test_mcp_server.py)",
    "tools-call-sampling": "agentport's tools never ask the client to sample",
    "tools-call-elicitation": "agentport's tools never elicit",
    "elicitation-sep1034-defaults": "agentport's tools never elicit",
    "elicitation-sep1330-enums": "agentport's tools never elicit",
    "resources-read-text": _FIXTURE,
    "resources-read-binary": _FIXTURE,
    "resources-templates-read": _FIXTURE,
    "resources-subscribe": "agentport declares no resource subscriptions",
    "resources-unsubscribe": "agentport declares no resource subscriptions",
    "prompts-get-simple": _FIXTURE,
    "prompts-get-with-args": _FIXTURE,
    "prompts-get-embedded-resource": _FIXTURE,
    "prompts-get-with-image": _FIXTURE,
    "json-schema-2020-12": _FIXTURE,
    "server-sse-polling": _FIXTURE + " (test_reconnection; its stream checks: below)",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    exe = Path(sys.executable).with_name("agentport")
    port = _free_port()
    home = tmp_path_factory.mktemp("mcp-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    proc = subprocess.Popen(
        [str(exe), "mcp", "--http", f"127.0.0.1:{port}", "--root", str(home)],
        cwd=home,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _suite() -> Path:
    exe = PREFIX / "bin" / "conformance"
    if not (exe.is_file() and (PREFIX / "bin" / "node").is_file()):
        pytest.skip("the MCP conformance suite is not installed (.ci/steps/23-mcp-conformance)")
    return exe


def test_every_applicable_conformance_scenario_passes(server_url: str, tmp_path: Path) -> None:
    exe = _suite()
    env = os.environ | {"PATH": f"{PREFIX / 'bin'}:{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(exe), "server", "--url", server_url, "-o", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    results: dict[str, list[str]] = {}
    for checks in tmp_path.glob("server-*/checks.json"):
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        results[scenario] = [c["status"] for c in json.loads(checks.read_text())]
    assert results, done.stdout[-2000:] + done.stderr[-2000:]
    for scenario in MUST_PASS:
        statuses = results.get(scenario)
        assert statuses, f"{scenario} did not run"
        assert "FAILURE" not in statuses, f"{scenario}: {statuses}"
    unknown = set(results) - set(MUST_PASS) - set(NOT_APPLICABLE)
    assert not unknown, f"scenarios new to this suite version, classify them: {unknown}"


def test_sse_polling_gets_a_priming_event_and_a_retry_field(
    server_url: str, tmp_path: Path
) -> None:
    """The suite's `server-sse-polling` (pending, so run by name) negotiates 2025-11-25 and
    then sends `MCP-Protocol-Version: 2025-03-26`: the priming event and its `retry:` field
    follow the session's negotiated version. Its tool call fails (`test_reconnection` is a
    fixture of the suite's reference server), the stream checks must not."""
    exe = _suite()
    env = os.environ | {"PATH": f"{PREFIX / 'bin'}:{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(exe), "server", "--url", server_url, "--scenario", "server-sse-polling",
         "-o", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    statuses = {
        c["id"]: c["status"]
        for checks in tmp_path.glob("*/checks.json")
        for c in json.loads(checks.read_text())
    }
    assert statuses, done.stdout[-2000:] + done.stderr[-2000:]
    assert statuses.get("server-sse-priming-event") == "SUCCESS", statuses
    assert statuses.get("server-sse-retry-field") == "SUCCESS", statuses


def test_every_sse_event_has_an_id_so_a_dropped_stream_can_resume(server_url: str) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    with httpx.Client(timeout=10) as client:
        r = client.post(server_url, json=init, headers=headers)
        assert r.status_code == 200
        session = r.headers["mcp-session-id"]
        events = [block for block in r.text.split("\n\n") if "data:" in block]
        assert events
        assert all(any(line.startswith("id:") for line in e.splitlines()) for e in events), r.text
        assert "retry:" in r.text
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        client.post(
            server_url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=headers,
        )
        r = client.post(
            server_url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        )
        ids = [line for line in r.text.splitlines() if line.startswith("id:")]
        assert ids, r.text
