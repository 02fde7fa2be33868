"""The MCP server over streamable HTTP: the SDK's transport behind three gates.

From the outside in, every request passes:

1. the Origin gate (every bind): a request whose `Origin` is not allowed is refused 403
   (the MCP spec asks servers to validate Origin on every connection; a browser always
   sends it, other clients need not);
2. the bearer token, when one is set (401 otherwise, compared in constant time);
3. the session gate: sessions are counted per client (the local user that owns the peer's
   socket on a loopback connection, the peer's address otherwise) and the server's total
   is bounded; a new session over either bound closes the least useful session of the
   client holding the most (one that never made a call first, then the least recently
   used, then one only listening on a GET stream), so a flood of `initialize` requests
   evicts its own sessions, never a smaller client's, and never a session with a call in
   flight. A session that made no call is closed when a session opens `handshake_s` or
   more after its last request.

Inside, the SDK checks Host and Origin on a loopback bind (DNS rebinding), caps a request's
size, and, with the event store, gives every SSE event an id and each POST stream a priming
event with a `retry:` field, so a client whose stream dropped resumes with `Last-Event-ID`.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from ._events import BoundedEventStore
from ._stdio import DEFAULT_MAX_MESSAGE_BYTES

__all__ = [
    "RETRY_MS",
    "SessionLimits",
    "check_origin",
    "http_app",
    "is_loopback",
    "loopback_origins",
    "rebinding_protection",
    "serve_http",
]

RETRY_MS = 1000  # the SSE `retry:` a client waits before reconnecting
MCP_PATH = "/mcp"
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class SessionLimits:
    """Bounds on streamable-HTTP sessions.

    total: sessions open at once over all clients; per_client: sessions one client may
    hold (a new one past it closes that client's own least useful idle session);
    handshake_s: seconds after its last request from which a session that never made a
    call (only `initialize` and notifications) is closed, when the next session opens;
    idle_s: seconds any session lives with no request in flight (the SDK's idle timeout).
    Raises ValueError for a bound that is not positive."""

    total: int = 64
    per_client: int = 8
    handshake_s: float = 30.0
    idle_s: float = 30 * 60.0

    def __post_init__(self) -> None:
        for name in ("total", "per_client", "handshake_s", "idle_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"SessionLimits.{name}: must be positive")


# ── Origin ──


def loopback_origins(host: str) -> list[str]:
    """The origins of pages served from this machine (`http://127.0.0.1:*` ...), allowed
    on a loopback bind; the bound loopback address is one of them."""
    bound = host.strip("[]")
    shown = f"[{bound}]" if ":" in bound else bound
    return [f"http://{h}:*" for h in sorted({shown, *_LOOPBACK_NAMES})]


def check_origin(origin: str, allowed: Sequence[str]) -> bool:
    """Whether *origin* (an `Origin` header) is one of *allowed*: exact
    (`https://app.example`) or any port (`http://localhost:*`). `null` never is."""
    given = origin.strip().lower().rstrip("/")
    for pattern in allowed:
        want = pattern.strip().lower().rstrip("/")
        if given == want:
            return True
        if want.endswith(":*"):
            base = want[:-2]
            if given == base or (given.startswith(base + ":") and given[len(base) + 1 :].isdigit()):
                return True
    return False


def _header(headers: Sequence[tuple[bytes, bytes]] | None, name: bytes) -> str | None:
    """The first *name* header (lower-case bytes, as ASGI gives them) of an ASGI message."""
    for key, value in headers or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _refuse(status: int, text: str, extra: Sequence[tuple[bytes, bytes]] = ()) -> Any:
    body = ('{"error": "' + text.replace('"', "'") + '"}').encode()

    async def respond(send: Any) -> None:
        headers = [(b"content-type", b"application/json"), *extra]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return respond


class _OriginGate:
    """ASGI middleware: 403 for a request whose `Origin` is not in *allowed*."""

    def __init__(self, app: Any, allowed: Sequence[str]) -> None:
        self.app, self.allowed = app, tuple(allowed)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            origin = _header(scope.get("headers"), b"origin")
            if origin is not None and not check_origin(origin, self.allowed):
                await _refuse(403, "origin not allowed (agentport mcp --allow-origin)")(send)
                return
        await self.app(scope, receive, send)


class _BearerToken:
    """ASGI middleware: 401 unless `Authorization: Bearer <token>` matches."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                refuse = _refuse(
                    401, "config: missing or wrong bearer token", [(b"www-authenticate", b"Bearer")]
                )
                await refuse(send)
                return
        await self.app(scope, receive, send)


# ── sessions ──


def _proc_address(field: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """`0100007F:1F90` (a /proc/net/tcp{,6} address: 32-bit words in host order) -> ip, port."""
    hexaddr, port = field.split(":")
    raw = bytes.fromhex(hexaddr)
    flipped = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(flipped)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, int(port, 16)
    return ip, int(port, 16)


def peer_uid(client: tuple[str, int], server_port: int, tables: Sequence[Path] = ()) -> int | None:
    """The uid owning the socket at the other end of a loopback connection from *client*
    to this server's *server_port* (Linux: /proc/net/tcp and tcp6), or None."""
    try:
        ip = ipaddress.ip_address(client[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if not ip.is_loopback:
        return None
    for table in tables or (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        try:
            rows = table.read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            try:
                ends = _proc_address(fields[1]), _proc_address(fields[2])[1]
                if ends == ((ip, client[1]), server_port):
                    return int(fields[7])
            except (IndexError, ValueError):
                continue
    return None


def client_key(scope: Any) -> str:
    """Who a request comes from, for the per-client session bound: `uid:<n>` for a loopback
    peer whose socket's owner is known (every local process of one user is one client),
    else `addr:<peer address>`."""
    client, server = scope.get("client"), scope.get("server")
    if client and server:
        uid = peer_uid((str(client[0]), int(client[1])), int(server[1]))
        if uid is not None:
            return f"uid:{uid}"
    return f"addr:{client[0] if client else '?'}"


@dataclass(eq=False)
class _Session:
    client: str
    last: float
    id: str | None = None  # None while its opening request runs
    busy: int = 0  # requests in flight other than GET: calls running (never closed)
    streams: int = 0  # GET streams open: a client listening, closed only for room
    used: bool = False  # answered a request with 200: a call, a listing, a GET stream
    version: str | None = None  # the protocol version `initialize` negotiated


_NEGOTIATED = re.compile(rb'"protocolVersion":\s*"(\d{4}-\d{2}-\d{2})"')
_VERSION_HEADER = b"mcp-protocol-version"


def _negotiated(scope: Any, version: str | None) -> Any:
    """*scope* with an `MCP-Protocol-Version` header older than the session's negotiated
    *version* read as that version. The SDK chooses the SSE wire format per request from
    the header (a priming event with a `retry:` field only from 2025-11-25 on: older
    clients cannot parse its empty data); the spec has the client send the negotiated
    version, and a client that negotiated 2025-11-25 parses it whatever the header says."""
    if version is None or version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return scope
    headers = scope.get("headers") or []
    given = next((v for k, v in headers if k == _VERSION_HEADER), None)
    if given is None or given.decode("latin-1") >= version:
        return scope
    if given.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
        return scope  # not a version of the handshake era: the SDK answers it
    kept = [(k, v) for k, v in headers if k != _VERSION_HEADER]
    return {**scope, "headers": [*kept, (_VERSION_HEADER, version.encode())]}


class SessionGate:
    """ASGI middleware around the SDK's session manager, enforcing `SessionLimits` (see the
    module docstring). It closes a session the way a client does (DELETE with its id)."""

    def __init__(
        self,
        app: Any,
        limits: SessionLimits,
        key: Callable[[Any], str] = client_key,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app, self.limits, self.key, self.clock = app, limits, key, clock
        self.by_id: dict[str, _Session] = {}
        self.opening: set[_Session] = set()
        self.lock = anyio.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") != MCP_PATH:
            await self.app(scope, receive, send)
            return
        sid = _header(scope.get("headers"), b"mcp-session-id")
        if sid is None and scope["method"] == "POST":
            await self._open(scope, receive, send)
        elif sid is not None and (session := self.by_id.get(sid)) is not None:
            await self._serve(session, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _all(self) -> list[_Session]:
        return [*self.by_id.values(), *self.opening]

    def _stale(self, now: float) -> list[_Session]:
        lim = self.limits
        return [
            s
            for s in self.by_id.values()
            if not s.busy
            and not s.streams
            and (now - s.last > lim.idle_s or (not s.used and now - s.last > lim.handshake_s))
        ]

    def _victim(self, client: str) -> tuple[bool, _Session | None]:
        """(admit, session to close first) for a new session of *client*."""
        sessions = self._all()
        mine = [s for s in sessions if s.client == client]
        if len(mine) >= self.limits.per_client:
            pools = [mine]
        elif len(sessions) >= self.limits.total:
            held = Counter(s.client for s in sessions)
            order = sorted((c for c in held if c != client), key=lambda c: -held[c])
            bigger = [[s for s in sessions if s.client == c] for c in order if held[c] > len(mine)]
            pools = [*bigger, mine]
        else:
            return True, None
        for pool in pools:
            idle = [s for s in pool if not s.busy and s.id is not None]
            if idle:
                return True, min(idle, key=lambda s: (s.streams > 0, s.used, s.last))
        return False, None

    def _forget(self, session: _Session) -> None:
        if session.id is not None:
            self.by_id.pop(session.id, None)

    async def _close(self, session: _Session, scope: Any) -> None:
        """DELETE the session through the SDK, as its client would (Host: the address this
        connection reached, which the rebinding check allows)."""
        if session.id is None:
            return
        host, port = scope["server"][0], scope["server"][1]
        shown = f"[{host}]" if ":" in str(host) else str(host)
        delete = {
            **scope,
            "method": "DELETE",
            "path": MCP_PATH,
            "raw_path": MCP_PATH.encode(),
            "query_string": b"",
            "headers": [
                (b"host", f"{shown}:{port}".encode()),
                (b"mcp-session-id", session.id.encode("latin-1")),
            ],
        }

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Any) -> None:
            pass

        with anyio.CancelScope(shield=True):
            await self.app(delete, receive, discard)

    async def _open(self, scope: Any, receive: Any, send: Any) -> None:
        client = self.key(scope)
        async with self.lock:
            stale = self._stale(self.clock())
            for session in stale:
                self._forget(session)
            admit, victim = self._victim(client)
            entry = _Session(client, self.clock(), busy=1)
            if admit:
                self.opening.add(entry)
                if victim is not None:
                    self._forget(victim)
                    stale.append(victim)
        for session in stale:
            await self._close(session, scope)
        if not admit:
            refuse = _refuse(
                503,
                "no session slot is free (every one has a call in flight); retry later",
                [(b"retry-after", b"5")],
            )
            await refuse(send)
            return

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                sid = _header(message.get("headers"), b"mcp-session-id")
                if sid is not None:
                    entry.id = sid
                    self.by_id[sid] = entry
            elif message["type"] == "http.response.body" and entry.version is None:
                found = _NEGOTIATED.search(message.get("body", b""))
                if found:
                    entry.version = found.group(1).decode()
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self.opening.discard(entry)
            entry.busy -= 1
            entry.last = self.clock()

    async def _serve(self, session: _Session, scope: Any, receive: Any, send: Any) -> None:
        status = 0

        async def watch(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if status == 200:
                    session.used = True
            await send(message)

        get = scope["method"] == "GET"
        if get:
            session.streams += 1
        else:
            session.busy += 1
        try:
            await self.app(_negotiated(scope, session.version), receive, watch)
        finally:
            if get:
                session.streams -= 1
            else:
                session.busy -= 1
            session.last = self.clock()
            if status == 404 or (scope["method"] == "DELETE" and status < 300):
                self._forget(session)  # the SDK no longer knows it


# ── the app ──


def rebinding_protection(
    host: str, extra_origins: Sequence[str] = ()
) -> TransportSecuritySettings | None:
    """Host/Origin checks for a loopback bind (DNS rebinding, MCP spec "Security Warning"):
    only loopback names and addresses, the bound one included (every 127.0.0.0/8 address,
    `[::1]`), any port. None for a non-loopback bind: its Host names cannot be listed (the
    token guards it) and `_OriginGate` checks its Origin."""
    if not is_loopback(host):
        return None
    origins = loopback_origins(host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[o.removeprefix("http://") for o in origins],
        allowed_origins=[*origins, *extra_origins],
    )


def http_app(
    server: MCPServer[Any],
    host: str,
    token: str | None,
    *,
    allowed_origins: Sequence[str] = (),
    limits: SessionLimits | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> Any:
    """The streamable-HTTP ASGI app at `/mcp` (see the module docstring). *allowed_origins*:
    browser origins allowed besides this machine's loopback pages on a loopback bind (none
    on other binds unless listed); *limits*: the session bounds."""
    limits = limits or SessionLimits()
    origins = [*(loopback_origins(host) if is_loopback(host) else []), *allowed_origins]
    app = server.streamable_http_app(
        host=host.strip("[]"),
        event_store=BoundedEventStore(),
        retry_interval=RETRY_MS,
        transport_security=rebinding_protection(host, allowed_origins),
        max_request_body_size=max_message_bytes,
        session_idle_timeout=limits.idle_s,
        max_sessions=limits.total * 2,  # a backstop: the gate keeps the count below `total`
    )
    gated: Any = SessionGate(app, limits)
    if token:
        gated = _BearerToken(gated, token)
    return _OriginGate(gated, origins)


def serve_http(
    server: MCPServer[Any],
    host: str,
    port: int,
    token: str | None,
    *,
    allowed_origins: Sequence[str] = (),
    limits: SessionLimits | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """Serve *server* at `http://HOST:PORT/mcp` until interrupted; says on stderr where, and
    when no token guards a loopback bind."""
    import uvicorn

    app = http_app(
        server,
        host,
        token,
        allowed_origins=allowed_origins,
        limits=limits,
        max_message_bytes=max_message_bytes,
    )
    config = uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning")
    print(f"agentport mcp: streamable HTTP on http://{host}:{port}/mcp", file=sys.stderr)
    if not token:
        print(
            "agentport mcp: warning: no token: every local process, of any user, can call "
            "these tools; set AGENTPORT_MCP_TOKEN or --token-file to require one",
            file=sys.stderr,
        )
    anyio.run(uvicorn.Server(config).serve)
