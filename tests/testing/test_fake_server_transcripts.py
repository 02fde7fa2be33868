"""FakeModelServer against the request bodies real CLIs sent (tests/fixtures/fake_server,
copied from shared/fixtures/cli-transcripts): every one is classified as the recording
says, side requests are recognised, tool results are seen, and structured-output tools are
answered by calling them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _fake_server_util import http
from _helpers import TESTS
from agentport.testing import ApiKind, FakeModelServer, JsonReply, RecordedRequest

FIXTURES = TESTS / "fixtures" / "fake_server"
CASES = sorted(p.relative_to(FIXTURES) for p in FIXTURES.glob("*/*.requests.jsonl"))

KIND = {
    "responses": (ApiKind.RESPONSES, None),
    "chat": (ApiKind.CHAT, None),
    "anthropic": (ApiKind.ANTHROPIC, None),
    "gemini": (ApiKind.GEMINI, False),
    "gemini_stream": (ApiKind.GEMINI, True),
}
# (cli/case, seq) of the requests a default SideRule must answer
SIDE = {
    ("opencode/tool-bash", 1): "opencode-title",
    ("qwen/ok-json", 2): "qwen-memory",
    ("qwen/json-schema", 2): "qwen-memory",
    ("gemini/tool-shell", 1): "gemini-router",
}
_SKIP_HEADERS = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}


def _load(case: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (FIXTURES / case).read_text().splitlines() if line]
    by_seq = {r["seq"]: r for r in rows}
    for r in rows:
        if isinstance(r["body"], dict) and "$same_as_seq" in r["body"]:
            r["body"] = by_seq[r["body"]["$same_as_seq"]]["body"]
    return rows


def _replay(server: FakeModelServer, row: dict[str, Any]) -> Any:
    headers = {k: v for k, v in row["headers"].items() if k.lower() not in _SKIP_HEADERS}
    return http().request(
        row["method"],
        server.base_url + row["path"],
        params=row["query"],
        headers=headers,
        content=json.dumps(row["body"]).encode(),
    )


@pytest.mark.parametrize("case", CASES, ids=[str(c).removesuffix(".requests.jsonl") for c in CASES])
def test_recorded_requests_are_classified(case: Path) -> None:
    name = str(case).removesuffix(".requests.jsonl")
    rows = _load(case)
    with FakeModelServer() as server:
        for row in rows:
            r = _replay(server, row)
            assert r.status_code == 200, (row["seq"], r.text[:300])
        recorded: list[RecordedRequest] = server.requests
        assert not server.errors
    assert len(recorded) == len(rows)
    for row, req in zip(rows, recorded, strict=True):
        api, stream = KIND[row["kind"]]
        assert req.api is api
        assert req.stream is (row["body"].get("stream") is True if stream is None else stream)
        assert req.side == SIDE.get((name, row["seq"]))
        assert req.user_text or req.has_tool_result or req.side
        if req.side is None:
            assert req.tool_names, "main requests of every CLI offer tools"
    main = [r for r in recorded if r.side is None]
    if "tool" in name:
        assert not main[0].has_tool_result
        assert main[-1].has_tool_result
        assert main[-1].tool_results
        assert "hello-from-tool" in "".join(main[-1].tool_results)
    else:
        assert not any(r.has_tool_result for r in main)


@pytest.mark.parametrize(
    ("case", "tool"),
    [("claude/json-schema", "StructuredOutput"), ("qwen/json-schema", "structured_output")],
)
def test_json_schema_requests_get_a_structured_output_call(case: str, tool: str) -> None:
    row = _load(Path(f"{case}.requests.jsonl"))[0]
    row["body"]["stream"] = False
    with FakeModelServer() as server:
        server.reply(JsonReply({"status": "ok", "answer": 42}))
        body = _replay(server, row).json()
    if case.startswith("claude"):
        block = body["content"][0]
        assert (block["type"], block["name"], block["input"]) == (
            "tool_use",
            tool,
            {"status": "ok", "answer": 42},
        )
    else:
        call = body["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == tool
        assert json.loads(call["arguments"]) == {"status": "ok", "answer": 42}
