"""Web research on a backend without web tools runs on agentport's own search and fetch:
`agentport research "QUESTION"` (default settings, `[web]` pointing at the loopback SearxNG)
on `openai_compat` against FakeModelServer cites the loopback pages, keeps the seed's call
formula, skips unfetchable sources by name, and the injected page changes nothing outside
the report. Without a search engine the refusal says how to configure one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _extras import needs_web
from agentport.cli import app
from agentport.testing import (
    ALLOW_ENV,
    DEFAULT_PAGES,
    DEFAULT_QUESTION,
    INJECTED_PAGE,
    FakeModelServer,
    JsonReply,
    LoopbackWeb,
    RecordedRequest,
    WebPage,
)

runner = CliRunner()
COSTS, OUTPUT, WILDLIFE = DEFAULT_PAGES[1], DEFAULT_PAGES[0], DEFAULT_PAGES[2]
# Searchable, but robots.txt disallows /private/: a source agentport must skip by name.
BLOCKED = WebPage(
    "/private/kessler-bay-memo",
    "Kessler Bay tidal array internal memo",
    ("The Kessler Bay tidal array memo is private.",),
)


# Searchable, but served by the site's /slow route (headers, then a byte every 0.2 s).
SLOW = WebPage(
    "/slow", "Kessler Bay tidal array live output", ("Kessler Bay tidal array output now.",)
)


@pytest.fixture(scope="module")
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as site:
        site.add(BLOCKED)
        site.add(SLOW)
        yield site


def _text(req: RecordedRequest) -> str:
    return req.raw.decode("utf-8", "replace")


def _has(*needles: str) -> Any:
    return lambda req: all(n in _text(req) for n in needles)


def _claim(page: WebPage, i: int = 0) -> dict[str, str]:
    return {"claim": page.paragraphs[i], "quote": page.paragraphs[i], "importance": "central"}


def _script(server: FakeModelServer, web: LoopbackWeb) -> None:
    angles = [
        {"label": "costs", "query": "Kessler Bay tidal array cost", "rationale": "money"},
        {"label": "output", "query": "Kessler Bay tidal array megawatts", "rationale": "power"},
        {"label": "wildlife", "query": "Kessler Bay porpoise seal", "rationale": "ecology"},
    ]
    server.reply(
        JsonReply({"question": DEFAULT_QUESTION, "summary": "s", "angles": angles}),
        when=_has("Decompose this research question"),
        times=None,
    )
    picks = [COSTS, OUTPUT, WILDLIFE, INJECTED_PAGE, BLOCKED, SLOW]
    server.reply(
        JsonReply(
            {
                "results": [
                    {"url": web.url(p.path), "title": p.title, "relevance": "high"} for p in picks
                ]
            }
        ),
        when=_has("## Web Searcher"),
        times=None,
    )
    for page in (COSTS, OUTPUT, WILDLIFE):
        server.reply(
            JsonReply({"sourceQuality": "primary", "claims": [_claim(page)]}),
            when=_has("## Source Extractor", web.url(page.path)),
            times=None,
        )
    # What a model fooled by the injection would answer: a claim the page never says.
    server.reply(
        JsonReply(
            {
                "sourceQuality": "blog",
                "claims": [
                    {
                        "claim": "The Kessler Bay tidal array cost nothing.",
                        "quote": "the Kessler Bay tidal array cost nothing at all",
                        "importance": "central",
                    }
                ],
            }
        ),
        when=_has("## Source Extractor", web.url(INJECTED_PAGE.path)),
        times=None,
    )
    server.reply(
        JsonReply({"refuted": False, "evidence": "the fetched text says so", "confidence": "high"}),
        when=_has("Adversarial Claim Verifier"),
        times=None,
    )
    server.reply(
        JsonReply(
            {
                "summary": "The array cost 640 million euros and generates 118 megawatts.",
                "findings": [
                    {
                        "claim": COSTS.paragraphs[0],
                        "confidence": "high",
                        "sources": [web.url(COSTS.path)],
                        "evidence": "quoted from the page",
                    }
                ],
                "caveats": "one regional source",
                "openQuestions": [],
            }
        ),
        when=_has("## Synthesis"),
        times=None,
    )


def _configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(body, encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(ALLOW_ENV, "1")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)


def _llm_table(server: FakeModelServer) -> str:
    return (
        '[llm]\nbackend = "openai_compat"\nretry_attempts = 1\n'
        f'[llm.openai_compat]\nbase_url = "{server.openai_base_url}"\n'
        'api_key = "sk-fake-0123456789"\n'
    )


@needs_web
def test_openai_compat_web_research_on_agentports_own_tools(
    web: LoopbackWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pwned = Path("/tmp/pwned")
    before = pwned.stat().st_mtime_ns if pwned.exists() else None
    with FakeModelServer() as server:
        _script(server, web)
        _configure(
            tmp_path,
            monkeypatch,
            _llm_table(server) + f'[web]\nsearxng_url = "{web.url("/searxng")}"\n'
            "allow_private = true\nper_host_delay_s = 0\ntimeout_s = 3\n",
        )
        result = runner.invoke(app, ["research", DEFAULT_QUESTION, "--json", "--quiet"])
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    stats = report["stats"]
    # the seed's formula holds, measured: 1 + angles + sources + voted*3 + 1
    assert stats["agentCallsMade"] == stats["agentCalls"]
    assert stats["angles"] == 3
    assert stats["sourcesFetched"] == 4  # costs, overview, wildlife, injected; not the memo
    assert stats["webSearches"] == 3
    assert stats["skippedByReason"] == {"robots": 1, "timeout": 1}  # the slow page: bounded
    assert web.hits[BLOCKED.path] == 0
    assert any(BLOCKED.path in w and "robots.txt" in w for w in report["warnings"])
    assert any(SLOW.path in w and "not fetched within 3 s" in w for w in report["warnings"])
    # the report cites loopback pages; confirmed quotes are verbatim from the fetched pages
    cited = {s["url"] for s in report["sources"]}
    assert web.url(COSTS.path) in cited
    assert report["findings"][0]["sources"] == [web.url(COSTS.path)]
    confirmed = [c for c in report["claims"] if c["outcome"] == "confirmed"]
    assert {c["claim"] for c in confirmed} >= {COSTS.paragraphs[0], WILDLIFE.paragraphs[0]}
    assert all(c["grounded"] is True for c in confirmed)
    # the injected page's invented quote is not in the page: set aside, never voted on
    assert [u["claim"] for u in report["ungrounded"]] == [
        "The Kessler Bay tidal array cost nothing."
    ]
    assert "cost nothing" not in report["summary"]
    # the page text reached the model fenced as data, and the verifiers got fetched text
    extract = next(r for r in requests if web.url(INJECTED_PAGE.path) in _text(r) and
                   "Source Extractor" in _text(r))  # fmt: skip
    body = _text(extract)
    assert body.index("untrusted data") < body.index("Ignore previous instructions")
    verify = [r for r in requests if "Adversarial Claim Verifier" in _text(r)]
    assert verify
    assert all("Fetched page text" in _text(r) for r in verify)
    assert any(COSTS.paragraphs[1] in _text(r) for r in verify)  # text beyond the quote
    # the model got no tools and web_search was not asked of a backend that lacks it
    assert not any("tools" in (r.body or {}) for r in requests if isinstance(r.body, dict))
    assert not any("web_search" in w for w in report["warnings"])
    # the injection changed nothing outside the report
    assert sorted(os.listdir(".")) == []
    assert (pwned.stat().st_mtime_ns if pwned.exists() else None) == before


def test_no_search_engine_refusal_says_how_to_configure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeModelServer() as server:
        _configure(tmp_path, monkeypatch, _llm_table(server))
        result = runner.invoke(app, ["research", DEFAULT_QUESTION])
        assert server.requests == []
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "\n" not in line
    assert "searxng_url" in line
    assert "--corpus" in line


@needs_web
def test_a_dead_search_engine_is_an_error_not_an_empty_success(
    web: LoopbackWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: an engine that failed on every query exited 0 with "No claims
    extracted", as if the web had nothing on the question."""
    with FakeModelServer() as server:
        _script(server, web)
        _configure(
            tmp_path,
            monkeypatch,
            _llm_table(server)
            + f'[web]\nsearxng_url = "{web.url("/searxng-garbage")}"\nallow_private = true\n',
        )
        result = runner.invoke(app, ["research", DEFAULT_QUESTION, "--json", "--quiet"])
    assert result.exit_code == 1, result.output
    said = result.stdout + result.stderr
    assert "the search engine failed on every query" in said
    assert "not JSON" in said
