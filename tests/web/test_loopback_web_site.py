"""The loopback web site (`agentport.testing.LoopbackWeb`) serves what web tests rely on:
articles with boilerplate, the awkward built-in pages, robots.txt and the SearxNG JSON API."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agentport.testing import DEFAULT_PAGES, DEFAULT_QUESTION, INJECTED_PAGE, LoopbackWeb, WebPage


@pytest.fixture(scope="module")
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as site:
        yield site


def test_articles_have_boilerplate_and_verbatim_paragraphs(web: LoopbackWeb) -> None:
    page = DEFAULT_PAGES[1]
    r = httpx.get(web.url(page.path))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert "<nav>" in r.text
    assert "<footer>" in r.text
    assert all(p in r.text for p in page.paragraphs)
    assert web.hits[page.path] >= 1


def test_builtin_awkward_pages(web: LoopbackWeb) -> None:
    r = httpx.get(web.url("/redirect/3"), follow_redirects=True)
    assert r.status_code == 200
    assert len(r.history) == 3
    assert r.url.path == DEFAULT_PAGES[0].path
    assert httpx.get(web.url("/loop")).headers["location"] == "/loop"
    assert httpx.get(web.url("/missing")).status_code == 404
    assert httpx.get(web.url("/binary")).headers["content-type"] == "application/octet-stream"
    latin = httpx.get(web.url("/latin1"))
    assert b"caf\xe9" in latin.content
    assert "café" in latin.text
    assert "Ignore previous instructions" in httpx.get(web.url(INJECTED_PAGE.path)).text
    assert "Disallow: /private/" in httpx.get(web.url("/robots.txt")).text
    with httpx.stream("GET", web.url("/huge")) as s:
        got = 0
        for chunk in s.iter_bytes():
            got += len(chunk)
            if got > 1 << 20:
                break
    assert got > 1 << 20


def test_search_and_searxng_api(web: LoopbackWeb) -> None:
    hits = web.search(DEFAULT_QUESTION, limit=10)
    urls = {h.url for h in hits}
    assert {web.url(p.path) for p in DEFAULT_PAGES} <= urls
    assert web.url(INJECTED_PAGE.path) in urls  # the injection is reachable by search
    assert web.url("/latin1") not in urls
    data = httpx.get(web.url("/searxng/search"), params={"q": "porpoise", "format": "json"}).json()
    assert data["results"][0]["url"] == web.url("/articles/kessler-bay-wildlife")
    assert httpx.get(web.url("/searxng/search"), params={"q": "x"}).status_code == 403
    web.add(WebPage("/articles/extra", "Zanzibar notes", ("Zanzibar quokka census.",)))
    assert [h.url for h in web.search("quokka")] == [web.url("/articles/extra")]


@pytest.mark.anyio
async def test_async_context_manager() -> None:
    robots = "User-agent: *\nDisallow: /\n"
    async with LoopbackWeb(robots=robots) as site, httpx.AsyncClient() as client:
        r = await client.get(site.url("/robots.txt"))
    assert r.text.endswith("Disallow: /\n")
