"""`agentport mcp` against hostile local clients, over real HTTP and stdio.

Regressions: 64 `initialize` requests from any local process filled every session slot and
the user's own client got 503 for 30 minutes; a server bound to 0.0.0.0 answered a request
carrying `Origin: http://evil.example` (the Origin check ran on loopback binds only);
`--token VALUE` put the token in the process list; a loopback bind without a token said
nothing; a 60 MB stdio line was read whole; a NUL in a path was `server_error`; a POST
stream cut mid-call could not be resumed by the conformance suite's client (no priming
event, no `retry:`: it sends an older `MCP-Protocol-Version` header than it negotiated).
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers import TESTS

pytest.importorskip("mcp")

from mcp import Client
from starlette.datastructures import Headers

from _mcp_util import serving, write_corpus
from agentport.core import ErrorKind
from agentport.mcp import SessionLimits
from agentport.mcp._errors import Roots, ToolFailure
from agentport.mcp._http import SessionGate, check_origin

LAUNCHER = TESTS / "_mcp_util.py"
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _init(version: str = "2025-11-25") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "flood", "version": "0"},
        },
    }


def _events(text: str) -> list[dict[str, str]]:
    """SSE events as {field: value} (`data` joined), in order."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            fields[name] = fields[name] + "\n" + value if name in fields else value
        if fields:
            out.append(fields)
    return out


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ── sessions: one client cannot lock out another ──


@pytest.mark.anyio
async def test_a_flood_of_initialize_never_locks_the_users_client_out(tmp_path: Path) -> None:
    with serving("--root", str(tmp_path)) as (url, _):
        async with httpx.AsyncClient(timeout=20) as raw:
            first = [await raw.post(url, json=_init(), headers=ACCEPT) for _ in range(64)]
            assert {r.status_code for r in first} == {200}
            async with Client(url) as user:  # the SDK's client, after the flood
                done = await user.call_tool("complete", {"prompt": "still mine"})
                assert done.structured_content is not None
                assert done.structured_content["content"] == "echo: still mine"
                second = [await raw.post(url, json=_init(), headers=ACCEPT) for _ in range(64)]
                assert {r.status_code for r in second} == {200}
                again = await user.call_tool("complete", {"prompt": "after the flood"})
                assert again.structured_content is not None
                assert again.structured_content["content"] == "echo: after the flood"
            live = 0
            for r in first + second:
                probe = await raw.post(
                    url,
                    json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers=ACCEPT | {"mcp-session-id": r.headers["mcp-session-id"]},
                )
                assert probe.status_code in (202, 404), probe.text
                live += probe.status_code == 202
            # one local user is one client: its flood holds what is left of its share
            assert live <= SessionLimits().per_client - 1


@pytest.mark.anyio
async def test_a_session_that_never_made_a_call_is_closed_after_the_handshake_window(
    tmp_path: Path,
) -> None:
    with serving("--root", str(tmp_path), "--handshake-s", "1") as (url, _):
        async with httpx.AsyncClient(timeout=20) as raw:
            idle = (await raw.post(url, json=_init(), headers=ACCEPT)).headers["mcp-session-id"]
            busy = (await raw.post(url, json=_init(), headers=ACCEPT)).headers["mcp-session-id"]
            on_busy = ACCEPT | {"mcp-session-id": busy, "mcp-protocol-version": "2025-11-25"}
            listed = await raw.post(
                url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=on_busy
            )
            assert listed.status_code == 200
            await anyio.sleep(1.5)
            await raw.post(url, json=_init(), headers=ACCEPT)  # the next opening reclaims
            ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
            gone = await raw.post(url, json=ping, headers=ACCEPT | {"mcp-session-id": idle})
            assert gone.status_code == 404
            kept = await raw.post(url, json=ping, headers=on_busy)
            assert kept.status_code == 200, kept.text


class _FakeSDK:
    """Sessions as the SDK keeps them: a POST without an id opens one, DELETE ends it, an
    unknown id is 404."""

    def __init__(self) -> None:
        self.open: dict[str, str] = {}  # id -> client
        self.n = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = Headers(scope=scope)
        sid = headers.get("mcp-session-id")
        extra: list[tuple[bytes, bytes]] = []
        if sid is None:
            self.n += 1
            sid = f"s{self.n}"
            self.open[sid] = headers["x-client"]
            status, extra = 200, [(b"mcp-session-id", sid.encode())]
        elif sid not in self.open:
            status = 404
        elif scope["method"] == "DELETE":
            del self.open[sid]
            status = 200
        else:
            status = 200
        await send({"type": "http.response.start", "status": status, "headers": extra})
        await send({"type": "http.response.body", "body": b""})


