"""MCP over HTTP on any loopback bind keeps DNS-rebinding protection, caps a request's size,
and answers every malformed stdio message.

Regressions: `--http [::1]:PORT` or `127.0.0.2:PORT` turned the Host/Origin checks off (the
SDK turns them on only for `127.0.0.1`, `localhost` and `::1` spelled exactly so). Tokens,
Origin on every bind, session bounds and stdio frame caps: tests/mcp_server/test_mcp_trust.py.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from _helpers import TESTS

pytest.importorskip("mcp")

from agentport.mcp._http import rebinding_protection
from agentport.mcp._stdio import DEFAULT_MAX_MESSAGE_BYTES as MAX_REQUEST_BYTES

LAUNCHER = TESTS / "_mcp_util.py"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@contextmanager
def _serving(host: str, tmp_path: Path) -> Iterator[str]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        port = int(s.getsockname()[1])
    shown = f"[{host}]" if ":" in host else host
    proc = subprocess.Popen(
        [sys.executable, str(LAUNCHER), "--http", f"{shown}:{port}", "--root", str(tmp_path)],
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection((host, port), timeout=0.2):
                    break
            except OSError:
                assert proc.poll() is None, "the HTTP server exited"
                assert time.monotonic() < end, "the HTTP server did not start"
                time.sleep(0.05)
        yield f"http://{shown}:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


BINDS = ["127.0.0.1", "127.0.0.2"] + (["::1"] if _has_ipv6_loopback() else [])


@pytest.mark.parametrize("host", BINDS)
def test_every_loopback_bind_checks_host_and_origin(host: str, tmp_path: Path) -> None:
    with _serving(host, tmp_path) as url, httpx.Client(timeout=10) as client:
        port = url.rsplit(":", 1)[1].split("/")[0]
        ok = client.post(url, json=INIT, headers=HEADERS)
        assert ok.status_code == 200, ok.text
        rebound = client.post(
            url, json=INIT, headers=HEADERS | {"Host": f"attacker.example:{port}"}
        )
        assert rebound.status_code == 421
        foreign = client.post(
            url, json=INIT, headers=HEADERS | {"Origin": "http://attacker.example"}
        )
        assert foreign.status_code == 403
        huge = client.post(
            url, content=json.dumps({**INIT, "pad": "x" * MAX_REQUEST_BYTES}), headers=HEADERS
        )
        assert huge.status_code == 413


def test_the_protection_names_only_loopback() -> None:
    settings = rebinding_protection("127.0.0.2")
    assert settings is not None
    assert settings.enable_dns_rebinding_protection
    assert set(settings.allowed_hosts) == {
        "127.0.0.2:*", "127.0.0.1:*", "localhost:*", "[::1]:*"
    }  # fmt: skip
    v6 = rebinding_protection("[::1]")
    assert v6 is not None
    assert "http://[::1]:*" in v6.allowed_origins
    assert rebinding_protection("0.0.0.0") is None  # a token guards a non-loopback bind


def test_stdio_answers_every_malformed_message() -> None:
    """Over stdio the SDK dropped a line that is not a valid JSON-RPC message: the client
    waited for an answer that never came. Now: -32700 / -32600, then the session goes on."""
    import select

    proc = subprocess.Popen(
        [sys.executable, str(LAUNCHER), "--root", str(Path.cwd())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None

    def ask(line: str) -> dict[str, object]:
        proc.stdin.write(line.encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, f"no answer to {line[:80]}"
        return dict(json.loads(proc.stdout.readline()))  # type: ignore[union-attr]

    try:
        assert "result" in ask(json.dumps(INIT))
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        deep = (
            '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":'
            + "[" * 5000
            + "]" * 5000
            + "}"
        )
        cases = [
            ("{not json", -32700, None),
            (deep, -32700, None),
            ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[1]}', -32600, 3),
            ('{"id":4,"method":"tools/list"}', -32600, 4),
        ]
        for line, code, ident in cases:
            answer = ask(line)
            assert answer["error"]["code"] == code, answer  # type: ignore[index]
            assert answer["id"] == ident
        listed = ask('{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
        assert listed["id"] == 9
        assert "result" in listed
    finally:
        proc.kill()
        proc.wait(10)
