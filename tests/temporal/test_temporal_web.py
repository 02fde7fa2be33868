"""Research on Temporal for a backend without web tools: agentport's own search and fetch run
as activities (`agentport.temporal._web`) on a real server (`temporal server start-dev`).

- `agentport research --batch FILE --out DIR --temporal HOST:PORT` on openai_compat (no web
  tools) with `[web]` naming the loopback SearxNG completes; the reports cite the loopback
  pages (it used to fail each question with "needs a backend with web tools");
- a worker SIGKILLed after every page was fetched, then replaced, does not fetch a finished
  page again (`LoopbackWeb.hits`): each fetch is an activity whose result is in the history;
- the local batch (no --temporal) takes such a backend too;
- the pieces without a server: the wire data round-trips, the proxy never enters the
  workflow input, a job without a search engine is one line naming `searxng_url`.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _temporal_server import WorkerProcess, temporal_server  # noqa: F401
from agentport.testing import (
    ALLOW_ENV,
    DEFAULT_PAGES,
    FakeModelServer,
    JsonReply,
    LoopbackWeb,
    RecordedRequest,
    WebPage,
)
from agentport.web import FetchedPage, FetchRefused, WebSettings

pytest.importorskip("temporalio")

from agentport.cli import app
from agentport.temporal._batch import BatchJob
from agentport.temporal._client import connect, follow, start_batch
from agentport.temporal._web import FetchOutput, activity_web, web_input
from agentport.temporal._worker import plan_worker
from agentport.workflows.batch import question_id, read_questions

OVERVIEW, COSTS, WILDLIFE = DEFAULT_PAGES
Q_COST = "What did the Kessler Bay tidal array cost to build?"
Q_WILD = "How has the Kessler Bay tidal array affected local wildlife and output?"
# each question's sources: no page is shared, so every page is fetched exactly once
PICKS: dict[str, tuple[WebPage, ...]] = {Q_COST: (COSTS,), Q_WILD: (WILDLIFE, OVERVIEW)}
API_KEY = "sk-fake-0123456789"
HEARTBEAT_S = 3.0  # a killed worker's calls move on after this much silence
GUARD_S = 120  # a hang of the suite, not a timing assertion


def _answer(text: str, site: LoopbackWeb) -> dict[str, Any]:
    """The scripted model: 3 angles, the question's own pages, one verbatim claim per page."""
    if text.startswith("Decompose this research question"):
        question = text.split("## Question\n", 1)[1].split("\n\n", 1)[0].strip()
        topic = "cost" if question == Q_COST else "porpoise"
        angles = [
            {"label": f"{topic}-{i}", "query": f"Kessler Bay tidal array {topic}", "rationale": "r"}
            for i in range(3)
        ]
        return {"question": question, "summary": "s", "angles": angles}
    question = re.search(r'Research question: "([^"]*)"', text)
    pages = PICKS.get(question.group(1) if question else "", ())
    if "## Web Searcher: " in text:
        listed = set(re.findall(r"url: (\S+)", text))
        return {
            "results": [
                {"url": site.url(p.path), "title": p.title, "relevance": "high"}
                for p in pages
                if site.url(p.path) in listed
            ]
        }
    if text.startswith("## Source Extractor"):
        url = text.split("**URL:** ", 1)[1].split("\n", 1)[0].strip()
        page = next(p for p in DEFAULT_PAGES if site.url(p.path) == url)
        claim = page.paragraphs[0]
        return {
            "sourceQuality": "primary",
            "claims": [{"claim": claim, "quote": claim, "importance": "central"}],
        }
    if text.startswith("## Synthesis"):
        url = site.url(pages[0].path) if pages else ""
        return {
            "summary": "From the fetched pages.",
            "findings": [
                {"claim": "c", "confidence": "high", "sources": [url], "evidence": "quoted"}
            ],
            "caveats": "one site",
            "openQuestions": [],
        }
    return {"refuted": False, "evidence": "the fetched text says so", "confidence": "high"}


