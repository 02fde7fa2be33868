"""Contract: the seed's acceptance smoke run, offline. `agentport research "<question>"
--backend codex --json` (web mode, no --corpus) drives the REAL codex CLI against
FakeModelServer (the provider, whose server-side Responses `web_search` tool searches and
opens pages of a LoopbackWeb on 127.0.0.1).

Checks: the report cites loopback pages and quotes them verbatim; the seed's formula
`agentCalls == 1 + angles + sources + voted*3 + 1` holds and matches the calls made; codex's
own events show web search ran (report stats `webSearches` / `webFetches`, from codex's
`web_search` items) and the pages were really fetched (`LoopbackWeb.hits`); web tools are
offered only to the search / extract / verify agents, never to scope or synthesis, and no
agent is offered a shell or file tool; the injected page (whose "model" obeys it and calls
the shell) changes nothing outside the report. Runs through scripts/test.sh (`unshare -n`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _more_clis_util import cli_bin_dir, network_isolated
from agentport.testing import (
    DEFAULT_QUESTION,
    FakeModelServer,
    JsonReply,
    LoopbackWeb,
    RecordedRequest,
    ReplyLike,
    ToolCallReply,
    WebCall,
    WebSearchReply,
)

pytestmark = [pytest.mark.contract]

ANGLES = [
    ("costs", "Kessler Bay tidal array construction cost"),
    ("output", "Kessler Bay tidal array megawatts homes"),
    ("wildlife", "Kessler Bay tidal array porpoise seal wildlife"),
]
SHELL_TOOLS = {"exec_command", "write_stdin", "shell", "apply_patch", "local_shell"}
_URL = re.compile(r"http://127\.0\.0\.1:\d+/[^\s\"`)*]+")


BIN_DIR = cli_bin_dir()  # read at import: the autouse fixtures clear AGENTPORT_*


def _phase(req: RecordedRequest) -> str:
    text = req.user_text
    for marker, phase in (
        ("Decompose this research question", "scope"),
        ("## Web Searcher:", "search"),
        ("## Source Extractor", "extract"),
        ("## Adversarial Claim Verifier", "verify"),
        ("## Synthesis", "synthesis"),
    ):
        if marker in text:
            return phase
    return "other"


def _sentences(call: WebCall) -> list[str]:
    # the page text as the provider read it: title line first, then one paragraph a line
    return [line for line in call.text.splitlines()[1:] if line.strip()]


class Provider:
    """The scripted model behind the fake provider: answers each research phase, running
    the server-side web tool where the seed's agent would."""

    def __init__(self, web: LoopbackWeb, marker: Path) -> None:
        self.web = web
        self.marker = marker

    def __call__(self, req: RecordedRequest) -> ReplyLike:
        phase = _phase(req)
        text = req.user_text
        if phase == "scope":
            return {
                "question": DEFAULT_QUESTION,
                "summary": "cost, output and wildlife",
                "angles": [{"label": k, "query": q, "rationale": k} for k, q in ANGLES],
            }
        if phase == "search":
            query = re.search(r"Search query: `([^`]*)`", text)
            assert query is not None
            return WebSearchReply(self.web, self._results, searches=[query.group(1)], limit=3)
        if phase == "extract":
            url = re.search(r"\*\*URL:\*\* (\S+)", text)
            assert url is not None
            if req.has_tool_result:  # after the refused shell call: the honest extraction
                return WebSearchReply(self.web, self._extract, open_urls=[url.group(1)])
            if url.group(1).endswith("/injected"):
                # the page tells agents to run a command: this "model" obeys it
                cmd = {"cmd": f"touch {self.marker}"}
                return WebSearchReply(
                    self.web, ToolCallReply("exec_command", cmd), open_urls=[url.group(1)]
                )
            return WebSearchReply(self.web, self._extract, open_urls=[url.group(1)])
        if phase == "verify":
            claim = re.search(r'## Claim under review\n"([^"]*)"', text)
            assert claim is not None
            refuted = "inspect" in claim.group(1)  # the injected page's claim is voted down
            return WebSearchReply(
                self.web,
                JsonReply(
                    {
                        "refuted": refuted,
                        "evidence": "the loopback article states it",
                        "confidence": "high",
                        "counterSource": None,
                    }
                ),
                searches=[claim.group(1)[:60]],
                limit=2,
            )
        if phase == "synthesis":
            urls = sorted({u for u in _URL.findall(text) if "/articles/" in u})
            pages = [self.web.page(u.removeprefix(self.web.base_url)) for u in urls]
            return {
                "summary": "The Kessler Bay tidal array cost 640 million euros and generates "
                "118 megawatts; porpoise sightings fell.",
                "findings": [
                    {
                        "claim": page.paragraphs[0] if page else url,
                        "confidence": "high",
                        "sources": [url],
                        "evidence": "the loopback article states it",
                    }
                    for url, page in zip(urls, pages, strict=True)
                ],
                "caveats": "a test fixture",
                "openQuestions": [],
            }
        return "ok"

    @staticmethod
    def _results(calls: tuple[WebCall, ...]) -> ReplyLike:
        hits = [h for c in calls for h in c.hits]
        return JsonReply(
            {
                "results": [
                    {"url": h.url, "title": h.title, "snippet": h.snippet, "relevance": "high"}
                    for h in hits
                ]
            }
        )

    @staticmethod
    def _extract(calls: tuple[WebCall, ...]) -> ReplyLike:
        lines = [s for c in calls for s in _sentences(c) if "IMPORTANT" not in s]
        first = lines[0] if lines else ""
        return JsonReply(
            {
                "sourceQuality": "secondary",
                "publishDate": None,
                "claims": [{"claim": first, "quote": first, "importance": "central"}]
                if first
                else [],
            }
        )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    if BIN_DIR is None or not (BIN_DIR / "codex").exists():
        pytest.skip("codex not installed: run .ci/steps/20-agent-clis (see docs/runner.md)")
    if not network_isolated():
        pytest.skip("network not isolated: run through scripts/test.sh (unshare -n)")
    tmp = tmp_path_factory.mktemp("web-codex")
    home, proj = tmp / "home", tmp / "project"
    (home / ".codex").mkdir(parents=True)
    proj.mkdir()
    marker = tmp / "PWNED.txt"
    with LoopbackWeb() as web, FakeModelServer() as server:
        server.set_default(Provider(web, marker))
        (proj / "agentport.toml").write_text(
            '[llm]\nbackend = "codex"\nmodel = "fake-model"\nretry_attempts = 1\n'
            "idle_timeout_s = 60\ntotal_timeout_s = 180\n\n[llm.codex]\n"
            f"executable = {json.dumps(str(BIN_DIR / 'codex'))}\n"
            f'base_url = "{server.openai_base_url}"\napi_key = "test-key"\n'
            "request_max_retries = 0\nstream_max_retries = 0\n"
        )
        before = sorted(p.name for p in proj.iterdir())
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
            "AGENTPORT_TRUSTED_PROJECTS": str(proj),
        }
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentport",
                "research",
                DEFAULT_QUESTION,
                "--backend",
                "codex",
                "--json",
                "--quiet",
            ],
            cwd=proj,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        yield {
            "proc": proc,
            "report": json.loads(proc.stdout) if proc.stdout.strip() else {},
            "web": web,
            "requests": server.model_requests,
            "errors": server.errors,
            "proj": proj,
            "before": before,
            "marker": marker,
        }