def _scope(method: str, client: str, sid: str | None = None) -> dict[str, Any]:
    headers = [(b"x-client", client.encode())]
    if sid is not None:
        headers.append((b"mcp-session-id", sid.encode()))
    return {
        "type": "http",
        "method": method,
        "path": "/mcp",
        "headers": headers,
        "server": ("127.0.0.1", 1),
        "client": ("127.0.0.1", 2),
    }


async def _request(gate: SessionGate, scope: dict[str, Any]) -> tuple[int, str | None]:
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await gate(scope, receive, send)
    start = sent[0]
    return start["status"], Headers(raw=start.get("headers") or []).get("mcp-session-id")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["open", "open", "call", "wait"]), st.sampled_from("ABC")),
        max_size=60,
    )
)
def test_opening_a_session_never_closes_a_smaller_clients_session(
    steps: list[tuple[str, str]],
) -> None:
    """Any sequence of opens, calls and waits by three clients: the bounds hold, an idle
    client is always admitted, and an opening by X closes only X's own sessions or those
    of a client holding more than X, never-used ones first."""
    limits = SessionLimits(total=5, per_client=3, handshake_s=10, idle_s=1e9)

    async def run() -> None:
        now = [0.0]
        sdk = _FakeSDK()
        gate = SessionGate(
            sdk, limits, key=lambda s: Headers(scope=s)["x-client"], clock=lambda: now[0]
        )
        used: set[str] = set()
        last: dict[str, float] = {}
        for action, who in steps:
            mine = [sid for sid, c in sdk.open.items() if c == who]
            if action == "wait":
                now[0] += 20  # past the handshake window, inside idle_s
            elif action == "call" and mine:
                status, _ = await _request(gate, _scope("POST", who, mine[-1]))
                assert status == 200
                used.add(mine[-1])
                last[mine[-1]] = now[0]
            elif action == "open":
                before = dict(sdk.open)
                held = Counter(before.values())
                status, sid = await _request(gate, _scope("POST", who))
                assert status == 200, "nothing is busy: an opening is always admitted"
                assert sid is not None
                last[sid] = now[0]
                closed = set(before) - set(sdk.open)
                for victim in closed:
                    owner = before[victim]
                    # never used and past its handshake window: reclaimed whoever opens
                    stale = victim not in used and now[0] - last[victim] > limits.handshake_s
                    assert owner == who or held[owner] > held[who] or stale, (victim, owner)
                    if not stale:  # room made: a never-used session goes before a used one
                        pool = [v for v, c in before.items() if c == owner and v not in closed]
                        assert victim not in used or all(v in used for v in pool), victim
            owned = Counter(sdk.open.values())
            assert len(sdk.open) <= limits.total
            assert all(n <= limits.per_client for n in owned.values()), owned

    anyio.run(run)


# ── Origin on every bind; tokens never in argv ──


def test_origin_patterns() -> None:
    allowed = ["https://app.example", "http://localhost:*"]
    assert check_origin("https://app.example", allowed)
    assert check_origin("HTTPS://APP.EXAMPLE/", allowed)
    assert check_origin("http://localhost:3000", allowed)
    assert check_origin("http://localhost", allowed)
    assert not check_origin("http://localhost.evil.example:80", allowed)
    assert not check_origin("http://localhost:3000@evil.example", allowed)
    assert not check_origin("https://app.example.evil", allowed)
    assert not check_origin("null", allowed)
    assert not check_origin("http://evil.example", [])


def test_a_wildcard_bind_with_a_token_refuses_a_foreign_origin(tmp_path: Path) -> None:
    token = "t-" + os.urandom(8).hex()
    args = ("--root", str(tmp_path), "--token", token, "--allow-origin", "https://app.example")
    with (
        serving(*args, host="0.0.0.0", connect="127.0.0.1") as (url, _),
        httpx.Client(timeout=10) as raw,
    ):
        auth = ACCEPT | {"Authorization": f"Bearer {token}"}
        evil = auth | {"Host": "evil", "Origin": "http://evil.example"}
        assert raw.post(url, json=_init(), headers=evil).status_code == 403
        assert raw.post(url, json=_init(), headers=auth | {"Origin": "null"}).status_code == 403
        ok = auth | {"Origin": "https://app.example"}
        assert raw.post(url, json=_init(), headers=ok).status_code == 200
        assert raw.post(url, json=_init(), headers=auth).status_code == 200  # not a browser
        assert raw.post(url, json=_init(), headers=ACCEPT | {"Origin": "https://app.example"}
                        ).status_code == 401  # fmt: skip


