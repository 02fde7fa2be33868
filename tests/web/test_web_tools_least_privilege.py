"""Native web tools are least-privilege and observable: a call that asks for web
search gets the CLI's web tools and nothing else; codex's `web_search` items become events
counted per call; the fake provider's server-side search (`WebSearchReply`) speaks the
Responses wire shape; the research stats add up what the agents searched and fetched."""

from __future__ import annotations

import importlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Result, Success

from _deep_research_util import web_model
from _fake_clis_util import ALL_TOOLS_ONLY
from _helpers import cli_call
from _runner_util import FIXTURES
from agentport.backends import RunOutcome, codex
from agentport.backends._web_events import web_activity, web_meta
from agentport.catalog import all_backends, get_capability
from agentport.core import (
    AgentEvent,
    BackendKind,
    CompletionConfig,
    CompletionResponse,
    EventType,
    Message,
    Param,
    ParamSupport,
    ProviderError,
    RawInfo,
    ToolPolicy,
)
from agentport.testing import (
    FakeModelServer,
    JsonReply,
    LoopbackWeb,
    ScriptedAdapter,
    WebCall,
    WebSearchReply,
)
from agentport.transport import LineFramer, parse_line
from agentport.workflows.deep_research import run_research

# Tool names that run commands or touch files, in each CLI's vocabulary, and flags that
# widen what an agent may do. Turning web search on must never add any of them.
_POWER_TOOLS = {
    "bash", "shell", "exec_command", "write", "edit", "multiedit", "notebookedit", "replace",
    "run_shell_command", "write_file", "apply_patch", "local_shell",
}  # fmt: skip
_POWER_FLAGS = (
    "features.shell_tool=true", "danger-full-access", "bypasspermissions", "--yolo",
    "--allow-all", "workspace-write", "acceptedits",
)  # fmt: skip


def _powerful(arg: str) -> bool:
    low = arg.lower()
    words = set(re.split(r"[^a-z0-9_]+", low))
    return bool(words & _POWER_TOOLS) or any(f in low for f in _POWER_FLAGS)


def _cli_modules() -> list[tuple[str, Any]]:
    out = []
    for cap in all_backends():  # CLI backends: their modules import without any extra
        if cap.kind is not BackendKind.cli:
            continue
        module = importlib.import_module(cap.module) if cap.module else None
        if module is not None and hasattr(module, "SPEC"):
            out.append((cap.name, module))
    return out


def _surface(module: Any, folder: Path, config: CompletionConfig) -> list[str]:
    """What a build hands the CLI: argv, environment values and the files it writes (a
    per-run settings file), each as one string, with the run folder's path neutralised."""
    folder.mkdir()
    inv = module.build(cli_call(folder, config))
    files = [f.read_text(errors="replace") for f in sorted(folder.rglob("*")) if f.is_file()]
    return [str(x).replace(str(folder), "RUN") for x in [*inv.argv, *inv.env.values(), *files]]


def _words(texts: list[str]) -> Counter[str]:
    return Counter(w for t in texts for w in re.split(r"[^a-z0-9_.=-]+", t.lower()) if w)


@pytest.mark.parametrize(("name", "module"), _cli_modules(), ids=lambda v: str(v)[:12])
def test_web_search_adds_no_shell_file_or_sandbox_power(
    name: str, module: Any, tmp_path: Path
) -> None:
    tools = ToolPolicy.cli_defaults() if name in ALL_TOOLS_ONLY else ToolPolicy.none()
    base = _surface(module, tmp_path / "off", CompletionConfig(tools=tools))
    on = CompletionConfig(tools=tools, web_search=True)
    web = _surface(module, tmp_path / "on", on)
    support = get_capability(name).support(Param.web_search)
    if support is ParamSupport.IGNORED:
        assert web == base, f"{name}: web_search is IGNORED but what the CLI gets changed"
        return
    assert web != base, f"{name}: web_search is declared {support} but nothing changed"
    added = _words(web) - _words(base)  # words that turning web search on brought
    assert not [w for w in added if _powerful(w)], (name, sorted(added))


def test_codex_turns_on_live_search_only_when_asked(tmp_path: Path) -> None:
    web = codex.build(
        cli_call(tmp_path, CompletionConfig(tools=ToolPolicy.none(), web_search=True))
    ).argv
    plain = codex.build(cli_call(tmp_path, CompletionConfig(tools=ToolPolicy.none()))).argv
    assert 'web_search="live"' in web
    assert 'web_search="disabled"' not in web
    assert 'web_search="disabled"' in plain
    assert 'web_search="live"' not in plain
    for argv in (web, plain):  # the shell and the other tools stay off either way
        assert "features.shell_tool=false" in argv
        assert "--sandbox=read-only" in argv
        assert "features.multi_agent=false" in argv


