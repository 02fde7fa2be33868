"""Claude Code and Gemini CLI web tools, without the CLIs: the flags / policy file
turn on exactly the web tools when a call asks; the decoders mark search and fetch events
(lines trimmed from real stream-json of Claude Code 2.1.197 and gemini-cli 0.61.0 against
FakeModelServer); FakeModelServer speaks Anthropic's web search results and Gemini's
grounding; `LoopbackTls` serves the loopback site over https. The real CLIs run in
tests/contract/test_web_research_claude.py and tests/contract/test_web_research_gemini.py."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _helpers import cli_call
from agentport.backends import claude, gemini
from agentport.backends._web_events import web_activity
from agentport.core import CompletionConfig, EventType, ToolPolicy
from agentport.testing import (
    DEFAULT_SIDE_RULES,
    FakeModelServer,
    LoopbackTls,
    LoopbackWeb,
    RebasedSearch,
    SearchHit,
    WebCall,
    claude_web_rules,
    gemini_web_rules,
)
from agentport.testing._fake_turn import Turn
from agentport.testing._fake_web_render import anthropic_web_blocks, gemini_grounding

# --- flags and policy -------------------------------------------------------------------------


def test_claude_web_search_offers_only_websearch_and_webfetch() -> None:
    web = claude.tool_flags(ToolPolicy.none(), web=True)
    assert web == [
        "--tools=WebSearch,WebFetch",
        "--allowedTools=WebSearch,WebFetch",
        "--strict-mcp-config",
        "--setting-sources=user",
    ]
    assert claude.tool_flags(ToolPolicy.none()) == [
        "--tools=",
        "--strict-mcp-config",
        "--setting-sources=user",
    ]


def test_claude_web_tools_join_a_callers_list_and_defaults_are_left_alone() -> None:
    listed = claude.tool_flags(ToolPolicy(allowed_tools=("Read", "WebFetch")), web=True)
    assert listed[:2] == [
        "--tools=Read,WebFetch,WebSearch",
        "--allowedTools=Read,WebFetch,WebSearch",
    ]
    defaults = claude.tool_flags(ToolPolicy.cli_defaults(), web=True)
    assert defaults == claude.tool_flags(ToolPolicy.cli_defaults())  # already offered


def test_claude_build_turns_web_tools_on_only_when_the_call_asks(tmp_path: Path) -> None:
    on = claude.build(cli_call(tmp_path, CompletionConfig(web_search=True))).argv
    off = claude.build(cli_call(tmp_path, CompletionConfig())).argv
    assert "--tools=WebSearch,WebFetch" in on
    assert not [a for a in off if "WebSearch" in a or "WebFetch" in a]
    assert not [a for a in on if a.startswith("--permission-mode")]  # no plan mode prompt


def _rules(toml: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for block in toml.split("[[rule]]")[1:]:
        name = json.loads(block.split("toolName = ")[1].splitlines()[0])
        out[name] = block.split('decision = "')[1].split('"')[0]
    return out


def test_gemini_policy_allows_only_the_web_tools_when_asked() -> None:
    web = gemini.policy_toml(ToolPolicy.none(), web=True)
    assert web is not None
    assert _rules(web) == {"*": "deny", "google_web_search": "allow", "web_fetch": "allow"}
    plain = gemini.policy_toml(ToolPolicy.none())
    assert plain is not None
    assert _rules(plain) == {"*": "deny"}
    assert gemini.policy_toml(ToolPolicy.cli_defaults(), web=True) is None


def test_gemini_build_writes_the_web_policy(tmp_path: Path) -> None:
    argv = gemini.build(cli_call(tmp_path, CompletionConfig(web_search=True))).argv
    assert "--approval-mode=default" in argv
    policy = (tmp_path / "agentport-policy.toml").read_text()
    assert _rules(policy) == {"*": "deny", "google_web_search": "allow", "web_fetch": "allow"}


# --- decoders ---------------------------------------------------------------------------------

_SEARCH_USE = {
    "type": "assistant",
    "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                "name": "WebSearch", "input": {"query": "Kessler Bay cost"}}]},
}  # fmt: skip
_SEARCH_DONE = {
    "type": "user",
    "message": {"role": "user", "content": [{"tool_use_id": "toolu_1", "type": "tool_result",
                "content": "Web search results for query: \"Kessler Bay cost\"\n\nLinks: [...]"}]},
    "tool_use_result": {
        "query": "Kessler Bay cost",
        "results": [
            {"tool_use_id": "srvtoolu_c18b", "content": [
                {"title": "What the Kessler Bay tidal array cost",
                 "url": "https://127.0.0.1:36127/articles/kessler-bay-costs"},
                {"title": "Kessler Bay tidal array: maintenance notes",
                 "url": "https://127.0.0.1:36127/injected"}]},
            "What the Kessler Bay tidal array cost: Construction of the ...",
        ],
        "durationSeconds": 0.127, "searchCount": 1,
    },
}  # fmt: skip
_FETCH_USE = {
    "type": "assistant",
    "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2",
                "name": "WebFetch", "input": {"url": "https://127.0.0.1:36127/articles/kessler-bay-costs",
                                              "prompt": "Quote it"}}]},
}  # fmt: skip
_FETCH_DONE = {
    "type": "user",
    "message": {"role": "user", "content": [{"tool_use_id": "toolu_2", "type": "tool_result",
                "content": "What the Kessler Bay tidal array cost\n\n..."}]},
    "tool_use_result": {"bytes": 931, "code": 200, "codeText": "OK", "result": "...",
                        "durationMs": 345, "url": "https://127.0.0.1:36127/articles/kessler-bay-costs"},
}  # fmt: skip


def test_claude_decoder_marks_web_search_and_fetch() -> None:
    events = [claude.decode(line) for line in (_SEARCH_USE, _SEARCH_DONE, _FETCH_USE, _FETCH_DONE)]
    assert all(e is not None for e in events)
    use, done, fuse, fdone = events
    assert use is not None
    assert done is not None
    assert fuse is not None
    assert fdone is not None
    assert use.type is EventType.tool_call
    assert use.metadata["web"] == "search"
    assert done.type is EventType.tool_result
    assert done.metadata["web"] == "search"
    assert done.metadata["query"] == "Kessler Bay cost"
    assert done.metadata["urls"] == [
        "https://127.0.0.1:36127/articles/kessler-bay-costs",
        "https://127.0.0.1:36127/injected",
    ]
    assert fdone.metadata["web"] == "fetch"
    assert fdone.metadata["status"] == 200
    assert web_activity([e for e in events if e is not None]) == {
        "searches": ["Kessler Bay cost"],
        "fetches": ["https://127.0.0.1:36127/articles/kessler-bay-costs"],
    }


def test_claude_decoder_leaves_other_tools_unmarked() -> None:
    bash = {
        "type": "assistant",
        "message": {"content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
    }
    result = {
        "type": "user",
        "message": {"content": [{"tool_use_id": "t", "type": "tool_result", "content": "x"}]},
        "tool_use_result": {"stdout": "x", "stderr": "", "interrupted": False},
    }
    for line in (bash, result):
        event = claude.decode(line)
        assert event is not None
        assert "web" not in event.metadata


_G_SEARCH = {"type": "tool_use", "tool_name": "google_web_search",
             "tool_id": "google_web_search__google_web_search_1796146220308_0",
             "parameters": {"query": "tidal array"}}  # fmt: skip
_G_FETCH = {"type": "tool_use", "tool_name": "web_fetch",
            "tool_id": "web_fetch__web_fetch_1796146227834_0",
            "parameters": {"prompt": "Summarise http://93.184.215.14/articles/x and "
                           "https://93.184.215.14/y please"}}  # fmt: skip
_G_RESULT = {"type": "tool_result", "tool_id": _G_SEARCH["tool_id"], "status": "success",
             "output": "Search results for \"tidal array\" returned."}  # fmt: skip


def test_gemini_decoder_marks_the_web_tool_calls() -> None:
    search, fetch, result = (gemini.decode(x) for x in (_G_SEARCH, _G_FETCH, _G_RESULT))
    assert search is not None
    assert fetch is not None
    assert result is not None
    assert search.metadata["web"] == "search"
    assert search.metadata["query"] == "tidal array"
    assert fetch.metadata["web"] == "fetch"
    assert fetch.metadata["urls"] == ["http://93.184.215.14/articles/x", "https://93.184.215.14/y"]
    assert fetch.metadata["url"] == "http://93.184.215.14/articles/x"
    assert web_activity([search, result, fetch]) == {
        "searches": ["tidal array"],
        "fetches": ["http://93.184.215.14/articles/x"],
    }
    shell = gemini.decode({**_G_SEARCH, "tool_name": "run_shell_command", "parameters": {}})
    assert shell is not None
    assert "web" not in shell.metadata


# --- the fake provider: Anthropic web search results, Gemini grounding ----------------------


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as web:
        yield web


def _sse_data(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


@pytest.mark.parametrize("stream", [False, True])
def test_claude_search_request_gets_server_tool_blocks(site: LoopbackWeb, stream: bool) -> None:
    body = {
        "model": "m", "max_tokens": 100, "stream": stream,
        "messages": [{"role": "user", "content": "Perform a web search for the query: tidal cost"}],
        "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 8}],
    }  # fmt: skip
    with FakeModelServer(side_rules=DEFAULT_SIDE_RULES + claude_web_rules(site, limit=2)) as srv:
        resp = httpx.post(srv.url_for("anthropic"), json=body, timeout=10)
        assert srv.requests[-1].side == "claude-web-search"
    assert resp.status_code == 200
    if stream:
        events = _sse_data(resp.text)
        blocks = [e["content_block"] for e in events if e["type"] == "content_block_start"]
        query = next(
            e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"
        )
        assert json.loads(query) == {"query": "tidal cost"}
        usage = next(e["usage"] for e in events if e["type"] == "message_delta")
    else:
        blocks = resp.json()["content"]
        assert blocks[0]["input"] == {"query": "tidal cost"}
        usage = resp.json()["usage"]
    assert [b["type"] for b in blocks] == ["server_tool_use", "web_search_tool_result", "text"]
    assert blocks[1]["tool_use_id"] == blocks[0]["id"]
    urls = [r["url"] for r in blocks[1]["content"]]
    assert urls == [h.url for h in site.search("tidal cost", 2)]
    assert usage["server_tool_use"]["web_search_requests"] == 1


def test_claude_fetch_summary_quotes_the_page_it_was_given(site: LoopbackWeb) -> None:
    page = "Kessler Bay\n---\n\nThe array cost 640 million euros."  # a `---` inside
    text = f"\nWeb page content:\n---\n{page}\n---\n\nQuote it.\n\nProvide a concise response"
    body = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": text}]}
    with FakeModelServer(side_rules=claude_web_rules(site)) as srv:
        resp = httpx.post(srv.url_for("anthropic"), json=body, timeout=10)
    assert resp.json()["content"] == [{"type": "text", "text": page}]


def test_gemini_search_and_url_context_are_grounded(site: LoopbackWeb) -> None:
    alias = "http://93.184.215.14"
    engine = RebasedSearch(site, site.base_url, alias)
    rules = gemini_web_rules(engine, to_loopback=engine.unbase, limit=2)
    search = {"contents": [{"role": "user", "parts": [{"text": "tidal cost"}]}],
              "tools": [{"googleSearch": {}}]}  # fmt: skip
    url = alias + "/articles/kessler-bay-costs"
    prompt = f"Read it.\n\n<authorized_urls>\n{url}\n</authorized_urls>\n"
    fetch = {"contents": [{"role": "user", "parts": [{"text": prompt}]}],
             "tools": [{"urlContext": {}}]}  # fmt: skip
    before = site.hits["/articles/kessler-bay-costs"]
    with FakeModelServer(side_rules=rules) as srv:
        found = httpx.post(srv.url_for("gemini", stream=False), json=search, timeout=10).json()
        read = httpx.post(srv.url_for("gemini", stream=False), json=fetch, timeout=10).json()
    meta = found["candidates"][0]["groundingMetadata"]
    assert meta["webSearchQueries"] == ["tidal cost"]
    assert [c["web"]["uri"] for c in meta["groundingChunks"]] == [
        h.url for h in engine.search("tidal cost", 2)
    ]
    assert all(c["web"]["uri"].startswith(alias) for c in meta["groundingChunks"])
    support = meta["groundingSupports"][0]
    text = found["candidates"][0]["content"]["parts"][0]["text"]
    assert support["segment"]["endIndex"] == len(text.encode())
    cand = read["candidates"][0]
    page = site.page("/articles/kessler-bay-costs")
    assert page is not None
    assert page.paragraphs[0] in cand["content"]["parts"][0]["text"]
    status = cand["urlContextMetadata"]["urlMetadata"][0]["urlRetrievalStatus"]
    assert status == "URL_RETRIEVAL_STATUS_SUCCESS"
    assert site.hits["/articles/kessler-bay-costs"] == before + 1  # read over loopback


def test_loopback_tls_serves_the_site_over_https(site: LoopbackWeb) -> None:
    before = site.hits["/articles/kessler-bay-overview"]
    with LoopbackTls(site.base_url) as tls:
        assert tls.base_url.startswith("https://127.0.0.1:")
        trust = ssl.create_default_context(cafile=str(tls.ca_file))
        resp = httpx.get(tls.url("/articles/kessler-bay-overview"), verify=trust)
        with pytest.raises(httpx.ConnectError):
            httpx.get(tls.url("/articles/kessler-bay-overview"))  # not a public CA
    assert resp.status_code == 200
    page = site.page("/articles/kessler-bay-overview")
    assert page is not None
    assert page.paragraphs[0] in resp.text
    assert site.hits["/articles/kessler-bay-overview"] == before + 1


def test_loopback_tls_refuses_a_target_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="http://host:port"):
        LoopbackTls("https://127.0.0.1:1")


# --- properties of the pure pieces ------------------------------------------------------------

_hits = st.lists(
    st.builds(SearchHit, st.text(min_size=1, max_size=20), st.text(max_size=20), st.text()),
    max_size=4,
)


@given(text=st.text(max_size=200), hits=_hits, query=st.text(max_size=30))
def test_gemini_grounding_supports_the_whole_answer_in_utf8_bytes(
    text: str, hits: list[SearchHit], query: str
) -> None:
    turn = Turn(text or None, web=(WebCall("search", query=query, hits=tuple(hits)),))
    meta = gemini_grounding(turn)["groundingMetadata"]
    assert meta["webSearchQueries"] == [query]
    assert [c["web"]["uri"] for c in meta["groundingChunks"]] == [h.url for h in hits]
    if hits and text:
        (support,) = meta["groundingSupports"]
        assert support["segment"]["endIndex"] == len(text.encode("utf-8"))  # gemini-cli: bytes
        assert support["groundingChunkIndices"] == list(range(len(hits)))
    else:
        assert "groundingSupports" not in meta


@given(hits=_hits, opened=st.lists(st.text(max_size=30), max_size=3))
def test_anthropic_blocks_pair_each_call_with_its_result(
    hits: list[SearchHit], opened: list[str]
) -> None:
    pages = [WebCall("open_page", url=u, text="page") for u in opened]
    calls = (WebCall("search", query="q", hits=tuple(hits)), *pages)
    blocks = anthropic_web_blocks(Turn("answer", web=calls))
    assert len(blocks) == 2 * len(calls)
    for use, result in zip(blocks[::2], blocks[1::2], strict=True):
        assert use["type"] == "server_tool_use"
        assert result["tool_use_id"] == use["id"]
    assert [r["url"] for r in blocks[1]["content"]] == [h.url for h in hits]
    assert [b["input"]["url"] for b in blocks[2::2]] == opened


@given(path=st.text(alphabet="abc/-_.?=", max_size=20))
def test_rebased_urls_map_back(path: str) -> None:
    engine = RebasedSearch(LoopbackWeb(), "http://127.0.0.1:1", "https://127.0.0.1:2")
    url = "http://127.0.0.1:1/" + path
    assert engine.rebase(url) == "https://127.0.0.1:2/" + path
    assert engine.unbase(engine.rebase(url)) == url
    assert engine.rebase("http://elsewhere/" + path) == "http://elsewhere/" + path
