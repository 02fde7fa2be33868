"""The fetcher and the search client cannot be exhausted by what a hostile server sends.

Regressions: stacked `Content-Encoding: gzip, gzip` was inflated before the size limit was
checked (1.8 KB on the wire, 2.1 GB of memory); `charset=hex` / `base64` / `rot13` / `idna`
made `fetch()` raise; the `<title>` regex was quadratic (a 1 MB page held the GIL for
minutes); the SearxNG client read an answer of any size and depth; IPv6 spellings that
embed or reach private IPv4 (6to4, NAT64, Teredo, site-local, IPv4-compatible) were public.
Memory is bounded with tracemalloc; the time guards are hang guards, not timings.
"""

from __future__ import annotations

import threading
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest

pytest.importorskip("trafilatura", reason="needs the web extra: pip install -e '.[web]'")

from agentport.web import FetchedPage, Fetcher, FetchRefused, WebSettings, is_public_address
from agentport.web._fetch import _title
from agentport.web._search import SearxngProvider
from agentport.web._types import SearchError

pytestmark = pytest.mark.anyio
PAGE = (
    b"<html><head><title>T</title></head><body><p>"
    + b"Readable text. " * 40
    + b"</p></body></html>"
)


def _gzip_stream(chunks: Iterator[bytes]) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(packer.compress(c) for c in chunks) + packer.flush()


def _zeros(total: int, block: int = 1 << 20) -> Iterator[bytes]:
    zero = bytes(block)
    for _ in range(total // block):
        yield zero


JSON = {"Content-Type": "application/json"}
BOMB_BYTES = 512 << 20  # inflates to 512 MiB; a few hundred bytes on the wire after two layers
_ONE = _gzip_stream(_zeros(BOMB_BYTES))
ROUTES: dict[str, tuple[dict[str, str], bytes]] = {
    "/bomb2": ({"Content-Encoding": "gzip, gzip"}, _gzip_stream(iter([_ONE]))),
    "/bomb1": ({"Content-Encoding": "gzip"}, _ONE),
    "/three": ({"Content-Encoding": "gzip, gzip, gzip"}, b"x"),
    "/br": ({"Content-Encoding": "br"}, b"x"),
    "/gzip-page": ({"Content-Encoding": "gzip"}, _gzip_stream(iter([PAGE]))),
    "/titles": ({}, b"<html><head>" + b"<title" * 200_000 + b"<body><p>" + b"Some text. " * 50),
    "/big/search": (JSON, b'{"results": [' + b"1," * (3 << 20) + b"1]}"),
    "/deep/search": (JSON, b'{"results": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/robots.txt":
            headers, body = {}, b""
            status = 404
        elif path.startswith("/charset/"):
            status, headers, body = 200, {"Content-Type": f"text/html; charset={path[9:]}"}, PAGE
        else:
            status, (headers, body) = 200, ROUTES[path]
        self.send_response(status)
        self.send_header("Content-Type", headers.get("Content-Type", "text/html; charset=utf-8"))
        for key, value in headers.items():
            if key != "Content-Type":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]  # a refused body's client hangs up mid-write
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


SETTINGS = WebSettings(allow_private=True, per_host_delay_s=0, timeout_s=20, max_bytes=3_000_000)


async def _fetch(url: str) -> tuple[object, int]:
    tracemalloc.start()
    try:
        with anyio.fail_after(60):  # a hang guard
            async with Fetcher(SETTINGS) as fetcher:
                got = await fetcher.fetch(url)
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("path", ["/bomb1", "/bomb2"])
async def test_a_compression_bomb_is_refused_within_the_limit(server: str, path: str) -> None:
    got, peak = await _fetch(server + path)
    assert isinstance(got, FetchRefused), got
    assert got.kind == "too_large"
    assert peak < 40 << 20, f"peak {peak >> 20} MiB while inflating"


@pytest.mark.parametrize("path", ["/three", "/br"])
async def test_codings_it_cannot_bound_are_refused(server: str, path: str) -> None:
    got, _ = await _fetch(server + path)
    assert isinstance(got, FetchRefused), got
    assert "cannot decode" in got.reason


async def test_a_compressed_page_still_reads(server: str) -> None:
    got, _ = await _fetch(server + "/gzip-page")
    assert isinstance(got, FetchedPage), got
    assert "Readable text." in got.text


@pytest.mark.parametrize(
    "label", ["hex", "base64", "rot13", "idna", "zlib", "bogus-label", "utf-7"]
)
async def test_any_charset_label_decodes_or_falls_back(server: str, label: str) -> None:
    got, _ = await _fetch(f"{server}/charset/{label}")
    assert isinstance(got, FetchedPage), got
    assert "Readable text." in got.text


async def test_a_page_of_unclosed_titles_is_handled_in_linear_time(server: str) -> None:
    got, _ = await _fetch(server + "/titles")
    assert isinstance(got, (FetchedPage, FetchRefused))  # answered within the guard
    assert _title("<title" * 500_000) == ""
    assert _title("<TITLE lang=en> A  page </title>") == "A page"


@pytest.mark.parametrize("engine", ["/big", "/deep"])
async def test_an_oversized_or_deep_search_answer_is_one_error(server: str, engine: str) -> None:
    provider = SearxngProvider(server + engine, timeout_s=20)
    tracemalloc.start()
    try:
        with pytest.raises(SearchError):
            await provider.search("q", 5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("2002:a00:1::1", False),  # 6to4 of 10.0.0.1
        ("2002:808:808::1", True),  # 6to4 of 8.8.8.8
        ("64:ff9b::a00:1", False),  # NAT64 of 10.0.0.1
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("64:ff9b::808:808", True),
        ("64:ff9b:1::808:808", False),  # local-use NAT64 (RFC 8215)
        ("2001:0:a00:1::", False),  # Teredo
        ("fec0::1", False),  # site-local
        ("::10.0.0.1", False),  # IPv4-compatible
        ("::8.8.8.8", False),
        ("::ffff:127.0.0.1", False),
        ("2001:4860:4860::8888", True),
    ],
)
def test_special_purpose_ipv6_ranges(address: str, public: bool) -> None:
    assert is_public_address(address) is public