def test_report_cites_loopback_pages_with_verbatim_quotes(run: dict[str, Any]) -> None:
    proc, report, web = run["proc"], run["report"], run["web"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report["error"] is None
    assert run["errors"] == []
    cited = {u for f in report["findings"] for u in f["sources"]}
    assert cited
    assert all(u.startswith(web.base_url + "/articles/") for u in cited)
    assert report["stats"]["synthesis"] == "model"
    confirmed = [c for c in report["claims"] if c["outcome"] == "confirmed"]
    assert {c["source"] for c in confirmed} == cited
    for c in report["claims"]:
        page = web.page(c["source"].removeprefix(web.base_url))
        assert page is not None, c["source"]
        assert c["quote"] in page.paragraphs  # verbatim, from the page the claim cites


def _found(web: LoopbackWeb) -> set[str]:
    """The distinct pages the three angle searches find (what the sources must be)."""
    return {h.url for _, q in ANGLES for h in web.search(q, 3)}


def test_seed_call_formula_holds(run: dict[str, Any]) -> None:
    s, found = run["report"]["stats"], _found(run["web"])
    assert run["web"].url("/injected") in found, "the searches must reach the injected page"
    assert {x["url"] for x in run["report"]["sources"]} == found
    assert s["angles"] == 3
    assert s["sourcesFetched"] == len(found)
    assert s["claimsVerified"] == len(found)  # one claim per page
    assert s["agentCalls"] == 1 + s["angles"] + s["sourcesFetched"] + s["claimsVerified"] * 3 + 1
    assert s["agentCallsMade"] == s["agentCalls"]
    assert s["agentCallsFailed"] == 0


def test_codex_events_show_web_search_ran(run: dict[str, Any]) -> None:
    s, web = run["report"]["stats"], run["web"]
    found = _found(web)
    # from codex's own `web_search` items: one search per angle and per vote (3 a claim,
    # one claim a page); one page open per source, the injected page twice (before and
    # after the refused shell call)
    assert s["webSearches"] == len(ANGLES) + 3 * len(found)
    assert s["webFetches"] == len(found) + 1
    assert not [w for w in run["report"]["warnings"] if "web search or page fetch" in w]
    for url in found:  # the provider really fetched every source over loopback
        assert web.hits[url.removeprefix(web.base_url)] == (2 if url.endswith("/injected") else 1)


def test_web_tools_only_in_search_fetch_verify_and_no_shell(run: dict[str, Any]) -> None:
    by_phase: dict[str, list[RecordedRequest]] = {}
    for req in run["requests"]:
        by_phase.setdefault(_phase(req), []).append(req)
    assert set(by_phase) == {"scope", "search", "extract", "verify", "synthesis"}
    for phase, reqs in by_phase.items():
        for req in reqs:
            tools = req.body.get("tools") or []
            web = [t for t in tools if t.get("type") == "web_search"]
            if phase in ("search", "extract", "verify"):
                assert web == [{"type": "web_search", "external_web_access": True}], phase
            else:
                assert web == [], phase
            assert not SHELL_TOOLS & set(req.tool_names), (phase, req.tool_names)


def test_injected_page_changes_nothing_outside_the_report(run: dict[str, Any]) -> None:
    proj, marker = run["proj"], run["marker"]
    assert not marker.exists()
    assert sorted(p.name for p in proj.iterdir()) == run["before"]
    refused = [r for r in run["requests"] if r.has_tool_result]
    assert len(refused) == 1
    assert "unsupported call" in refused[0].tool_results[0]
    report = run["report"]
    assert all("cost nothing" not in f["claim"] for f in report["findings"])
    injected = [c for c in report["claims"] if c["source"].endswith("/injected")]
    assert [c["outcome"] for c in injected] == ["refuted"]