_ITEM = {"id": "ws_1", "type": "web_search"}


_ACTIONS = [
    ({"type": "search", "query": "tidal cost"}, {"web": "search", "query": "tidal cost"}),
    ({"type": "open_page", "url": "http://h/a"}, {"web": "fetch", "url": "http://h/a"}),
    (
        {"type": "find_in_page", "url": "http://h/b", "pattern": "x"},
        {"web": "fetch", "url": "http://h/b"},
    ),
]


@pytest.mark.parametrize(("action", "web"), _ACTIONS)
def test_codex_web_search_items_become_web_events(
    action: dict[str, str], web: dict[str, str]
) -> None:
    content = web.get("query") or web["url"]
    item = {**_ITEM, "query": action.get("query", ""), "action": action}
    start = codex.decode({"type": "item.started", "item": item})
    done = codex.decode({"type": "item.completed", "item": item})
    assert start is not None
    assert done is not None
    assert start.type is EventType.tool_call
    assert done.type is EventType.tool_result
    for event in (start, done):
        assert event.content == content
        assert not event.is_error
        assert web.items() <= event.metadata.items()
        assert event.metadata["tool"] == "web_search"
    key = "searches" if web["web"] == "search" else "fetches"
    assert web_activity([start, done]) == {key: [content]}  # one call counted once


def test_web_activity_counts_a_call_without_a_result_once() -> None:
    meta = {"tool": "web_search", "id": "a", "web": "search", "query": "q"}
    events = [
        AgentEvent(type=EventType.tool_call, metadata=meta),
        AgentEvent(type=EventType.tool_call, metadata={**meta, "id": "b", "query": "r"}),
        AgentEvent(type=EventType.tool_result, metadata={**meta, "id": "b", "query": "r"}),
        AgentEvent(type=EventType.text, content="answer"),
    ]
    assert web_activity(events) == {"searches": ["q", "r"]}
    assert web_activity(events[-1:]) == {}


# --- the fake provider's server-side search -------------------------------------------------


@pytest.fixture(scope="module")
def web() -> Any:
    with LoopbackWeb() as site:
        yield site


def _body(stream: bool) -> dict[str, Any]:
    return {"model": "m", "stream": stream, "input": "q", "tools": [{"type": "web_search"}]}


@pytest.mark.parametrize("stream", [True, False])
def test_web_search_reply_emits_web_search_call_items_before_the_answer(
    web: LoopbackWeb, stream: bool
) -> None:
    page = web.url("/articles/kessler-bay-costs")
    seen: list[tuple[WebCall, ...]] = []

    def answer(calls: tuple[WebCall, ...]) -> JsonReply:
        seen.append(calls)
        return JsonReply({"urls": [h.url for h in calls[0].hits], "text": calls[1].text})

    before = web.hits["/articles/kessler-bay-costs"]
    with FakeModelServer() as server:
        server.reply(WebSearchReply(web, answer, searches=["tidal array cost"], open_urls=[page]))
        resp = httpx.post(server.url_for("responses"), json=_body(stream), timeout=10)
    assert resp.status_code == 200
    if stream:
        events = [
            json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")
        ]
        output = next(e for e in events if e["type"] == "response.completed")["response"]["output"]
        kinds = [e["type"] for e in events]
        assert "response.web_search_call.searching" in kinds
    else:
        output = resp.json()["output"]
    assert [o["type"] for o in output] == ["web_search_call", "web_search_call", "message"]
    search, opened = output[0]["action"], output[1]["action"]
    assert search["type"] == "search"
    assert search["query"] == "tidal array cost"
    assert page in [s["url"] for s in search["sources"]]
    assert opened == {"type": "open_page", "url": page}
    answer_json = json.loads(output[2]["content"][0]["text"])
    assert "640 million euros" in answer_json["text"]  # the server read the page itself
    assert "Copyright" not in answer_json["text"]  # without the boilerplate
    assert web.hits["/articles/kessler-bay-costs"] == before + 1


def test_no_web_search_call_when_the_request_does_not_offer_the_tool(web: LoopbackWeb) -> None:
    # a provider runs only the tools the client enabled (codex with web_search disabled)
    seen: list[tuple[WebCall, ...]] = []

    def answer(calls: tuple[WebCall, ...]) -> str:
        seen.append(calls)
        return "no search"

    page = web.url("/articles/kessler-bay-wildlife")
    before = web.hits["/articles/kessler-bay-wildlife"]
    with FakeModelServer() as server:
        server.reply(WebSearchReply(web, answer, searches=["tidal"], open_urls=[page]))
        body = {**_body(False), "tools": [{"type": "function", "name": "exec_command"}]}
        resp = httpx.post(server.url_for("responses"), json=body, timeout=10)
    assert [o["type"] for o in resp.json()["output"]] == ["message"]
    assert seen == [()]
    assert web.hits["/articles/kessler-bay-wildlife"] == before


