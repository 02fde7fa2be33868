"""What any MCP client sees, checked over stdio with the SDK's own client: every tool carries
all four annotations (a client tells `apply`, which rewrites graph.json, from `backends`),
descriptions read without source indentation, `apply` takes only JSON `true` as approval,
an unknown prompt is -32602, a backend error names its kind once, and progress strictly
increases with a total that never drops.

Regressions: no annotations; `approve: "yes"` and `approve: 1` approved and wrote graph.json;
`review` told the model to pass `action_set_id`, which `apply` rejects; progress repeated
(6 -> 6) and its total dropped (95 -> 13); an unknown prompt was `MCP error 0`; errors read
`not_installed: claude: not_installed: ...`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _helpers import TESTS

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from _deeprefine_util import write_tiny
from agentport.core import ErrorKind, ProviderError
from agentport.mcp._errors import Progress, error_line

HERE = TESTS
LAUNCHER = HERE / "_mcp_util.py"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _client(root: Path) -> Client:
    env = {
        k: v for k, v in os.environ.items() if k in ("PATH", "HOME") or k.startswith("AGENTPORT_")
    }
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *sys.path])
    return Client(
        StdioServerParameters(command=sys.executable, args=[str(LAUNCHER), "--root", str(root)],
                              env=env),
        read_timeout_seconds=60,
    )  # fmt: skip


@pytest.mark.anyio
async def test_every_tool_is_annotated_and_reads_cleanly(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for tool in tools.values():
        hints = tool.annotations
        assert hints is not None, tool.name
        for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
            assert getattr(hints, hint) is not None, (tool.name, hint)
        assert tool.description
        assert not any(line.startswith("    ") for line in tool.description.splitlines()), tool.name
    assert tools["apply"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["backends"].annotations.read_only_hint is True  # type: ignore[union-attr]
    review = tools["review"].description or ""
    assert "(or `action_set_id`)" not in review  # apply takes the actions, not the id
    assert "`actions`" in review


@pytest.mark.anyio
@pytest.mark.parametrize("approve", ["yes", 1, "true"])
async def test_apply_takes_only_json_true_as_approval(tmp_path: Path, approve: Any) -> None:
    graph = write_tiny(tmp_path)
    before = graph.read_bytes()
    async with _client(tmp_path) as client:
        result = await client.call_tool(
            "apply",
            {"graph": str(graph), "query_id": "0" * 16, "actions": [], "approve": approve},
        )
    assert result.is_error
    assert graph.read_bytes() == before


#: the fields docs/mcp.md "Tools" promises each tool returns
RETURNS = {
    "complete": {"content", "parsed", "backend", "model", "warnings", "duration_s"},
    "backends": {"backends"},
    "research_start": {"job_id", "state"},
    "research_status": {"job_id", "state", "mode", "phase", "calls_done", "calls_expected",
                        "elapsed_s", "error", "partial", "budget_reached"},
    "research_result": {"status", "report", "markdown"},
    "refine": {"query_id", "early_exit", "partial", "trace", "actions", "action_set_id",
               "review"},
    "review": {"actions", "action_set_id", "counts", "review", "markdown"},
    "apply": {"applied", "written", "outcomes", "backup_file"},
}  # fmt: skip


@pytest.mark.anyio
async def test_every_output_schema_names_and_types_its_fields(tmp_path: Path) -> None:
    """Regression: every tool returned `dict[str, Any]`, so each output schema was a bare
    object a client could not check. The SDK's client validates every `structuredContent`
    against these schemas, so the tests that call the tools check the values too."""
    async with _client(tmp_path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        done = await client.call_tool("backends", {})
    for name, tool in tools.items():
        schema = tool.output_schema
        assert schema is not None, name
        props = schema.get("properties") or {}
        fields = RETURNS.get(name, RETURNS["research_status"])  # wait and cancel: a status
        assert fields <= set(props), name
        assert fields <= set(schema.get("required") or ()), name
        assert all(v.get("type") or v.get("$ref") or v.get("anyOf") for v in props.values()) or (
            name == "complete"  # `parsed` is whatever the caller's schema says
        ), (name, props)
    row = tools["backends"].output_schema["$defs"]["BackendRow"]  # type: ignore[index]
    assert {"name", "kind", "installed", "verified_against"} <= set(row["properties"])
    assert done.structured_content is not None
    kinds = {r["kind"] for r in done.structured_content["backends"]}
    assert kinds <= {"cli", "http", "local", "test"}, kinds


@pytest.mark.anyio
async def test_an_unknown_prompt_is_invalid_params(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("no-such-prompt")
    assert caught.value.code == -32602


def test_an_error_names_its_kind_once() -> None:
    error = ProviderError(ErrorKind.not_installed, "'claude' not found on PATH", backend="claude")
    assert error_line(error) == "not_installed: claude: 'claude' not found on PATH"


class _Ctx:
    def __init__(self) -> None:
        self.sent: list[tuple[float, float | None]] = []

    async def report_progress(self, value: float, total: float | None, message: str) -> None:
        self.sent.append((value, total))


@given(st.lists(st.integers(0, 200), max_size=30), st.integers(0, 200))
def test_progress_strictly_increases_and_states_only_the_real_total(
    counts: list[int], final: int
) -> None:
    """A research job's call count is an upper bound while it runs (97 planned, 15 made):
    no running notification may state it as a total; the last states the real count."""
    ctx = _Ctx()

    async def run() -> None:
        progress = Progress(ctx)
        for done in counts:
            await progress.report(done, "phase")
        await progress.finish(max([final, *counts]), "done")

    anyio.run(run)
    values = [v for v, _ in ctx.sent]
    assert values == sorted(set(values)), values  # strictly increasing
    assert all(total is None for _, total in ctx.sent[:-1]), ctx.sent
    real = max([final, *counts])
    if ctx.sent and ctx.sent[-1][1] is not None:
        assert ctx.sent[-1] == (real, real)
    if real > max([0, *counts]):  # the count is news: the last notification says it
        assert ctx.sent[-1] == (real, real)