def _serve(server: FakeModelServer, site: LoopbackWeb, latency_s: float) -> None:
    def reply(request: RecordedRequest) -> JsonReply:
        return JsonReply(_answer(request.user_text, site), delay=latency_s)

    server.default = reply


def _config(tmp: Path, server: FakeModelServer, site: LoopbackWeb) -> Path:
    """One config for the client and the workers: the model, and `[web]` (the client's)."""
    path = tmp / "config.toml"
    path.write_text(
        '[llm]\nbackend = "openai_compat"\n'
        f'[llm.openai_compat]\nbase_url = "{server.openai_base_url}"\napi_key = "{API_KEY}"\n'
        f'[web]\nsearxng_url = "{site.url("/searxng")}"\n'
        "allow_private = true\nper_host_delay_s = 0\ntimeout_s = 5\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def site() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as web:
        yield web


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    workers: list[WorkerProcess] = []
    try:
        yield workers
    finally:
        for w in workers:
            w.stop()


def _questions(tmp: Path) -> Path:
    qfile = tmp / "q.txt"
    qfile.write_text(f"{Q_COST}\n{Q_WILD}\n", encoding="utf-8")
    return qfile


def _cites_its_pages(out: Path, site: LoopbackWeb) -> None:
    for question, pages in PICKS.items():
        report = (out / f"{question_id(question)}.md").read_text(encoding="utf-8")
        for page in pages:
            assert site.url(page.path) in report
            assert page.paragraphs[0] in report  # the verbatim claim, confirmed


@pytest.mark.slow
def test_research_batch_on_temporal_uses_agentports_own_web_tools(
    temporal_server: str,  # noqa: F811
    site: LoopbackWeb,
    started: list[WorkerProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "reports"
    with FakeModelServer() as server:
        _serve(server, site, 0.0)
        config = _config(tmp_path, server, site)
        started.append(WorkerProcess(temporal_server, tmp_path, config))
        assert any("agentport.web: web search and page fetches" in x for x in started[0].lines)
        monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        monkeypatch.setenv(ALLOW_ENV, "1")
        result = CliRunner().invoke(
            app,
            ["research", "--batch", str(_questions(tmp_path)), "--out", str(out),
             "--temporal", temporal_server, "--batch-id", "test-web-cli", "--quiet"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "completed: 2 done, 0 failed" in result.stderr
    _cites_its_pages(out, site)
    assert all(site.hits[p.path] == 1 for pages in PICKS.values() for p in pages)
    assert site.hits["/searxng/search"] == 6  # 3 angles per question, one query each


@pytest.mark.slow
def test_a_killed_worker_does_not_refetch_finished_pages(
    temporal_server: str,  # noqa: F811
    site: LoopbackWeb,
    started: list[WorkerProcess],
    tmp_path: Path,
) -> None:
    parsed = read_questions(_questions(tmp_path))
    out = tmp_path / "reports"
    urls = [site.url(p.path) for pages in PICKS.values() for p in pages]
    with FakeModelServer() as server:
        _serve(server, site, 0.3)  # calls in flight when the worker dies
        config = _config(tmp_path, server, site)
        started.append(WorkerProcess(temporal_server, tmp_path, config))
        settings = WebSettings(searxng_url=site.url("/searxng"), allow_private=True,
                               per_host_delay_s=0, timeout_s=5)  # fmt: skip
        job = BatchJob(
            kind="research",
            items=[[q.id, q.line, q.text] for q in parsed.questions],
            backend="openai_compat",
            out=str(out),
            jobs=2,
            config={"CONCURRENCY": 4},
            heartbeat_s=HEARTBEAT_S,
            web=web_input(settings),
        )
        killed: list[bool] = []
        stop = threading.Event()

        def extracted(url: str) -> bool:
            return any(
                r.user_text.startswith("## Source Extractor") and url in r.user_text
                for r in list(server.requests)
            )

        def kill_after_the_fetches() -> None:
            # an extract call is scheduled only once its page's fetch is in the history
            while not stop.wait(0.05):
                if all(extracted(u) for u in urls):
                    started[0].kill()
                    killed.append(True)
                    started.append(WorkerProcess(temporal_server, tmp_path, config))
                    return

        watcher = threading.Thread(target=kill_after_the_fetches, daemon=True)
        watcher.start()

        async def run() -> Any:
            client = await connect(temporal_server)
            await start_batch(client, job, "test-web-kill")
            return await asyncio.wait_for(follow(client, "test-web-kill", poll_s=0.3), GUARD_S)

        try:
            final = asyncio.run(run())
        finally:
            stop.set()
            watcher.join(70)
    assert killed, "the batch ended before the worker could be killed"
    assert final.state == "completed"
    assert final.progress is not None
    assert (final.progress.done, final.progress.failed) == (2, 0)
    _cites_its_pages(out, site)
    # every page was fetched once, by the killed worker; the new one replayed the history
    assert {p.path: site.hits[p.path] for ps in PICKS.values() for p in ps} == {
        p.path: 1 for ps in PICKS.values() for p in ps
    }


def test_the_local_batch_runs_on_agentports_own_web_tools_too(
    site: LoopbackWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same batch without --temporal: it used to be refused up front (the batch checked
    the catalog only, not a configured search engine)."""
    out = tmp_path / "reports"
    with FakeModelServer() as server:
        _serve(server, site, 0.0)
        monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(_config(tmp_path, server, site)))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        monkeypatch.setenv(ALLOW_ENV, "1")
        result = CliRunner().invoke(
            app, ["research", "--batch", str(_questions(tmp_path)), "--out", str(out), "-q"]
        )
    assert result.exit_code == 0, result.output
    _cites_its_pages(out, site)


def test_workflow_workers_serve_the_web_queue_unless_told_not_to() -> None:
    assert plan_worker(["openai_compat"]).web_queue == "agentport.web"
    assert plan_worker(["openai_compat"], prefix="team").web_queue == "team.web"
    assert plan_worker(["openai_compat"], web=False).web_queue is None
    assert plan_worker(["openai_compat"], workflows=False).web_queue is None
    web_only = plan_worker([], workflows=False, web=True)
    assert (web_only.queues, web_only.workflow_queue) == ({}, None)
    assert web_only.web_queue == "agentport.web"
    assert any(line.startswith("queue agentport.web:") for line in web_only.describe())


def test_fetch_output_round_trips_and_caps_the_page_text() -> None:
    page = FetchedPage("http://a/x", "http://a/y", "T", "abcdef", "text/html", "utf-8", ("z",))
    out = FetchOutput.of(page, 4)
    assert out.refused is None
    assert out.result("http://a/x") == FetchedPage(
        "http://a/x", "http://a/y", "T", "abcd", "text/html", "utf-8", ("z",)
    )
    refused = FetchRefused("http://a/p", "robots", "robots.txt disallows http://a/p")
    assert FetchOutput.of(refused, 4).result("http://a/p") == refused


def test_the_proxy_never_enters_the_workflow_input() -> None:
    settings = WebSettings(searxng_url="http://s:8", proxy="http://user:secret@proxy:3128")
    sent = web_input(settings)
    assert "proxy" not in sent
    assert "secret" not in repr(sent)
    assert WebSettings.model_validate(sent).searxng_url == "http://s:8"


def test_a_job_without_a_search_engine_is_one_line_naming_searxng_url() -> None:
    refusal = "backend 'openai_compat' cannot search the web (catalog: web_search IGNORED)"
    line = activity_web({}, refusal, "agentport", "wf")
    assert isinstance(line, str)
    assert "\n" not in line
    assert "searxng_url" in line
    bad = activity_web({"max_results": 0}, refusal, "agentport", "wf")
    assert isinstance(bad, str)
    assert bad.startswith("[web] settings in the workflow input are invalid")