def test_web_search_reply_never_fetches_outside_loopback(web: LoopbackWeb) -> None:
    reply = WebSearchReply(web, "x", open_urls=["http://example.com/"])
    (call,) = reply.run_calls()
    assert call.text == ""
    assert "only 127.0.0.1" in call.error


# --- the research stats count the agents' web tool use -------------------------------------


class _WebCounting:
    """Wraps a scripted model answering as codex (web_search NATIVE in the catalog); each
    answer given web tools reports one search and one fetch."""

    def __init__(self) -> None:
        self.inner = web_model()

    @property
    def backend(self) -> str:
        return "codex"

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        result = await self.inner.complete(messages, config)
        if isinstance(result, Success) and config is not None and config.web_search:
            web = {"searches": ["q"], "fetches": ["http://h/p"]}
            raw = RawInfo(extra={"web": web})
            return Success(result.unwrap().model_copy(update={"raw": raw}))
        return result


@pytest.mark.anyio
async def test_research_stats_add_up_web_searches_and_fetches() -> None:
    llm = _WebCounting()
    report = await run_research("Q", llm)  # no assume_web_tools: the catalog allows it
    assert report.error is None
    web_calls = sum(1 for c in llm.inner.calls if c.config.web_search)
    assert web_calls == len(llm.inner.calls) - 2  # all but scope and synthesis
    assert report.stats["webSearches"] == report.stats["webFetches"] == web_calls
    assert not [w for w in report.warnings if "web search or page fetch" in w]


@pytest.mark.anyio
async def test_native_web_run_whose_agents_never_searched_says_so() -> None:
    # the seed's acceptance: web search must really run; answers with no web tool use
    # (e.g. a model the CLI gives no web tool) are flagged, not passed off as web research
    llm = ScriptedAdapter(web_model().rules, backend="codex")
    report = await run_research("Q", llm)
    assert report.error is None
    assert report.stats["webSearches"] == report.stats["webFetches"] == 0
    (flag,) = [w for w in report.warnings if "web search or page fetch" in w]
    asked = sum(1 for c in llm.calls if c.config.web_search)  # 3 searches, 3 sources, 9 votes
    assert asked == 15
    assert f"none of the {asked} answers given web tools" in flag


_WEB_EVENT = st.tuples(
    st.sampled_from([EventType.tool_call, EventType.tool_result]),
    st.sampled_from(["a", "b", "c", "d"]),
    st.sampled_from(["search", "fetch"]),
)


@given(st.lists(_WEB_EVENT, max_size=12))
def test_web_activity_counts_each_tool_call_id_once(raw: list[tuple[EventType, str, str]]) -> None:
    # one tool call = one id with one kind; its start and result may both be seen, or either
    kinds = {i: k for _, i, k in reversed(raw)}
    events = [
        AgentEvent(type=t, metadata={"id": i, **web_meta(kinds[i], query=i, url=i)})  # type: ignore[arg-type]
        for t, i, _ in raw
    ]
    seen = web_activity(events)
    ids = {i for _, i, _ in raw}
    assert sorted(seen.get("searches", []) + seen.get("fetches", [])) == sorted(ids)
    assert sorted(seen.get("searches", [])) == sorted(i for i in ids if kinds[i] == "search")


def test_real_codex_web_search_transcript_counts_one_search_and_one_page() -> None:
    # recorded from codex-cli 0.171.0 (tests/fixtures/cli/codex/web-search.meta.json): its
    # web_search items repeat the "id" key (item_N, then the provider's ws_ id)
    case = FIXTURES / "codex" / "web-search"
    meta = json.loads(Path(f"{case}.meta.json").read_text())
    assert meta["stub"]["web_tools_offered"] == [
        {"type": "web_search", "external_web_access": True}
    ]
    assert not {"exec_command", "apply_patch", "write_stdin"} & set(
        meta["stub"]["function_tools_offered"]
    )
    framer = LineFramer()
    events = []
    for line in framer.feed(Path(f"{case}.stdout").read_bytes()) + framer.close():
        frame = parse_line(line)
        event = codex.decode(frame.value) if frame is not None and frame.is_json else None
        if event is not None:
            events.append(event)
    page = "http://127.0.0.1:{WEB_PORT}/articles/kessler-bay-costs"
    assert web_activity(events) == {
        "searches": ["kessler bay tidal array cost"],
        "fetches": [page],
    }
    assert codex.classify(RunOutcome(meta["exit_code"], "", events)) is None
