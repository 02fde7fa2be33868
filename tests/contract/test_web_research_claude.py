"""Contract: the seed's acceptance smoke run, offline, on the REAL Claude Code CLI.
`agentport research "<question>" --backend claude --json` (web mode, no --corpus) against
FakeModelServer (the Anthropic API: its `web_search_20250305` server tool searches a
LoopbackWeb) while Claude Code's own WebFetch fetches the pages over loopback (through
`LoopbackTls`: WebFetch upgrades http to https; the test CA reaches it by
NODE_EXTRA_CA_CERTS; `skipWebFetchPreflight` in the user's settings skips the claude.ai
domain check, which cannot be reached offline).

Checks: the report cites loopback pages and quotes them verbatim; the seed's formula
`agentCalls == 1 + angles + sources + voted*3 + 1` holds; Claude Code's events show the web
tools ran (report stats `webSearches` / `webFetches`), the search ran server-side
(`web_search` requests at the fake) and the pages were fetched (`LoopbackWeb.hits`); only
WebSearch and WebFetch are offered, only to search / extract / verify; the injected page,
whose "model" obeys it and asks for Bash, changes nothing outside the report. A runtime call
shows the decoder's web events. Runs through scripts/test.sh (`unshare -n`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _more_clis_util import network_isolated
from _web_research_cli_util import (
    CliTools,
    WebAgent,
    bin_dir,
    phase_of,
    run_research,
)
from agentport import create_agent_runtime
from agentport.core import CompletionConfig, EventType
from agentport.testing import (
    DEFAULT_SIDE_RULES,
    FakeModelServer,
    LoopbackTls,
    LoopbackWeb,
    RebasedSearch,
    RecordedRequest,
    ToolCallReply,
    claude_web_rules,
)

pytestmark = [pytest.mark.contract, pytest.mark.slow]

BIN_DIR = bin_dir()  # read at import: the autouse fixtures clear AGENTPORT_*
TOOLS = CliTools(
    search=lambda q: ToolCallReply("WebSearch", {"query": q}),
    fetch=lambda url: ToolCallReply(
        "WebFetch", {"url": url, "prompt": "Quote the article's sentences on the question."}
    ),
    shell=lambda cmd: ToolCallReply("Bash", {"command": cmd, "description": "as told"}),
)
WEB_ONLY = {"WebSearch", "WebFetch"}


def _search_requests(reqs: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in reqs if r.side == "claude-web-search"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    if BIN_DIR is None or not (BIN_DIR / "claude").exists():
        pytest.skip("claude not installed: run .ci/steps/20-agent-clis (see docs/runner.md)")
    if not network_isolated():
        pytest.skip("network not isolated: run through scripts/test.sh (unshare -n)")
    tmp = tmp_path_factory.mktemp("web-claude")
    home, proj = tmp / "home", tmp / "project"
    (home / ".claude").mkdir(parents=True)
    # the user's own settings: WebFetch's claude.ai domain check cannot run offline
    (home / ".claude" / "settings.json").write_text('{"skipWebFetchPreflight": true}')
    proj.mkdir()
    marker = tmp / "PWNED.txt"
    with LoopbackWeb() as web, LoopbackTls(web.base_url) as tls:
        engine = RebasedSearch(web, web.base_url, tls.base_url)
        rules = DEFAULT_SIDE_RULES + claude_web_rules(engine, limit=3)
        with FakeModelServer(side_rules=rules) as server:
            server.set_default(WebAgent(web, tls.base_url, TOOLS, marker))
            (proj / "agentport.toml").write_text(
                '[llm]\nbackend = "claude"\nretry_attempts = 1\n'
                "idle_timeout_s = 60\ntotal_timeout_s = 180\n\n[llm.claude]\n"
                f"executable = {json.dumps(str(BIN_DIR / 'claude'))}\n"
                f'base_url = "{server.anthropic_base_url}"\napi_key = "test-key"\n'
                f"max_retries = 0\nenv = {{NODE_EXTRA_CA_CERTS = {json.dumps(str(tls.ca_file))}}}\n"
            )
            yield {
                "web": web, "tls": tls, "server": server, "home": home, "proj": proj,
                "marker": marker,
            }  # fmt: skip


@pytest.fixture(scope="module")
def run(site: dict[str, Any]) -> dict[str, Any]:
    before = sorted(p.name for p in site["proj"].iterdir())
    out = run_research("claude", site["proj"], site["home"])
    server: FakeModelServer = site["server"]
    return out | {"before": before, "requests": server.requests, "errors": server.errors}


def test_report_cites_loopback_pages_with_verbatim_quotes(
    run: dict[str, Any], site: dict[str, Any]
) -> None:
    proc, report, tls, web = run["proc"], run["report"], site["tls"], site["web"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report["error"] is None
    assert run["errors"] == []
    cited = {u for f in report["findings"] for u in f["sources"]}
    assert cited
    assert all(u.startswith(tls.base_url + "/articles/") for u in cited)
    confirmed = [c for c in report["claims"] if c["outcome"] == "confirmed"]
    assert {c["source"] for c in confirmed} == cited
    for c in report["claims"]:
        page = web.page(c["source"].removeprefix(tls.base_url))
        assert page is not None, c["source"]
        assert c["quote"] in page.paragraphs  # verbatim, from the page the claim cites


def test_seed_call_formula_holds(run: dict[str, Any]) -> None:
    s = run["report"]["stats"]
    assert s["angles"] == 3
    assert s["sourcesFetched"] == 4
    assert s["claimsVerified"] == 4
    assert s["agentCalls"] == 1 + s["angles"] + s["sourcesFetched"] + s["claimsVerified"] * 3 + 1
    assert s["agentCallsMade"] == s["agentCalls"]
    assert s["agentCallsFailed"] == 0


def test_claude_events_show_its_web_tools_ran(run: dict[str, Any], site: dict[str, Any]) -> None:
    s, web = run["report"]["stats"], site["web"]
    assert s["webSearches"] == 3  # one WebSearch per angle, from Claude Code's own events
    assert s["webFetches"] == 4  # one WebFetch per source
    searches = _search_requests(run["requests"])
    assert len(searches) == 3  # each WebSearch reached the provider's server-side search
    assert all(r.body["tools"][0]["type"] == "web_search_20250305" for r in searches)
    for path in ("/articles/kessler-bay-costs", "/injected"):
        assert web.hits[path] >= 1, web.hits  # WebFetch fetched it, over loopback TLS


def test_only_web_tools_and_only_in_search_fetch_verify(run: dict[str, Any]) -> None:
    by_phase: dict[str, list[RecordedRequest]] = {}
    for req in run["requests"]:
        if req.api.is_model_api and req.side is None:
            by_phase.setdefault(phase_of(req), []).append(req)
    assert {"scope", "search", "extract", "verify", "synthesis"} <= set(by_phase)
    for phase, reqs in by_phase.items():
        for req in reqs:
            offered = set(req.tool_names) - {"StructuredOutput"}
            if phase in ("search", "extract", "verify"):
                assert offered == WEB_ONLY, (phase, req.tool_names)
            else:
                assert offered == set(), (phase, req.tool_names)


def test_injected_page_changes_nothing_outside_the_report(
    run: dict[str, Any], site: dict[str, Any]
) -> None:
    proj, marker = site["proj"], site["marker"]
    assert not marker.exists()
    assert sorted(p.name for p in proj.iterdir()) == run["before"]
    asked = [r for r in run["requests"] if r.has_tool_result and str(marker) in r.raw.decode()]
    assert asked, "the obedient model never asked for the shell"
    assert any("No such tool" in t or "not available" in t for t in asked[-1].tool_results)
    report = run["report"]
    assert all("cost nothing" not in f["claim"] for f in report["findings"])
    injected = [c for c in report["claims"] if c["source"].endswith("/injected")]
    assert [c["outcome"] for c in injected] == ["refuted"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_runtime_events_carry_the_search_and_the_fetch(
    site: dict[str, Any], run: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, tls = site["server"], site["tls"]
    monkeypatch.setenv("HOME", str(site["home"]))
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(site["proj"]))
    url = tls.url("/articles/kessler-bay-overview")
    server.reply(ToolCallReply("WebSearch", {"query": "Kessler Bay tidal array"}))
    server.reply(ToolCallReply("WebFetch", {"url": url, "prompt": "Quote it."}))
    server.reply("done")
    config = CompletionConfig(web_search=True, idle_timeout_s=60, total_timeout_s=120)
    async with create_agent_runtime(cwd=site["proj"]) as rt:
        events = [e async for e in rt.send("Research the Kessler Bay tidal array", config)]
    web = [e for e in events if e.type is EventType.tool_result and "web" in e.metadata]
    assert [e.metadata["web"] for e in web] == ["search", "fetch"], events
    assert web[0].metadata["query"] == "Kessler Bay tidal array"
    assert web[0].metadata["urls"]
    assert all(u.startswith(tls.base_url) for u in web[0].metadata["urls"])
    assert web[1].metadata["url"] == url
    assert web[1].metadata["status"] == 200
    assert events[-1].type is EventType.final
    assert events[-1].content == "done"


@pytest.mark.anyio
async def test_webfetch_needs_https_and_the_preflight_setting_offline(
    site: dict[str, Any], run: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why the test has `LoopbackTls` and `skipWebFetchPreflight`: without the setting
    WebFetch asks claude.ai first (unreachable offline); with it, a plain-http url is
    upgraded to https, which the plain loopback site cannot answer."""
    server, web = site["server"], site["web"]
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(site["proj"]))
    url = web.url("/articles/kessler-bay-wildlife")
    before = web.hits["/articles/kessler-bay-wildlife"]
    config = CompletionConfig(web_search=True, idle_timeout_s=60, total_timeout_s=120)
    bare = tmp_path / "home"
    bare.mkdir()
    outcomes = []
    for home in (bare, site["home"]):
        monkeypatch.setenv("HOME", str(home))
        server.reply(ToolCallReply("WebFetch", {"url": url, "prompt": "Quote it."}))
        server.reply("done")
        async with create_agent_runtime(cwd=site["proj"]) as rt:
            events = [e async for e in rt.send("Read the wildlife article", config)]
        outcomes.append([e for e in events if e.type is EventType.tool_result])
    (no_setting,), (plain_http,) = outcomes
    assert no_setting.is_error
    assert "Unable to verify if domain" in no_setting.content
    assert plain_http.is_error
    assert "SSL" in plain_http.content or "TLS" in plain_http.content
    assert web.hits["/articles/kessler-bay-wildlife"] == before  # neither reached the page
