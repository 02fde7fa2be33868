"""agentport's fetcher cannot be steered to addresses it did not check: a DNS server that
answers differently the second time (rebinding), numeric and localhost spellings of loopback,
a host with both public and private addresses; and robots.txt follows RFC 9309 (redirects up
to five hops, each checked like a page; 4xx allows all; 5xx or a refused hop disallows all;
only the first 500 KiB read)."""

from __future__ import annotations

import functools
import ipaddress
import itertools
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import pytest

pytest.importorskip("trafilatura", reason="needs the web extra: pip install -e '.[web]'")
from hypothesis import given
from hypothesis import strategies as st

from _more_clis_util import network_isolated
from agentport.config import load_settings
from agentport.core import ProviderError
from agentport.testing import DEFAULT_PAGES, LoopbackTls, LoopbackWeb
from agentport.web import FetchedPage, Fetcher, FetchRefused, WebSettings, _guard
from agentport.web._guard import literal_address, resolve_url

pytestmark = pytest.mark.anyio
ARTICLE = DEFAULT_PAGES[0]
PUBLIC = "93.184.216.34"  # a global address; unreachable inside the tests' network namespace
DEFAULT = WebSettings(per_host_delay_s=0, timeout_s=2)  # allow_private off, robots on
LOOPBACK_OK = DEFAULT.model_copy(update={"allow_private": True})
# Tests whose fetch connects to PUBLIC: only where that cannot leave the machine.
CONNECTS_TO_PUBLIC = pytest.mark.skipif(
    not network_isolated(), reason="connects to a public address: run under scripts/test.sh"
)


