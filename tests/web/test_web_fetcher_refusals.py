"""agentport's own fetcher and SearxNG provider against the loopback web: every awkward page
ends as a typed value naming the URL and the reason, never an exception or a hang."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

import pytest

pytest.importorskip("trafilatura", reason="needs the web extra: pip install -e '.[web]'")
from hypothesis import given
from hypothesis import strategies as st

from agentport.testing import DEFAULT_PAGES, DEFAULT_QUESTION, LoopbackWeb
from agentport.web import (
    FetchedPage,
    Fetcher,
    FetchRefused,
    SearchError,
    SearxngProvider,
    WebSettings,
    is_public_address,
)

pytestmark = pytest.mark.anyio
ARTICLE = DEFAULT_PAGES[0]
TEST = WebSettings(allow_private=True, per_host_delay_s=0, timeout_s=2, max_bytes=300_000)


@pytest.fixture(scope="module")
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as site:
        yield site


async def fetch(url: str, settings: WebSettings = TEST) -> FetchedPage | FetchRefused:
    async with Fetcher(settings) as fetcher:
        return await fetcher.fetch(url)


async def refused(url: str, settings: WebSettings = TEST) -> FetchRefused:
    got = await fetch(url, settings)
    assert isinstance(got, FetchRefused), got
    assert got.url == url
    assert url in str(got)
    return got


async def test_article_text_without_boilerplate(web: LoopbackWeb) -> None:
    page = await fetch(web.url(ARTICLE.path))
    assert isinstance(page, FetchedPage)
    assert page.title == ARTICLE.title
    assert all(p in page.text for p in ARTICLE.paragraphs)
    assert "Subscribe to our newsletter" not in page.text
    assert "Cookie settings" not in page.text


async def test_redirect_chain_followed_and_loop_refused(web: LoopbackWeb) -> None:
    page = await fetch(web.url("/redirect/3"))
    assert isinstance(page, FetchedPage)
    assert page.final_url == web.url(ARTICLE.path)
    assert len(page.redirects) == 3
    assert (await refused(web.url("/redirect/9"))).kind == "too_many_redirects"
    assert (await refused(web.url("/loop"))).kind == "redirect_loop"


async def test_status_size_time_and_type_limits(web: LoopbackWeb) -> None:
    missing = await refused(web.url("/missing"))
    assert (missing.kind, missing.reason) == ("status", "HTTP 404")
    assert (await refused(web.url("/huge"))).kind == "too_large"
    assert (await refused(web.url("/slow"))).kind == "timeout"
    binary = await refused(web.url("/binary"))
    assert binary.kind == "content_type"
    assert "application/octet-stream" in binary.reason


async def test_declared_latin1_is_decoded(web: LoopbackWeb) -> None:
    page = await fetch(web.url("/latin1"))
    assert isinstance(page, FetchedPage)
    assert page.encoding == "windows-1252"  # the WHATWG Encoding Standard's name for the label
    assert "crème brûlée" in page.text


async def test_credentials_and_private_addresses_refused(web: LoopbackWeb) -> None:
    with_creds = web.url(ARTICLE.path).replace("http://", "http://user:secret@")
    assert (await refused(with_creds)).kind == "credentials"
    assert (await refused("file:///etc/passwd")).kind == "scheme"
    default = WebSettings(per_host_delay_s=0)  # allow_private is off by default
    private = await refused(web.url(ARTICLE.path), default)
    assert private.kind == "private_address"
    assert "127.0.0.1" in private.reason
    for address in ("10.1.2.3", "169.254.169.254", "::1", "::ffff:127.0.0.1", "192.168.0.1"):
        assert not is_public_address(address)
    assert is_public_address("93.184.216.34")


async def test_redirect_to_private_hop_is_rechecked(web: LoopbackWeb) -> None:
    # Every hop is checked: a redirect chain on loopback is refused at its first hop without
    # allow_private, and the refusal names the URL asked for.
    got = await refused(web.url("/redirect/2"), WebSettings(per_host_delay_s=0))
    assert got.kind == "private_address"


async def test_robots_disallow_is_honoured() -> None:
    with LoopbackWeb(robots="User-agent: *\nDisallow: /articles/\n") as site:
        got = await refused(site.url(ARTICLE.path))
        assert got.kind == "robots"
        assert site.hits[ARTICLE.path] == 0
        ignored = await fetch(
            site.url(ARTICLE.path), TEST.model_copy(update={"respect_robots": False})
        )
        assert isinstance(ignored, FetchedPage)


async def test_searxng_provider(web: LoopbackWeb) -> None:
    hits = await SearxngProvider(web.url("/searxng")).search(DEFAULT_QUESTION, 3)
    assert len(hits) == 3
    assert all(h.url.startswith(web.base_url) for h in hits)
    assert hits[0].title
    with pytest.raises(SearchError, match="not JSON"):
        await SearxngProvider(web.url("/searxng-garbage")).search("kessler", 3)
    with pytest.raises(SearchError, match="HTTP 404"):
        await SearxngProvider(web.url("/nowhere")).search("kessler", 3)
    with pytest.raises(SearchError, match="searxng"):
        await SearxngProvider("http://127.0.0.1:9").search("kessler", 3)  # nothing listens


_NON_PUBLIC = [
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16",
              "100.64.0.0/10", "0.0.0.0/8", "fc00::/7", "fe80::/10", "::1/128")
]  # fmt: skip


@given(net=st.sampled_from(_NON_PUBLIC), offset=st.integers(min_value=0), mapped=st.booleans())
def test_no_private_loopback_or_link_local_address_counts_as_public(
    net: ipaddress.IPv4Network | ipaddress.IPv6Network, offset: int, mapped: bool
) -> None:
    address = net[offset % net.num_addresses]
    text = str(address)
    if mapped and address.version == 4:
        text = f"::ffff:{address}"  # IPv4-mapped IPv6 must not smuggle a private address
    assert not is_public_address(text)
