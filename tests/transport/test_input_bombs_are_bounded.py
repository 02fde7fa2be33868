"""Input bombs end in typed one-line failures, never RecursionError or unbounded work:
200,000-deep JSON in graph.json, a trace, history, caches and model answers; HTTP error
bodies read up to a limit; the actions parser walks its text once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentport.backends.openai_compat import ERROR_BODY_LIMIT, OpenAICompatAdapter, load_options
from agentport.catalog import get_capability
from agentport.cli._deeprefine import main as deeprefine_main
from agentport.core import CompletionConfig, ErrorKind, Message, _bounded
from agentport.structured import find_json
from agentport.structured._extract import NOTHING
from agentport.workflows.deep_research import CallCache
from agentport.workflows.deeprefine import (
    InputError,
    Layout,
    _actions,
    load_graph,
    parse_refinement,
    read_history,
)
from agentport.workflows.deeprefine._trace import load_trace

DEEP = 200_000
ARRAYS = "[" * DEEP + "]" * DEEP
OBJECTS = '{"a":' * DEEP + "1" + "}" * DEEP


@pytest.mark.parametrize("bomb", [ARRAYS, OBJECTS], ids=["arrays", "objects"])
def test_deep_graph_json_is_a_one_line_input_error(tmp_path: Path, bomb: str) -> None:
    path = tmp_path / "graphify-out" / "graph.json"
    path.parent.mkdir()
    path.write_text('{"nodes": [], "links": [], "x": ' + bomb + "}", encoding="utf-8")
    for lean in (False, True):
        with pytest.raises(InputError) as caught:
            load_graph(path, lean=lean)
        message = str(caught.value)
        assert message.startswith(f"{path}: not valid JSON (line 1: nested deeper than")
        assert "\n" not in message


@pytest.mark.parametrize("depth", [DEEP, 100])
def test_deep_trace_is_a_one_line_input_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "loop_trace_x.json"
    path.write_text('{"query": ' + "[" * depth + "]" * depth + "}", encoding="utf-8")
    with pytest.raises(InputError, match="nested deeper than"):
        load_trace(path)


def test_deep_trace_through_the_cli_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "loop_trace_x.json"
    path.write_text(ARRAYS, encoding="utf-8")
    code = deeprefine_main(["loop", "validate", "--trace-file", str(path)])
    err = capsys.readouterr().err
    assert code != 0
    assert "nested deeper than" in err
    assert "Traceback" not in err
    assert "RecursionError" not in err


def test_deep_history_line_is_skipped_and_reported(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    layout.state.mkdir(parents=True)
    good = json.dumps({"id": "q1", "query": "what?", "refined": False})
    layout.history.write_text(good + "\n" + ARRAYS + "\n", encoding="utf-8")
    history = read_history(layout.history)
    assert [r["id"] for r in history.rows] == ["q1"]
    assert "nested deeper than" in history.problems[0]


def test_deep_cache_entry_is_treated_as_missing(tmp_path: Path) -> None:
    cache = CallCache(tmp_path)
    cache.put("k", {"parsed": 1})
    (tmp_path / "k.json").write_text(ARRAYS, encoding="utf-8")
    assert cache.get("k") is None


def test_deep_model_answer_is_no_json_not_a_crash() -> None:
    assert find_json(ARRAYS) is NOTHING
    assert find_json("Here: " + OBJECTS) is NOTHING


@settings(max_examples=60, deadline=None)
@given(depth=st.integers(1, 60), limit=st.integers(1, 60), as_object=st.booleans())
def test_bounded_loads_raises_exactly_past_the_limit(
    depth: int, limit: int, as_object: bool
) -> None:
    text = ('{"k":' * depth + "0" + "}" * depth) if as_object else "[" * depth + "]" * depth
    if depth > limit:
        with pytest.raises(_bounded.JSONTooDeep):
            _bounded.loads(text, max_depth=limit)
    else:
        assert _bounded.loads(text, max_depth=limit) == json.loads(text)


# ---- HTTP error bodies --------------------------------------------------------------------


class _Endless(httpx.AsyncByteStream):
    """An error page that never ends; counts what was read."""

    def __init__(self) -> None:
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunk = b"error " * 1000
        while self.sent < 50_000_000:
            self.sent += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
async def test_http_error_body_is_read_up_to_a_limit() -> None:
    stream = _Endless()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, stream=stream)

    endpoint = load_options({"base_url": "http://fake.invalid/v1"}, environ={})
    adapter = OpenAICompatAdapter(
        get_capability("openai_compat"), endpoint, transport=httpx.MockTransport(handler)
    )
    config = CompletionConfig(startup_timeout_s=5, idle_timeout_s=5, total_timeout_s=10)
    with anyio.fail_after(20):
        result = await adapter.complete([Message.user("hi")], config)
    error = result.failure()
    assert error.kind is ErrorKind.server_error
    assert stream.sent <= ERROR_BODY_LIMIT + 6000
    assert len(error.message) <= 1000


# ---- the actions parser is linear by construction -------------------------------------------


class _CountingScanner(_actions._Scanner):
    made = 0
    backward = 0

    def __init__(self, text: str) -> None:
        type(self).made += 1
        super().__init__(text)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "pos" and value < getattr(self, "pos", 0):
            type(self).backward += 1
        super().__setattr__(name, value)


HOSTILE = [
    "insert_edge(" * 800,
    "<refinement>" + "insert_edge(" * 800,
    "<refinement>" + "insert_edge(" * 800 + "</refinement>",
    'insert_edge("a\n' * 600,
    "prose insert_edge(a, b) and delete_edge(x, r, y) " * 300,
    "<refinement>" * 800 + "</refinement>" * 3,
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_parser_walks_each_text_once_with_one_scanner_per_block(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """One scanner per block (or one for the whole text without a block), whose position
    never moves back: each character is read a bounded number of times, so parsing is linear
    (96 KB of `insert_edge(` took 30 s before; benchmarks/deeprefine_actions_parser.py)."""
    monkeypatch.setattr(_CountingScanner, "made", 0)
    monkeypatch.setattr(_CountingScanner, "backward", 0)
    monkeypatch.setattr(_actions, "_Scanner", _CountingScanner)
    parsed = parse_refinement(text)
    blocks = max(len(_actions._blocks(text)), 1)
    assert _CountingScanner.made <= blocks
    assert _CountingScanner.backward == 0
    assert parsed.items  # something was found and reported


FRAGMENTS = ["insert_edge(", "delete_edge(", "replace_node(", "<refinement>",
             "</refinement>", '"', "'", ",", ")", "(", "|", "\n", " ", "a", "\\"]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join))
def test_any_text_is_parsed_in_one_forward_pass(text: str) -> None:
    before = (_CountingScanner.made, _CountingScanner.backward)
    original = _actions._Scanner
    _actions._Scanner = _CountingScanner  # type: ignore[misc]
    try:
        parse_refinement(text)
    finally:
        _actions._Scanner = original  # type: ignore[misc]
    made = _CountingScanner.made - before[0]
    assert made <= max(len(_actions._blocks(text)), 1)
    assert _CountingScanner.backward == before[1]


def test_a_failed_call_does_not_hide_the_next_line() -> None:
    parsed = parse_refinement('insert_edge(a, b\ninsert_edge("x", "r", "y")')
    assert [str(a) for a in parsed.actions] == ['insert_edge("x", "r", "y")']
    assert len(parsed.items) == 2


def test_blocks_are_found_like_the_lazy_regex_did() -> None:
    text = "<REFINEMENT>a</refinement> x <refinement>b</Refinement><refinement>c"
    assert _actions._blocks(text) == ["a", "b"]
    assert _actions._blocks("<refinement>a") == []