class FakeDns:
    """Replaces socket.getaddrinfo (used by the fetcher's check AND by any resolution the
    HTTP client would do itself) for names in *answers*: call N gets answers[name][N] (the
    last answer repeats). Other names go to the real resolver."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []
        self._real = socket.getaddrinfo

    def __call__(
        self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[tuple[Any, ...]]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in self.answers:
            return self._real(host, port, family, type, proto, flags)
        if flags & socket.AI_NUMERICHOST:
            raise socket.gaierror(socket.EAI_NONAME, "not a numeric host")
        calls = sum(1 for a in self.asked if a == name)
        self.asked.append(name)
        answer = self.answers[name][min(calls, len(self.answers[name]) - 1)]
        number = int(port) if port is not None else 0
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (a, number, 0, 0))
            if ":" in a
            else (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (a, number))
            for a in answer
        ]


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDns:
    fake = FakeDns({})
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return fake


@pytest.fixture(scope="module")
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as site:
        yield site


async def fetch(url: str, settings: WebSettings) -> FetchedPage | FetchRefused:
    async with Fetcher(settings) as fetcher:
        return await fetcher.fetch(url)


def _hits(web: LoopbackWeb) -> int:
    return sum(web.hits.values())


# -- DNS rebinding ----------------------------------------------------------------------


@pytest.mark.parametrize("robots", [True, False])
@CONNECTS_TO_PUBLIC
async def test_rebinding_dns_cannot_reach_loopback(
    web: LoopbackWeb, dns: FakeDns, robots: bool
) -> None:
    # First answer public (the check passes), every later answer 127.0.0.1: a client that
    # resolves again to connect would read the loopback site.
    port = web.url("/").split(":")[-1].rstrip("/")
    dns.answers["rebind.example"] = [[PUBLIC], ["127.0.0.1"]]
    before = _hits(web)
    got = await fetch(
        f"http://rebind.example:{port}{ARTICLE.path}",
        DEFAULT.model_copy(update={"respect_robots": robots}),
    )
    assert isinstance(got, FetchRefused), got
    assert got.kind == ("robots" if robots else "network")
    assert _hits(web) == before  # loopback never reached
    assert dns.asked == ["rebind.example"]  # resolved once, by the check; never again


async def test_connection_goes_to_the_checked_address(web: LoopbackWeb, dns: FakeDns) -> None:
    # allow_private: the first answer (loopback, where the site is) is the one connected to,
    # robots.txt and page alike; the later answer (a black hole) is never asked for.
    port = web.url("/").split(":")[-1].rstrip("/")
    dns.answers["pinned.example"] = [["127.0.0.1"], ["10.255.255.1"]]
    page = await fetch(f"http://pinned.example:{port}{ARTICLE.path}", LOOPBACK_OK)
    assert isinstance(page, FetchedPage), page
    assert ARTICLE.paragraphs[0] in page.text
    assert dns.asked == ["pinned.example"]


async def test_every_redirect_hop_is_resolved_checked_and_pinned(
    web: LoopbackWeb, dns: FakeDns
) -> None:
    port = web.url("/").split(":")[-1].rstrip("/")
    dns.answers["hop.example"] = [["127.0.0.1"]] * 3 + [["10.255.255.1"]]
    page = await fetch(f"http://hop.example:{port}/redirect/2", LOOPBACK_OK)
    assert isinstance(page, FetchedPage), page
    assert len(page.redirects) == 2
    assert dns.asked == ["hop.example"] * 3  # one resolution per hop, each used to connect


async def test_public_and_private_answer_is_refused(web: LoopbackWeb, dns: FakeDns) -> None:
    port = web.url("/").split(":")[-1].rstrip("/")
    dns.answers["both.example"] = [[PUBLIC, "127.0.0.1"]]
    before = _hits(web)
    got = await fetch(f"http://both.example:{port}{ARTICLE.path}", DEFAULT)
    assert isinstance(got, FetchRefused)
    assert got.kind == "private_address"
    assert "127.0.0.1" in got.reason
    assert _hits(web) == before


@CONNECTS_TO_PUBLIC
async def test_international_name_is_resolved_as_the_client_sends_it(dns: FakeDns) -> None:
    # IDNA 2008 (httpx) spells faß as xn--fa-hia; Python's IDNA 2003 codec would check
    # fass.example, a different host.
    dns.answers["xn--fa-hia.example"] = [[PUBLIC]]
    dns.answers["fass.example"] = [["127.0.0.1"]]
    got = await fetch("http://faß.example/", DEFAULT)
    assert isinstance(got, FetchRefused)
    assert dns.asked
    assert set(dns.asked) == {"xn--fa-hia.example"}


# -- loopback in disguise ---------------------------------------------------------------

DISGUISED = [
    "http://0x7f.1:{port}/",
    "http://2130706433:{port}/",
    "http://017700000001:{port}/",
    "http://127.1:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://[::ffff:7f00:1]:{port}/",
    "http://[::1]:{port}/",
    "http://0:{port}/",
    "http://localhost.:{port}/",
    "http://LocalHost:{port}/",
    "http://api.localhost:{port}/",
    "http://[fe80::1%25eth0]:{port}/",
]


@pytest.mark.parametrize("template", DISGUISED)
async def test_loopback_in_disguise_is_refused_without_dns(
    web: LoopbackWeb, monkeypatch: pytest.MonkeyPatch, template: str
) -> None:
    async def no_dns(host: str, port: int) -> list[str]:
        raise AssertionError(f"{host} was sent to DNS")

    monkeypatch.setattr(_guard, "_resolve", no_dns)
    url = template.format(port=web.url("/").split(":")[-1].rstrip("/"))
    before = _hits(web)
    got = await fetch(url, DEFAULT)
    assert isinstance(got, FetchRefused), got
    assert got.kind == "private_address", got
    assert _hits(web) == before


async def test_public_literals_are_taken_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_dns(host: str, port: int) -> list[str]:
        raise AssertionError(f"{host} was sent to DNS")

    monkeypatch.setattr(_guard, "_resolve", no_dns)
    v6 = await resolve_url("https://[2606:4700:4700::1111]/dns", allow_private=False)
    assert not isinstance(v6, FetchRefused)
    assert (v6.host, v6.port, v6.addresses) == (
        "2606:4700:4700::1111",
        443,
        ("2606:4700:4700::1111",),
    )
    v4 = await resolve_url("http://0x5db8d822:8080/", allow_private=False)
    assert not isinstance(v4, FetchRefused)
    assert (v4.port, v4.addresses) == (8080, (PUBLIC,))


async def test_numeric_spelling_connects_where_it_was_checked(web: LoopbackWeb) -> None:
    port = web.url("/").split(":")[-1].rstrip("/")
    page = await fetch(f"http://0x7f.1:{port}{ARTICLE.path}", LOOPBACK_OK)
    assert isinstance(page, FetchedPage), page


# -- pure properties --------------------------------------------------------------------


def _part(value: int, radix: str) -> str:
    return {"dec": str(value), "hex": hex(value), "oct": "0" + oct(value)[2:]}[radix]


@st.composite
def ipv4_spellings(draw: st.DrawFn) -> tuple[ipaddress.IPv4Address, str]:
    """An IPv4 address and one of the spellings inet_aton(3) reads as it."""
    n = draw(st.integers(min_value=0, max_value=2**32 - 1))
    shape = draw(st.sampled_from([4, 3, 2, 1]))
    b = n.to_bytes(4, "big")
    values = {
        4: list(b),
        3: [b[0], b[1], int.from_bytes(b[2:], "big")],
        2: [b[0], int.from_bytes(b[1:], "big")],
        1: [n],
    }[shape]
    radix = st.sampled_from(["dec", "hex", "oct"])
    return ipaddress.IPv4Address(n), ".".join(_part(v, draw(radix)) for v in values)


@given(case=ipv4_spellings())
def test_every_ipv4_spelling_is_read_as_its_address(
    case: tuple[ipaddress.IPv4Address, str],
) -> None:
    address, spelling = case
    assert literal_address(spelling) == address
    url = f"http://{spelling}/"
    got = anyio.run(functools.partial(resolve_url, url, allow_private=False))
    if isinstance(got, FetchRefused) and got.kind == "scheme":
        with pytest.raises(httpx.InvalidURL):  # e.g. 1.2.3.04: httpx cannot send it either
            httpx.URL(url)
        return
    if address.is_global and not address.is_multicast and not address.is_reserved:
        assert not isinstance(got, FetchRefused)
        assert got.addresses == (str(address),)
    else:
        assert isinstance(got, FetchRefused)
        assert got.kind == "private_address"


@given(name=st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True))
def test_dns_names_are_not_read_as_addresses(name: str) -> None:
    assert literal_address(name) is None


@given(user=st.text(min_size=1, max_size=12), password=st.none() | st.text(max_size=12))
def test_any_credentials_in_a_url_are_refused(user: str, password: str | None) -> None:
    userinfo = quote(user, safe="") + ("" if password is None else ":" + quote(password, safe=""))
    url = f"https://{userinfo}@example.com/page"
    got = anyio.run(functools.partial(resolve_url, url, allow_private=True))
    assert isinstance(got, FetchRefused)
    assert got.kind == "credentials"


# -- robots.txt (RFC 9309) -------------------------------------------------------------

ROBOTS_DENY_ARTICLES = "User-agent: *\nDisallow: /articles/\n"


@pytest.mark.parametrize("hops", [1, 5])
async def test_robots_redirects_are_followed_up_to_five(hops: int) -> None:
    with LoopbackWeb() as site:
        chain = ["/robots.txt"] + [f"/moved{i}/robots.txt" for i in range(1, hops + 1)]
        for here, there in itertools.pairwise(chain):
            site.override(here, 301, location=there)
        site.override(chain[-1], 200, body=ROBOTS_DENY_ARTICLES)
        got = await fetch(site.url(ARTICLE.path), LOOPBACK_OK)
        assert isinstance(got, FetchRefused), got
        assert got.kind == "robots", got
        assert site.hits[chain[-1]] == 1
        assert site.hits[ARTICLE.path] == 0


async def test_robots_behind_six_redirects_is_unavailable_so_allows_all() -> None:
    with LoopbackWeb() as site:
        chain = ["/robots.txt"] + [f"/moved{i}/robots.txt" for i in range(1, 7)]
        for here, there in itertools.pairwise(chain):
            site.override(here, 302, location=there)
        site.override(chain[-1], 200, body=ROBOTS_DENY_ARTICLES)
        page = await fetch(site.url(ARTICLE.path), LOOPBACK_OK)
        assert isinstance(page, FetchedPage), page
        assert site.hits[chain[-1]] == 0  # the sixth hop is not followed


@pytest.mark.parametrize(
    ("status", "allowed"), [(404, True), (410, True), (401, True), (500, False), (503, False)]
)
async def test_robots_4xx_allows_and_5xx_disallows(status: int, allowed: bool) -> None:
    with LoopbackWeb() as site:
        site.override("/robots.txt", status)
        got = await fetch(site.url(ARTICLE.path), LOOPBACK_OK)
        if allowed:
            assert isinstance(got, FetchedPage), got
        else:
            assert isinstance(got, FetchRefused), got
            assert got.kind == "robots", got
            assert f"HTTP {status}" in got.reason
            assert site.hits[ARTICLE.path] == 0


async def test_robots_redirect_hop_is_checked_like_a_page() -> None:
    with LoopbackWeb() as site:
        leak = site.url("/moved/robots.txt").replace("http://", "http://user:secret@")
        site.override("/robots.txt", 302, location=leak)
        site.override("/moved/robots.txt", 200, body="User-agent: *\nAllow: /\n")
        got = await fetch(site.url(ARTICLE.path), LOOPBACK_OK)
        assert isinstance(got, FetchRefused), got
        assert got.kind == "robots", got
        assert "credentials" in got.reason
        assert site.hits["/moved/robots.txt"] == 0


async def test_robots_redirect_loop_allows_all() -> None:
    with LoopbackWeb() as site:
        site.override("/robots.txt", 302, location="/again/robots.txt")
        site.override("/again/robots.txt", 302, location="/robots.txt")
        page = await fetch(site.url(ARTICLE.path), LOOPBACK_OK)
        assert isinstance(page, FetchedPage), page


async def test_endless_robots_is_read_only_to_500_kib() -> None:
    with LoopbackWeb() as site:
        site.override("/robots.txt", 302, location="/huge")  # 1 GiB at 200
        page = await fetch(site.url(ARTICLE.path), LOOPBACK_OK)
        assert isinstance(page, FetchedPage), page


# -- an explicit proxy ([web] proxy) -----------------------------------------------------


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _FakeProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append(self.path)  # a forward proxy gets the absolute URL
        if self.path.endswith("/robots.txt"):
            status, body = 404, b"not found"
        else:
            status, body = 200, f"<html><body><p>{PROXIED_TEXT}</p></body></html>".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _FakeProxy(ThreadingHTTPServer):
    """A forward HTTP proxy on loopback that answers every request itself."""

    daemon_threads = True

    def __init__(self) -> None:
        self.seen: list[str] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


PROXIED_TEXT = "This page came through the configured proxy, not from the origin server."


@pytest.fixture(scope="module")
def proxy() -> Iterator[_FakeProxy]:
    server = _FakeProxy()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


async def test_configured_proxy_is_used_and_targets_still_checked(
    proxy: _FakeProxy, dns: FakeDns
) -> None:
    dns.answers["proxied.example"] = [[PUBLIC]]
    settings = DEFAULT.model_copy(update={"proxy": proxy.url})
    proxy.seen.clear()
    page = await fetch("http://proxied.example/news", settings)
    assert isinstance(page, FetchedPage), page
    assert PROXIED_TEXT in page.text
    assert proxy.seen == ["http://proxied.example/robots.txt", "http://proxied.example/news"]
    proxy.seen.clear()
    private = await fetch("http://127.0.0.1:9/secret", settings)
    assert isinstance(private, FetchRefused)
    assert private.kind == "private_address"
    assert proxy.seen == []  # refused before the proxy hears of it


async def test_environment_proxies_are_ignored(
    proxy: _FakeProxy, web: LoopbackWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, proxy.url)
    proxy.seen.clear()
    page = await fetch(web.url(ARTICLE.path), LOOPBACK_OK)
    assert isinstance(page, FetchedPage), page
    assert proxy.seen == []


def test_proxy_setting_is_an_http_url_named_on_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[web]\nproxy = "http://127.0.0.1:3128/"\n', encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(user))
    assert load_settings(cwd=tmp_path).web.proxy == "http://127.0.0.1:3128"
    user.write_text('[web]\nproxy = "socks5://127.0.0.1:1080"\n', encoding="utf-8")
    with pytest.raises(ProviderError) as info:
        load_settings(cwd=tmp_path)
    assert "web.proxy" in info.value.message
    assert "user.toml" in info.value.message


# -- TLS over a pinned connection -----------------------------------------------------------


async def test_tls_verifies_the_url_host_over_the_pinned_address(
    web: LoopbackWeb, dns: FakeDns, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The certificate names localhost and 127.0.0.1. Connecting to the checked 127.0.0.1, TLS
    # must still verify the URL's host name: localhost passes, another name fails.
    with LoopbackTls(web.base_url) as tls:
        monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca_file))
        port = tls.base_url.rsplit(":", 1)[1]
        dns.answers["localhost"] = [["127.0.0.1"]]
        dns.answers["other.example"] = [["127.0.0.1"]]
        page = await fetch(f"https://localhost:{port}{ARTICLE.path}", LOOPBACK_OK)
        assert isinstance(page, FetchedPage), page
        assert ARTICLE.paragraphs[0] in page.text
        wrong = await fetch(f"https://other.example:{port}{ARTICLE.path}", LOOPBACK_OK)
        assert isinstance(wrong, FetchRefused)
        assert wrong.kind == "robots"  # robots.txt, the first request, is unreachable
        assert "not valid for 'other.example'" in wrong.reason