def test_a_loopback_bind_takes_listed_origins_besides_its_own(tmp_path: Path) -> None:
    args = ("--root", str(tmp_path), "--allow-origin", "https://app.example")
    with serving(*args) as (url, _), httpx.Client(timeout=10) as raw:
        for origin, status in [
            ("https://app.example", 200),
            ("http://localhost:5173", 200),
            ("http://evil.example", 403),
            ("https://app.example.evil.example", 403),
        ]:
            got = raw.post(url, json=_init(), headers=ACCEPT | {"Origin": origin})
            assert got.status_code == status, (origin, got.text)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentport", "mcp", *args],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip


def test_a_token_comes_from_a_private_file_or_the_environment_never_argv(
    tmp_path: Path,
) -> None:
    secret = "s3cret-" + os.urandom(6).hex()
    argv = _cli("--http", "0.0.0.0:1", "--token", secret)
    assert argv.returncode == 2
    assert argv.stderr.count("\n") == 1
    assert "AGENTPORT_MCP_TOKEN" in argv.stderr
    assert "--token-file" in argv.stderr
    assert secret not in argv.stderr
    shared = tmp_path / "token"
    shared.write_text(secret + "\n")
    shared.chmod(0o644)
    readable = _cli("--http", "0.0.0.0:1", "--token-file", str(shared))
    assert readable.returncode == 2
    assert "chmod 600" in readable.stderr
    assert secret not in readable.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    empty.chmod(stat.S_IRUSR | stat.S_IWUSR)
    blank = _cli("--http", "0.0.0.0:1", "--token-file", str(empty))
    assert blank.returncode == 2
    assert "first line is empty" in blank.stderr
    missing = _cli("--http", "0.0.0.0:1", "--token-file", str(tmp_path / "no"))
    assert missing.returncode == 2
    assert "cannot read a token" in missing.stderr


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    return env | {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), **extra}


def test_the_command_says_when_no_token_guards_a_loopback_bind(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "agentport", "mcp"]
    with serving("--root", str(tmp_path), cmd=cmd, env=_env(tmp_path)) as (_, stderr):
        lines = [line for line in stderr().splitlines() if "no token" in line]
    assert len(lines) == 1, stderr()
    assert "AGENTPORT_MCP_TOKEN" in lines[0]
    token = "t-" + os.urandom(8).hex()
    env = _env(tmp_path, AGENTPORT_MCP_TOKEN=token)
    with serving("--root", str(tmp_path), cmd=cmd, env=env) as (url, stderr):
        with httpx.Client(timeout=10) as raw:
            assert raw.post(url, json=_init(), headers=ACCEPT).status_code == 401
            authed = ACCEPT | {"Authorization": f"Bearer {token}"}
            assert raw.post(url, json=_init(), headers=authed).status_code == 200
        assert "no token" not in stderr()


# ── stdio: bounded frames, every line answered, NUL paths ──


class _Stdio:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(LAUNCHER), "--root", str(Path.cwd()), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def ask(self, line: bytes) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        assert ready, f"no answer to {line[:80]!r}"
        return dict(json.loads(self.proc.stdout.readline()))


@pytest.fixture
def stdio() -> Iterator[_Stdio]:
    server = _Stdio("--max-message-bytes", "4096")
    try:
        assert "result" in server.ask(json.dumps(_init("2025-06-18")).encode())
        yield server
    finally:
        server.proc.kill()
        server.proc.wait(10)


def _ping(size: int, ident: int) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%d,"method":"ping"' % ident
    return head + b" " * (size - len(head) - 1) + b"}"


def test_stdio_caps_a_message_and_answers_the_rest(stdio: _Stdio) -> None:
    assert stdio.ask(_ping(4096, 1)) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    over = stdio.ask(_ping(4097, 2))
    assert over["error"]["code"] == -32600
    assert "4097 bytes is over the limit of 4096" in over["error"]["message"]
    huge = stdio.ask(_ping(60 * 1024 * 1024, 3))
    assert huge["error"]["code"] == -32600
    assert stdio.ask(_ping(100, 4)) == {"jsonrpc": "2.0", "id": 4, "result": {}}


