"""`Fetcher`: agentport's guarded page fetcher (httpx, async) with HTML-to-text by trafilatura.

Every request is checked first (`_guard.resolve_url`: http(s) only, no credentials in the URL,
no private/loopback/link-local address unless allowed) and then connects to exactly the
addresses that were checked (`_PinnedBackend`: the host is resolved once per request, never
again by the HTTP client, so DNS rebinding cannot move the connection; TLS still verifies the
certificate for the host name). With `[web] proxy` set, every request goes through that proxy
instead: the target is still resolved and checked, but the proxy resolves the host again, so
the pinning does not reach through it (docs/web.md). Redirects are followed by hand, at most
`max_redirects` hops, each hop checked again, a loop refused. robots.txt (RFC 9309, via
`urllib.robotparser`) is honoured per origin: its redirects are followed up to 5 hops, each
checked like a page (section 2.3.1.2); a missing robots.txt (4xx) or one behind more than 5
redirects allows everything (2.3.1.3); an unreachable one (5xx, network error, a refused hop)
disallows everything (2.3.1.4); only its first 500 KiB are read (2.5). Per host at most
`per_host_concurrency` requests are in flight and two requests start at least
`per_host_delay_s` apart. Only text/html, application/xhtml+xml and text/plain are read; a
body larger than `max_bytes` (after content decoding) or a fetch slower than `timeout_s` is
refused. The charset is decided as a browser does (`_charset.decode_page`: a BOM, the
Content-Type label, the `<meta>` prescan, else UTF-8 or windows-1252), labels resolved by the
WHATWG Encoding Standard, not by Python's codec names.

`fetch(url)` never raises for an expected failure: it returns `FetchedPage` or
`FetchRefused(url, kind, reason)`. Cancellation propagates."""

from __future__ import annotations

import math
import time
import urllib.robotparser
import zlib
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpcore
import httpx

from ..core import register_secret
from ..transport import tls_context
from ._charset import decode_page
from ._guard import Target, resolve_url
from ._settings import WebSettings
from ._types import FetchedPage, FetchRefused, FetchResult

__all__ = ["Fetcher", "html_to_text"]

_TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
_TITLE_SCAN = 256 * 1024  # the <title> is in the head: never scan a whole page for it
_ENCODINGS = {"gzip": 47, "x-gzip": 47, "deflate": 47}  # zlib wbits: gzip or zlib header
_MAX_ENCODINGS = 2  # `Content-Encoding: gzip, gzip` at most; a deeper stack is refused
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DISALLOW_ALL = ["User-agent: *", "Disallow: /"]
_ROBOTS_REDIRECTS = 5  # RFC 9309 section 2.3.1.2: follow at least five consecutive redirects
_ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 section 2.5: parse at least 500 KiB

