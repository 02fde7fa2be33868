"""`agentport mcp` catches up with web research and budgets, driven as an MCP client drives it
(the SDK's client over stdio and in process):

- `research_start` without a corpus researches the web: on `openai_compat` (no web tools)
  through agentport's own search and fetch when `[web]` names an engine (FakeModelServer +
  LoopbackWeb's `/searxng/search`), with the agent's own web tools where the catalog says
  NATIVE, and otherwise the CLI's one-line refusal before anything runs;
- `budget` (the `--budget` spec) on `research_start` and `refine`, over the `[budget]` table
  (`none` drops it): a run that reaches a ceiling ends `partial` with "budget reached" in the
  tool result; a bad spec is a one-line `invalid_request` naming `budget` and the key.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _helpers import TESTS

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult, TextContent
from typer.testing import CliRunner

from _deeprefine_util import write_tiny
from _mcp_util import write_corpus
from agentport.core import ErrorKind
from agentport.testing import (
    ALLOW_ENV,
    DEFAULT_PAGES,
    DEFAULT_QUESTION,
    Call,
    FakeModelServer,
    JsonReply,
    LoopbackWeb,
    ScriptedAdapter,
)

HERE = TESTS
KINDS = {k.value for k in ErrorKind}
PAGES = DEFAULT_PAGES[:3]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's transports; the workflows' trio coverage lives elsewhere


@pytest.fixture(scope="module")
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as site:
        yield site


def _text(result: CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


def _error(result: CallToolResult) -> str:
    """The one-line tool error `<ErrorKind>: <message>`."""
    assert result.is_error, result
    text = _text(result)
    assert "\n" not in text, text
    assert "Traceback" not in text, text
    assert text.split(":", 1)[0] in KINDS, text
    return text


def _ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, _text(result)
    assert result.structured_content is not None
    return result.structured_content


async def _finish(client: Client, job_id: str) -> dict[str, Any]:
    for _ in range(20):
        status = _ok(await client.call_tool("research_wait", {"job_id": job_id, "timeout_s": 30}))
        if status["state"] != "running":
            return status
    raise AssertionError(f"job {job_id} still running")


# ── the model behind openai_compat: web research on agentport's own tools ──


def _has(*needles: str) -> Any:
    return lambda req: all(n in req.raw.decode("utf-8", "replace") for n in needles)


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
    picks = [{"url": web.url(p.path), "title": p.title, "relevance": "high"} for p in PAGES]
    server.reply(JsonReply({"results": picks}), when=_has("## Web Searcher"), times=None)
    for page in PAGES:
        claim = {"claim": page.paragraphs[0], "quote": page.paragraphs[0], "importance": "central"}
        server.reply(
            JsonReply({"sourceQuality": "primary", "claims": [claim]}),
            when=_has("## Source Extractor", web.url(page.path)),
            times=None,
        )
    server.reply(
        JsonReply({"refuted": False, "evidence": "the fetched text says so", "confidence": "high"}),
        when=_has("Adversarial Claim Verifier"),
        times=None,
    )
    finding = {
        "claim": PAGES[1].paragraphs[0],
        "confidence": "high",
        "sources": [web.url(PAGES[1].path)],
        "evidence": "quoted from the page",
    }
    server.reply(
        JsonReply(
            {
                "summary": "The array cost 640 million euros.",
                "findings": [finding],
                "caveats": "one regional source",
                "openQuestions": [],
            }
        ),
        when=_has("## Synthesis"),
        times=None,
    )


def _config(tmp_path: Path, server: FakeModelServer, extra: str = "") -> Path:
    config = tmp_path / "config.toml"
    config.write_text(
        '[llm]\nbackend = "openai_compat"\nretry_attempts = 1\n'
        f'[llm.openai_compat]\nbase_url = "{server.openai_base_url}"\n'
        'api_key = "sk-fake-0123456789"\n' + extra,
        encoding="utf-8",
    )
    return config


def _web_table(web: LoopbackWeb) -> str:
    return (
        f'[web]\nsearxng_url = "{web.url("/searxng")}"\n'
        "allow_private = true\nper_host_delay_s = 0\ntimeout_s = 5\n"
    )


def _stdio_env(config: Path, tmp_path: Path) -> dict[str, str]:
    keep = ("PATH", "HOME", "AGENTPORT_STATE_DIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env |= {
        "AGENTPORT_CONFIG_FILE": str(config),
        ALLOW_ENV: "1",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path]),
    }
    return env


@pytest.mark.anyio
async def test_web_research_over_stdio_on_agentports_own_tools_and_its_budget(
    web: LoopbackWeb, tmp_path: Path
) -> None:
    """`agentport mcp` as a client launches it: web research on openai_compat (no web
    tools) runs on the loopback SearxNG and cites its pages; the `[budget]` table applies to
    a job started without `budget`, and `budget: "none"` drops it."""
    with FakeModelServer() as server:
        _script(server, web)
        config = _config(tmp_path, server, _web_table(web) + "[budget]\ncalls = 10\n")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "agentport", "mcp", "--root", str(tmp_path)],
            env=_stdio_env(config, tmp_path),
            cwd=str(tmp_path),
        )
        async with Client(params, read_timeout_seconds=120) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            start_schema = listed["research_start"].input_schema
            assert start_schema["required"] == ["question"]  # no corpus: the web
            assert "budget" in start_schema["properties"]
            assert "budget" in listed["refine"].input_schema["properties"]

            full = _ok(
                await client.call_tool(
                    "research_start", {"question": DEFAULT_QUESTION, "budget": "none"}
                )
            )
            status = await _finish(client, full["job_id"])
            assert status["state"] == "done", status
            assert status["mode"] == "web"
            assert status["corpus"] is None
            assert status["partial"] is False
            result = _ok(await client.call_tool("research_result", {"job_id": full["job_id"]}))
            report = result["report"]
            stats = report["stats"]
            assert stats["agentCallsMade"] == stats["agentCalls"] == 17  # 1 + 3 + 3 + 3*3 + 1
            assert stats["webSearches"] == 3
            assert {s["url"] for s in report["sources"]} == {web.url(p.path) for p in PAGES}
            assert report["findings"][0]["sources"] == [web.url(PAGES[1].path)]
            assert all(web.hits[p.path] >= 1 for p in PAGES)
            assert "budget reached" not in json.dumps(result).lower()

            capped = _ok(await client.call_tool("research_start", {"question": DEFAULT_QUESTION}))
            status = await _finish(client, capped["job_id"])
            assert status["state"] == "done", status
            assert status["partial"] is True
            assert status["budget_reached"] == "calls 10/10"
            assert status["message"] == "budget reached (calls 10/10): the report is partial"
            result = _ok(await client.call_tool("research_result", {"job_id": capped["job_id"]}))
            assert result["report"]["budgetReached"] == "calls 10/10"
            assert result["report"]["stats"]["agentCallsMade"] == 10
            assert "**Budget reached (calls 10/10):** partial report" in result["markdown"]
        requests = list(server.requests)
    assert len(requests) == 17 + 10  # the ceiling held: no call after the tenth


@pytest.mark.anyio
async def test_web_research_without_an_engine_is_the_clis_refusal_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No web tools and no `[web]` engine: research_start refuses at once with the same one
    line `agentport research` prints, and no job or model call is made."""
    from agentport.cli import app
    from agentport.mcp import build_server

    with FakeModelServer() as server:
        monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(_config(tmp_path, server)))
        monkeypatch.setenv(ALLOW_ENV, "1")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        cli = CliRunner().invoke(app, ["research", DEFAULT_QUESTION])
        mcp_server = build_server([tmp_path])
        async with Client(mcp_server) as client:
            refused = _error(await client.call_tool("research_start", {"question": "Q?"}))
            assert not mcp_server.jobs.running()  # type: ignore[attr-defined]
        assert server.requests == []
    assert cli.exit_code == 2
    assert refused.startswith("unsupported: ")
    assert refused.removeprefix("unsupported: ") == cli.stderr.strip().removeprefix("agentport: ")
    assert "searxng_url" in refused
    assert "corpus" in refused