def test_stdio_answers_json_nested_200000_deep() -> None:
    server = _Stdio()  # the default cap (1 MiB) takes these lines
    try:
        server.ask(json.dumps(_init("2025-06-18")).encode())
        n = 200_000
        for line in ("[" * n + "]" * n, '{"a":' * (n // 2) + "1" + "}" * (n // 2)):
            answer = server.ask(line.encode())
            assert answer["error"]["code"] == -32700, answer
        assert server.ask(_ping(100, 9))["id"] == 9
    finally:
        server.proc.kill()
        server.proc.wait(10)


@pytest.mark.anyio
async def test_a_nul_in_a_path_is_invalid_request(tmp_path: Path) -> None:
    from mcp import StdioServerParameters

    write_corpus(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(LAUNCHER), "--root", str(tmp_path)],
        env=dict(os.environ),
    )
    async with Client(params, read_timeout_seconds=60) as client:
        for tool, args in [
            ("research_start", {"question": "q", "corpus": "corpus\x00/etc"}),
            ("refine", {"question": "q", "graph": "g\x00.json"}),
            ("review", {"graph": "\x00", "query_id": "x"}),
        ]:
            result = await client.call_tool(tool, args)
            assert result.is_error
            text = " ".join(getattr(c, "text", "") for c in result.content)
            assert text.startswith("invalid_request: "), text
            assert "NUL" in text


@given(st.text(max_size=40))
def test_every_path_is_inside_a_root_or_an_invalid_request(
    tmp_path_factory: Any, path: str
) -> None:
    root = tmp_path_factory.getbasetemp() / "root"
    root.mkdir(exist_ok=True)
    roots = Roots([root])
    outcome: Path | ToolFailure
    try:
        outcome = roots.check(path, "corpus")
    except ToolFailure as exc:
        outcome = exc
    if isinstance(outcome, ToolFailure):
        assert outcome.kind is ErrorKind.invalid_request
        assert "\n" not in str(outcome)
    else:
        assert outcome == root.resolve() or outcome.is_relative_to(root.resolve())


# ── resumable streams ──


@pytest.mark.anyio
async def test_a_post_stream_cut_mid_call_resumes_with_last_event_id(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    with serving("--root", str(tmp_path), "--verify-delay", "1.0") as (url, _):
        async with httpx.AsyncClient(timeout=60) as raw:
            opened = await raw.post(url, json=_init(), headers=ACCEPT)
            priming = _events(opened.text)[0]
            assert priming.get("id")
            assert priming.get("data") == ""
            assert priming.get("retry") == "1000"
            session = {"mcp-session-id": opened.headers["mcp-session-id"]}
            on = ACCEPT | session | {"mcp-protocol-version": "2025-11-25"}
            await raw.post(
                url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=on
            )
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
            started = await raw.post(
                url,
                json=call | {"params": {"name": "research_start",
                                        "arguments": {"question": "Q?", "corpus": "corpus"}}},
                headers=on,
            )  # fmt: skip
            job = json.loads(_events(started.text)[-1]["data"])["result"]["structuredContent"]
            wait = call | {
                "id": 3,
                "params": {
                    "name": "research_wait",
                    "arguments": {"job_id": job["job_id"], "timeout_s": 120},
                    "_meta": {"progressToken": "p"},
                },
            }
            # like the conformance suite's client: an older header than it negotiated
            older = ACCEPT | session | {"mcp-protocol-version": "2025-03-26"}
            async with raw.stream("POST", url, json=wait, headers=older) as cut:
                first = ""
                async for line in cut.aiter_lines():
                    if not line:
                        break
                    first += line + "\n"
            cut_at = _events(first)[0]
            assert cut_at.get("id"), first
            assert cut_at.get("retry") == "1000", first
            resumed = older | {"Accept": "text/event-stream", "Last-Event-ID": cut_at["id"]}
            answer: dict[str, Any] | None = None
            async with raw.stream("GET", url, headers=resumed) as again:
                assert again.status_code == 200
                block = ""
                async for line in again.aiter_lines():
                    if line:
                        block += line + "\n"
                        continue
                    for event in _events(block):
                        if event.get("data"):
                            assert event.get("id"), event
                            message = json.loads(event["data"])
                            if message.get("id") == 3:
                                answer = message
                    block = ""
                    if answer is not None:
                        break
            assert answer is not None
            assert answer["result"]["structuredContent"]["state"] == "done"


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
def test_a_loopback_peer_is_known_by_the_user_owning_its_socket() -> None:
    """Every local process of one user is one client (they share 127.0.0.1): the key is
    the uid that owns the peer's socket, so another user's flood is bounded on its own."""
    import socket

    from agentport.mcp._http import client_key, peer_uid

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as peer:
            host, peer_port = peer.getsockname()[:2]
            assert peer_uid((host, peer_port), port) == os.getuid()
            scope = {"client": (host, peer_port), "server": ("127.0.0.1", port)}
            assert client_key(scope) == f"uid:{os.getuid()}"
    assert peer_uid(("10.1.2.3", 5), port) is None  # not loopback: keyed by its address
    assert client_key({"client": ("10.1.2.3", 5), "server": ("0.0.0.0", port)}) == "addr:10.1.2.3"