# The checked target of the request being sent from this task. httpcore opens connections in
# the task that sends the request, so `_PinnedBackend.connect_tcp` sees the caller's value.
_PIN: ContextVar[Target | None] = ContextVar("agentport_web_pin", default=None)


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to the addresses of the current `_PIN`, never resolving the host again;
    a connection to any other host (or with no pin) is refused. The HTTP client keeps the
    URL's host for the Host header, TLS SNI and certificate verification."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore.AsyncNetworkBackend API)
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        pin = _PIN.get()
        if pin is None or (pin.host, pin.port) != (host, port):
            raise httpcore.ConnectError(f"{host}:{port} was not checked before connecting")
        error: Exception = httpcore.ConnectError(f"{host} has no address")
        for address in pin.addresses:
            try:
                return await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore.AsyncNetworkBackend API)
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the fetcher does not use unix sockets")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (request and response mapping, error translation) over a
    connection pool whose network backend is `_PinnedBackend`."""

    def __init__(self) -> None:
        # Not calling super().__init__: it would build a second pool and SSL context. The
        # base class keeps its pool in `_pool` (httpx 0.27 and 0.28; the DNS rebinding test
        # in tests/web/test_web_fetcher_hardening.py fails if that changes).
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=tls_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_PinnedBackend(),
        )


class _Refused(Exception):
    def __init__(self, refusal: FetchRefused) -> None:
        self.refusal = refusal


@dataclass
class _Host:
    slots: anyio.Semaphore
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    last: float = -math.inf


def html_to_text(html: str) -> tuple[str, str]:
    """(title, main text) of an HTML page: trafilatura's main-content extraction (no
    navigation, footers, comments), falling back to its plain html2txt; ("", "") when the
    page has no text. Raises ImportError without the `web` extra."""
    import trafilatura

    text = trafilatura.extract(html, include_comments=False, include_tables=True) or ""
    if not text.strip():
        text = trafilatura.html2txt(html) or ""
    meta = trafilatura.extract_metadata(html)
    title = (meta.title if meta is not None and meta.title else "") or ""
    if not title:
        title = _title(html)
    lines = text.strip().splitlines()
    if title and lines and lines[0].strip() == title.strip():
        lines = lines[1:]  # the page's own heading repeats the title: not body text
    return title, "\n".join(lines).strip()


def _title(html: str) -> str:
    """The first `<title>`'s text, found by plain searches over the page's head (linear:
    a regex with a lazy `.*?` is quadratic on a page of unclosed `<title` tags)."""
    head = html[:_TITLE_SCAN]
    lower = head.lower()
    start = lower.find("<title")
    opened = lower.find(">", start) if start >= 0 else -1
    end = lower.find("</title", opened) if opened >= 0 else -1
    return " ".join(head[opened + 1 : end].split()) if end >= 0 else ""


class _TooLarge(Exception):
    pass


class _Undecodable(Exception):
    pass


class _Inflater:
    """The body's content codings undone as bytes arrive, counting output as it is made:
    every stage inflates at most `limit` + 1 bytes per call (`max_length`), so a small
    compressed body cannot expand in memory past the limit (a gzip bomb, stacked codings).
    Raises `_TooLarge` past *limit*, `_Undecodable` for a coding it cannot undo."""

    def __init__(self, header: str, limit: int) -> None:
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > _MAX_ENCODINGS:
            raise _Undecodable(f"{len(codings)} stacked content encodings")
        unknown = [c for c in codings if c not in _ENCODINGS]
        if unknown:
            raise _Undecodable(f"content encoding {unknown[0]!r}")
        # the coding applied last is undone first
        self.stages = [zlib.decompressobj(_ENCODINGS[c]) for c in reversed(codings)]
        self.limit = limit
        self.size = 0

    def feed(self, data: bytes) -> bytes:
        for stage in self.stages:
            data = self._inflate(stage, data)
        self.size += len(data)
        if self.size > self.limit:
            raise _TooLarge
        return data

    def _inflate(self, stage: Any, data: bytes) -> bytes:
        out = bytearray()
        try:
            while data:
                room = self.limit - self.size - len(out) + 1
                if room <= 0:
                    raise _TooLarge
                out += stage.decompress(data, room)
                data = stage.unconsumed_tail
        except zlib.error as exc:
            raise _Undecodable(f"bad compressed body ({exc})") from None
        if self.size + len(out) > self.limit:
            raise _TooLarge
        return bytes(out)


async def _read(response: httpx.Response, limit: int, *, cut: bool = False) -> bytes:
    """The body, its content codings undone by `_Inflater` (never by httpx, which inflates a
    whole chunk before anyone can count it): `_TooLarge` past *limit* bytes, or with *cut*
    the first *limit* bytes and the rest unread."""
    inflater = _Inflater(response.headers.get("content-encoding", ""), limit)
    parts: list[bytes] = []
    try:
        async for raw in response.aiter_raw():
            parts.append(inflater.feed(raw))
    except _TooLarge:
        if not cut:
            raise  # with *cut*: what arrived within the limit is the answer
    return b"".join(parts)


class Fetcher:
    """Fetch pages under `WebSettings` limits. Use `async with Fetcher(settings) as f:` (or
    call `aclose()`); one instance shares robots.txt answers and per-host limits."""

    def __init__(self, settings: WebSettings | None = None) -> None:
        self.settings = settings or WebSettings()
        transport: httpx.AsyncBaseTransport
        if self.settings.proxy:  # the target is still checked; the proxy resolves it again
            register_secret(httpx.URL(self.settings.proxy).password)
            transport = httpx.AsyncHTTPTransport(proxy=self.settings.proxy)
        else:
            transport = _PinnedTransport()
        self._client = httpx.AsyncClient(
            transport=transport,
            follow_redirects=False,
            trust_env=False,  # the address checks must see the host actually connected to
            headers={
                "User-Agent": self.settings.user_agent,
                "Accept": "text/html, text/plain",
                "Accept-Encoding": "gzip, deflate",  # what `_Inflater` can undo, bounded
            },
            timeout=httpx.Timeout(self.settings.timeout_s),
        )
        self._hosts: dict[str, _Host] = {}
        self._robots: dict[str, _Robots | None] = {}
        self._robots_locks: dict[str, anyio.Lock] = {}

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(self, url: str) -> FetchResult:
        """The page at *url* (see the module docstring for every check), or a refusal."""
        s = self.settings
        current = url.strip()
        seen: list[str] = []
        try:
            with anyio.fail_after(s.timeout_s):
                while True:
                    if current in seen:
                        raise _Refused(
                            FetchRefused(url, "redirect_loop", f"redirect loop at {current}")
                        )
                    if len(seen) > s.max_redirects:
                        raise _Refused(
                            FetchRefused(
                                url,
                                "too_many_redirects",
                                f"more than {s.max_redirects} redirects",
                            )
                        )
                    seen.append(current)
                    target = await self._check(url, current)
                    if s.respect_robots:
                        why = await self._robots_refusal(current, target)
                        if why is not None:
                            raise _Refused(FetchRefused(url, "robots", why))
                    location = await self._get(url, current, target)
                    if isinstance(location, FetchedPage):
                        return replace(location, redirects=tuple(seen[1:]))
                    current = location
        except _Refused as exc:
            return exc.refusal
        except TimeoutError:
            return FetchRefused(url, "timeout", f"not fetched within {s.timeout_s:g} s")

    async def _check(self, url: str, current: str) -> Target:
        """The checked target of hop *current* of the fetch of *url*; raises `_Refused`."""
        target = await resolve_url(current, allow_private=self.settings.allow_private)
        if isinstance(target, FetchRefused):
            raise _Refused(FetchRefused(url, target.kind, _via(target, url)))
        return target

    @asynccontextmanager
    async def _open(self, current: str, target: Target) -> AsyncIterator[httpx.Response]:
        """GET *current* (checked as *target*), connecting only to the checked addresses,
        under the per-host concurrency and delay limits."""
        s = self.settings
        host = self._host(current)
        async with host.slots:
            async with host.lock:
                wait = host.last + s.per_host_delay_s - time.monotonic()
                if wait > 0:
                    await anyio.sleep(wait)
                host.last = time.monotonic()
            token = _PIN.set(target)
            try:
                async with self._client.stream("GET", current) as response:
                    yield response
            finally:
                _PIN.reset(token)

    async def _get(self, url: str, current: str, target: Target) -> FetchedPage | str:
        """One request: the page, or the next URL of a redirect."""
        try:
            async with self._open(current, target) as response:
                if response.status_code in _REDIRECTS and "location" in response.headers:
                    return urljoin(current, response.headers["location"])
                if response.status_code != 200:
                    raise _Refused(FetchRefused(url, "status", f"HTTP {response.status_code}"))
                ctype = response.headers.get("content-type", "")
                mime = ctype.split(";", 1)[0].strip().lower()
                if mime not in _TEXT_TYPES:
                    raise _Refused(
                        FetchRefused(
                            url,
                            "content_type",
                            f"content type {mime or 'missing'!r} is not a text page",
                        )
                    )
                body = await self._body(url, response)
                charset = response.charset_encoding
        except httpx.HTTPError as exc:
            raise _Refused(FetchRefused(url, "network", _one_line(exc))) from None
        text, encoding = decode_page(body, charset, html=mime != "text/plain")
        if mime == "text/plain":
            title, main = "", text.strip()
        else:
            title, main = await anyio.to_thread.run_sync(html_to_text, text)
        if not main:
            raise _Refused(FetchRefused(url, "no_text", "the page has no readable text"))
        return FetchedPage(
            url=url,
            final_url=current,
            title=title,
            text=main,
            content_type=mime,
            encoding=encoding,
        )

    async def _body(self, url: str, response: httpx.Response) -> bytes:
        limit = self.settings.max_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _Refused(
                FetchRefused(url, "too_large", f"Content-Length {declared} > {limit} bytes")
            )
        try:
            return await _read(response, limit)
        except _TooLarge:
            raise _Refused(
                FetchRefused(url, "too_large", f"body larger than {limit} bytes")
            ) from None
        except _Undecodable as exc:
            raise _Refused(FetchRefused(url, "content_type", f"cannot decode: {exc}")) from None

    def _host(self, url: str) -> _Host:
        key = urlsplit(url).netloc.lower()
        if key not in self._hosts:
            self._hosts[key] = _Host(anyio.Semaphore(self.settings.per_host_concurrency))
        return self._hosts[key]

    async def _robots_refusal(self, url: str, target: Target) -> str | None:
        """None when robots.txt allows *url* (checked as *target*), else the reason."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        async with self._robots_locks.setdefault(origin, anyio.Lock()):
            if origin not in self._robots:
                self._robots[origin] = await self._load_robots(origin, target)
        rules = self._robots[origin]
        if rules is None or rules.parser.can_fetch(self.settings.user_agent, url):
            return None
        if rules.unreachable:
            return f"robots.txt of {origin} is unreachable ({rules.unreachable}): disallows all"
        return f"robots.txt disallows {url}"

    async def _load_robots(self, origin: str, target: Target) -> _Robots | None:
        """The origin's robots rules (RFC 9309); None = everything allowed. *target* is the
        origin's checked address; a redirect to another host is checked like a page."""
        url = origin + "/robots.txt"
        seen: list[str] = []
        try:
            with anyio.fail_after(min(self.settings.timeout_s, 10.0)):
                while len(seen) <= _ROBOTS_REDIRECTS:
                    seen.append(url)
                    hop = target if len(seen) == 1 else await self._check(url, url)
                    async with self._open(url, hop) as response:
                        status = response.status_code
                        location = response.headers.get("location")
                        if 200 <= status < 300:
                            body = await _head(response, _ROBOTS_MAX_BYTES)
                            text, _ = decode_page(body, response.charset_encoding, html=False)
                            return _Robots.parse(url, text.splitlines())
                    if status in _REDIRECTS and location:
                        url = urljoin(url, location)
                        if url in seen:
                            return None  # a loop never ends in a file: unavailable
                        continue
                    if status >= 500:  # unreachable: complete disallow (2.3.1.4)
                        return _Robots.parse(url, _DISALLOW_ALL, f"HTTP {status}")
                    return None  # 4xx (or 1xx/3xx without Location): unavailable (2.3.1.3)
        except _Refused as exc:
            return _Robots.parse(url, _DISALLOW_ALL, f"{url}: {exc.refusal.reason}")
        except httpx.HTTPError as exc:
            return _Robots.parse(url, _DISALLOW_ALL, _one_line(exc))
        except TimeoutError:
            return _Robots.parse(url, _DISALLOW_ALL, "no answer in time")
        return None  # more than 5 redirects: unavailable (2.3.1.2)


@dataclass(frozen=True, slots=True)
class _Robots:
    parser: urllib.robotparser.RobotFileParser
    unreachable: str = ""  # why everything is disallowed, when it is

    @classmethod
    def parse(cls, url: str, lines: list[str], unreachable: str = "") -> _Robots:
        parser = urllib.robotparser.RobotFileParser(url)
        parser.parse(lines)
        return cls(parser, unreachable)


async def _head(response: httpx.Response, limit: int) -> bytes:
    """The first *limit* bytes of the (decoded) body; the rest is not read. An undecodable
    body is empty (robots.txt: no rules)."""
    try:
        return await _read(response, limit, cut=True)
    except _Undecodable:
        return b""


def _one_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__


def _via(refused: FetchRefused, url: str) -> str:
    """A hop's refusal reason, naming the hop when it is not the URL asked for."""
    if refused.url == url:
        return refused.reason
    return f"redirected to {refused.url}: {refused.reason}"