def _native_model() -> ScriptedAdapter:
    """A backend whose catalog entry has NATIVE web tools (codex): it 'searches' itself."""
    url = "https://example.org/kessler"
    quote = "The array cost 640 million euros."

    llm = ScriptedAdapter(backend="codex")
    llm.add(
        {
            "question": "Q",
            "summary": "s",
            "angles": [{"label": f"a{i}", "query": f"q{i}"} for i in range(3)],
        },
        label="scope",
    )
    llm.add({"results": [{"url": url, "title": "t", "relevance": "high"}]}, label="search")

    def extract(call: Call) -> dict[str, Any]:
        return {
            "sourceQuality": "primary",
            "claims": [{"claim": quote, "quote": quote, "importance": "central"}],
        }

    llm.add(extract, label="extract")
    llm.add({"refuted": False, "evidence": "e", "confidence": "high"}, label="verify")
    llm.add(
        {"summary": "done", "findings": [], "caveats": "c", "openQuestions": []},
        label="synthesis",
    )
    return llm


@pytest.mark.anyio
async def test_web_research_uses_the_agents_own_web_tools_where_the_catalog_says_native(
    tmp_path: Path,
) -> None:
    from agentport.mcp import build_server

    llm = _native_model()
    async with Client(build_server([tmp_path], lambda backend: llm)) as client:
        started = _ok(await client.call_tool("research_start", {"question": "Q?"}))
        status = await _finish(client, started["job_id"])
    assert status["state"] == "done", status
    assert status["mode"] == "web"
    asked = {c.label: c.config.web_search for c in llm.calls}
    # search, fetch+extract and verify get the agent's web tools; scope and synthesis never
    assert asked == {
        "scope": False,
        "search": True,
        "extract": True,
        "verify": True,
        "synthesis": False,
    }


