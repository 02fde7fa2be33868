"""Per-call HTTP clients must not rebuild a TLS context (reading the CA bundle blocks the
event loop ~0.4 s, which serialised every concurrent call of a research batch). Every
per-call client agentport opens is covered: the openai_compat backend, the SearxNG search
provider and the fetcher; the shared context still follows `SSL_CERT_FILE`."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import certifi
import httpx._transports.default as transports
import pytest

from _extras import needs_web
from agentport.core import Message
from agentport.factory import create_llm_adapter
from agentport.testing import DEFAULT_PAGES, FakeModelServer, LoopbackWeb
from agentport.transport import tls_context
from agentport.web import FetchedPage, Fetcher, SearxngProvider, WebSettings

pytestmark = pytest.mark.anyio


def _count_contexts(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    built: list[Any] = []
    real = transports.create_ssl_context

    def counting(verify: Any = True, **kw: Any) -> ssl.SSLContext:
        built.append(verify)
        return real(verify=verify, **kw)

    monkeypatch.setattr(transports, "create_ssl_context", counting)
    return built


async def test_openai_compat_calls_share_one_tls_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _count_contexts(monkeypatch)
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer() as server:
        server.default = "ok"
        options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123456789"}
        llm = create_llm_adapter("openai_compat", cwd=tmp_path, openai_compat=options)
        for _ in range(3):
            result = await llm.complete([Message.user("hi")])
            assert result.unwrap().content == "ok"
    assert len(built) == 3  # one client per call...
    assert all(isinstance(v, ssl.SSLContext) for v in built)  # ...none building its own TLS
    assert len({id(v) for v in built}) == 1


@needs_web
async def test_web_search_and_fetch_share_the_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _count_contexts(monkeypatch)
    with LoopbackWeb() as web:
        engine = SearxngProvider(web.base_url + "/searxng")
        for _ in range(3):
            assert await engine.search("Kessler Bay tidal array", 3)
        settings = WebSettings(allow_private=True, per_host_delay_s=0)
        async with Fetcher(settings) as fetcher:
            for _ in range(2):
                page = await fetcher.fetch(web.url(DEFAULT_PAGES[0].path))
                assert isinstance(page, FetchedPage), page
    assert all(isinstance(v, ssl.SSLContext) for v in built)  # nobody built their own
    assert len({id(v) for v in built}) <= 1


def test_the_shared_context_follows_ssl_cert_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    first = tls_context()
    assert tls_context() is first
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert tls_context() is not first
