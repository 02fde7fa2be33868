"""Contract: the seed's acceptance smoke run, offline, on the REAL Gemini CLI.
`agentport research "<question>" --backend gemini --json` (web mode, no --corpus) against
FakeModelServer playing the Gemini API: google_web_search's grounded request (`googleSearch`
tool) is answered from a LoopbackWeb search with `groundingMetadata` sources, and web_fetch's
url-context request (`urlContext` tool: the provider reads the page) by fetching the page
from the LoopbackWeb over loopback. gemini-cli 0.61 refuses private and loopback hosts in
web_fetch before any request (`isBlockedHost`), so the site is shown to the CLI under a
public-looking alias address that is never contacted (the fake maps it back to 127.0.0.1).

Checks: the report cites the site's pages and quotes them verbatim; the seed's formula
`agentCalls == 1 + angles + sources + voted*3 + 1` holds; Gemini CLI's events show its web
tools ran (report stats `webSearches` / `webFetches`), the grounded searches and url-context
reads reached the provider and the pages were fetched (`LoopbackWeb.hits`); only
google_web_search and web_fetch are offered, only to search / extract / verify; the
injected page, whose "model" obeys it and asks for the shell, changes nothing outside the
report. A runtime call shows the decoder's web events. Runs through scripts/test.sh
(`unshare -n`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
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
    LoopbackWeb,
    RebasedSearch,
    RecordedRequest,
    ToolCallReply,
    gemini_web_rules,
)

pytestmark = [pytest.mark.contract, pytest.mark.slow]

BIN_DIR = bin_dir()  # read at import: the autouse fixtures clear AGENTPORT_*
TOOLS = CliTools(
    search=lambda q: ToolCallReply("google_web_search", {"query": q}),
    fetch=lambda url: ToolCallReply(
        "web_fetch", {"prompt": f"Quote the sentences of {url} that answer the question."}
    ),
    shell=lambda cmd: ToolCallReply("run_shell_command", {"command": cmd}),
)
WEB_ONLY = {"google_web_search", "web_fetch"}
# a public unicast address (web_fetch refuses private ones); never contacted: the fake
# provider reads the pages, and the test runs with loopback only
ALIAS = "http://93.184.215.14"


def _side(reqs: list[RecordedRequest], name: str) -> list[RecordedRequest]:
    return [r for r in reqs if r.side == name]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    if BIN_DIR is None or not (BIN_DIR / "gemini").exists():
        pytest.skip("gemini not installed: run .ci/steps/20-agent-clis (see docs/runner.md)")
    if not network_isolated():
        pytest.skip("network not isolated: run through scripts/test.sh (unshare -n)")
    tmp = tmp_path_factory.mktemp("web-gemini")
    home, proj = tmp / "home", tmp / "project"
    (home / ".gemini").mkdir(parents=True)
    # gemini reads auth type and retries only from settings.json (cli-contracts.md §3)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"maxAttempts": 1, "disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
    }))  # fmt: skip
    proj.mkdir()
    marker = tmp / "PWNED.txt"
    with LoopbackWeb() as web:
        engine = RebasedSearch(web, web.base_url, ALIAS)
        rules = DEFAULT_SIDE_RULES + gemini_web_rules(engine, to_loopback=engine.unbase, limit=3)
        with FakeModelServer(side_rules=rules) as server:
            server.set_default(WebAgent(web, ALIAS, TOOLS, marker))
            (proj / "agentport.toml").write_text(
                '[llm]\nbackend = "gemini"\nmodel = "gemini-2.5-flash"\nretry_attempts = 1\n'
                "idle_timeout_s = 60\ntotal_timeout_s = 180\n\n[llm.gemini]\n"
                f"executable = {json.dumps(str(BIN_DIR / 'gemini'))}\n"
                f'base_url = "{server.gemini_base_url}"\napi_key = "test-key"\n'
            )
            yield {"web": web, "server": server, "home": home, "proj": proj, "marker": marker}


@pytest.fixture(scope="module")
def run(site: dict[str, Any]) -> dict[str, Any]:
    before = sorted(p.name for p in site["proj"].iterdir())
    out = run_research("gemini", site["proj"], site["home"])
    server: FakeModelServer = site["server"]
    return out | {"before": before, "requests": server.requests, "errors": server.errors}


def test_report_cites_loopback_pages_with_verbatim_quotes(
    run: dict[str, Any], site: dict[str, Any]
) -> None:
    proc, report, web = run["proc"], run["report"], site["web"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report["error"] is None
    assert run["errors"] == []
    cited = {u for f in report["findings"] for u in f["sources"]}
    assert cited
    assert all(u.startswith(ALIAS + "/articles/") for u in cited)
    confirmed = [c for c in report["claims"] if c["outcome"] == "confirmed"]
    assert {c["source"] for c in confirmed} == cited
    for c in report["claims"]:
        page = web.page(c["source"].removeprefix(ALIAS))
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


def test_gemini_events_show_its_web_tools_ran(run: dict[str, Any], site: dict[str, Any]) -> None:
    s, web = run["report"]["stats"], site["web"]
    assert s["webSearches"] == 3  # one google_web_search per angle, from Gemini CLI's events
    assert s["webFetches"] == 4  # one web_fetch per source
    searches = _side(run["requests"], "gemini-google-search")
    assert len(searches) == 3  # each search was a grounded request to the provider
    assert all(r.body["tools"] == [{"googleSearch": {}}] for r in searches)
    reads = _side(run["requests"], "gemini-url-context")
    assert len(reads) == 4
    assert all(r.body["tools"] == [{"urlContext": {}}] for r in reads)
    for path in ("/articles/kessler-bay-costs", "/injected"):
        assert web.hits[path] >= 1, web.hits  # read by the provider, over loopback


def test_only_web_tools_and_only_in_search_fetch_verify(run: dict[str, Any]) -> None:
    by_phase: dict[str, list[RecordedRequest]] = {}
    for req in run["requests"]:
        if req.api.is_model_api and req.side is None:
            by_phase.setdefault(phase_of(req), []).append(req)
    assert {"scope", "search", "extract", "verify", "synthesis"} <= set(by_phase)
    for phase, reqs in by_phase.items():
        for req in reqs:
            offered = set(req.tool_names)
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
    assert any("denied" in t.lower() or "not found" in t.lower() for t in asked[-1].tool_results)
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
    server = site["server"]
    monkeypatch.setenv("HOME", str(site["home"]))
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(site["proj"]))
    url = ALIAS + "/articles/kessler-bay-overview"
    server.reply(ToolCallReply("google_web_search", {"query": "Kessler Bay tidal array"}))
    server.reply(ToolCallReply("web_fetch", {"prompt": f"Quote {url}"}))
    server.reply("done")
    config = CompletionConfig(web_search=True, idle_timeout_s=60, total_timeout_s=120)
    async with create_agent_runtime(cwd=site["proj"]) as rt:
        events = [e async for e in rt.send("Research the Kessler Bay tidal array", config)]
    web = [e for e in events if e.type is EventType.tool_call and "web" in e.metadata]
    assert [e.metadata["web"] for e in web] == ["search", "fetch"], events
    assert web[0].metadata["query"] == "Kessler Bay tidal array"
    assert web[1].metadata["url"] == url
    results = [e for e in events if e.type is EventType.tool_result]
    assert [e.is_error for e in results] == [False, False], results
    assert events[-1].type is EventType.final
    assert events[-1].content == "done"


@pytest.mark.anyio
async def test_web_fetch_refuses_a_loopback_url_before_any_request(
    site: dict[str, Any], run: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why the site needs an alias: gemini-cli 0.61 blocks loopback hosts in web_fetch."""
    server, web = site["server"], site["web"]
    monkeypatch.setenv("HOME", str(site["home"]))
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(site["proj"]))
    url = web.url("/articles/kessler-bay-wildlife")
    before, seen = web.hits["/articles/kessler-bay-wildlife"], len(server.requests)
    server.reply(ToolCallReply("web_fetch", {"prompt": f"Quote {url}"}))
    server.reply("done")
    config = CompletionConfig(web_search=True, idle_timeout_s=60, total_timeout_s=120)
    async with create_agent_runtime(cwd=site["proj"]) as rt:
        events = [e async for e in rt.send("Read the wildlife article", config)]
    results = [e for e in events if e.type is EventType.tool_result]
    assert len(results) == 1
    assert results[0].is_error
    assert "Blocked Host" in results[0].content
    assert web.hits["/articles/kessler-bay-wildlife"] == before
    assert not _side(server.requests[seen:], "gemini-url-context")  # no provider read either