@pytest.mark.anyio
async def test_bad_budget_specs_are_one_line_errors_naming_budget_and_the_key(
    tmp_path: Path,
) -> None:
    from _mcp_util import model
    from agentport.mcp import build_server

    write_corpus(tmp_path)
    graph = write_tiny(tmp_path / "project")
    async with Client(build_server([tmp_path], lambda backend: model())) as client:
        typo = _error(
            await client.call_tool(
                "research_start", {"question": "Q?", "corpus": "corpus", "budget": "cals=3"}
            )
        )
        assert typo.startswith("invalid_request: budget")
        assert "'cals'" in typo
        assert "did you mean 'calls'" in typo
        zero = _error(
            await client.call_tool(
                "refine", {"question": "Q?", "graph": str(graph), "budget": "calls=0"}
            )
        )
        assert zero.startswith("invalid_request: budget: calls")
        assert not list(graph.parent.glob(".deeprefine/*trace*"))  # refused before the loop
        # the server keeps serving: a good spec runs
        fine = _ok(
            await client.call_tool(
                "research_start", {"question": "Q?", "corpus": "corpus", "budget": "calls=50"}
            )
        )
        status = await _finish(client, fine["job_id"])
        assert status["state"] == "done"
        assert status["partial"] is False
        assert status["mode"] == "corpus"


@pytest.mark.anyio
async def test_corpus_research_and_refine_under_a_budget_end_partial(tmp_path: Path) -> None:
    """A corpus job and a refine loop stopped by their `budget` say "budget reached"; the
    partial trace is written, no actions are proposed and graph.json is untouched."""
    from _mcp_util import model
    from agentport.mcp import build_server

    write_corpus(tmp_path)
    graph = write_tiny(tmp_path / "project")
    before = graph.read_bytes()
    async with Client(build_server([tmp_path], lambda backend: model())) as client:
        started = _ok(
            await client.call_tool(
                "research_start", {"question": "Q?", "corpus": "corpus", "budget": "calls=3"}
            )
        )
        status = await _finish(client, started["job_id"])
        assert status["partial"] is True
        assert status["budget_reached"] == "calls 3/3"
        assert "budget reached" in status["message"]
        result = _ok(await client.call_tool("research_result", {"job_id": started["job_id"]}))
        assert result["report"]["stats"]["agentCallsMade"] == 3

        refined = _ok(
            await client.call_tool(
                "refine",
                {
                    "question": "How does run() call helper()?",
                    "graph": str(graph),
                    "budget": "calls=2",
                },
            )
        )
        args = {"graph": str(graph), "query_id": refined["query_id"]}
        no_review = _error(await client.call_tool("review", args))
        no_apply = _error(await client.call_tool("apply", args | {"actions": [], "approve": True}))
    assert refined["partial"] is True
    assert refined["budget_reached"] == "calls 2/2"
    assert refined["message"].startswith("budget reached (calls 2/2): the loop is partial")
    assert refined["actions"] == []
    assert refined["action_set_id"] is None
    assert Path(refined["trace_file"]).name.endswith(".partial.json")
    trace = json.loads(Path(refined["trace_file"]).read_text())  # noqa: ASYNC240
    assert len(trace["interaction_history"]) == 2
    assert not list((graph.parent / ".deeprefine").glob("refinement_actions_*"))
    for refused in (no_review, no_apply):
        assert refused.startswith("invalid_request: query_id: ")
        assert "stopped by its budget" in refused
    assert graph.read_bytes() == before
