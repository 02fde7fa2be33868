"""`agentport mcp` driven by the official MCP SDK's client over stdio and streamable HTTP:
tool listing, `complete`, a research job to its result with progress, cancel mid-run and a
client that disconnects mid-job (no process left), refine -> review -> apply on a real
graphify graph, and every bad input as a one-line tool error on a server that keeps serving."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from _helpers import TESTS

pytest.importorskip("mcp")

import httpx2
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult, TextContent

from _deeprefine_util import real_copy
from _mcp_util import LOW, REFINE_Q, write_corpus
from agentport.core import ErrorKind

HERE = TESTS
LAUNCHER = HERE / "_mcp_util.py"
KINDS = {k.value for k in ErrorKind}
TOOLS = {
    "complete", "backends", "research_start", "research_status", "research_wait",
    "research_result", "research_cancel", "refine", "review", "apply",
}  # fmt: skip


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's transports; the workflows' trio coverage lives elsewhere


def _env() -> dict[str, str]:
    keep = ("PATH", "HOME", "AGENTPORT_CONFIG_FILE", "AGENTPORT_STATE_DIR", "AGENTPORT_BLOCK_REAL")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("AGENTPORT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *sys.path])
    return env


def _stdio(*args: str, cmd: list[str] | None = None) -> Client:
    argv = cmd or [sys.executable, str(LAUNCHER)]
    return Client(
        StdioServerParameters(command=argv[0], args=[*argv[1:], *args], env=_env()),
        read_timeout_seconds=60,
    )


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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_gone(pids: list[int], timeout_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _pids(folder: Path) -> list[int]:
    return [int(p.read_text()) for p in folder.glob("*.pid")]


# ── stdio: listing, complete, bad input ──


@pytest.mark.anyio
async def test_stdio_lists_every_tool_with_a_schema_and_completes(tmp_path: Path) -> None:
    async with _stdio("--root", str(tmp_path)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        for tool in listed.values():
            assert tool.description, tool.name
            assert len(tool.description) > 40, tool.name
            assert tool.input_schema["type"] == "object"
        assert listed["complete"].input_schema["required"] == ["prompt"]
        assert set(listed["apply"].input_schema["required"]) == {
            "graph", "query_id", "actions", "approve",
        }  # fmt: skip
        done = await client.call_tool("complete", {"prompt": "say hi", "backend": "scripted"})
        assert not done.is_error, _text(done)
        assert done.structured_content is not None
        assert done.structured_content["content"] == "echo: say hi"
        rows = (await client.call_tool("backends", {})).structured_content
        assert rows is not None
        assert "claude" in {r["name"] for r in rows["backends"]}


@pytest.mark.anyio
async def test_bad_input_is_a_one_line_tool_error_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "graph.json").write_text("{}")
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("no_such_tool", {}, "invalid_request: Unknown tool"),
        ("complete", {"prompt": 42}, "invalid_request: complete:"),
        ("complete", {"prompt": "   "}, "invalid_request: prompt: is empty"),
        ("complete", {"prompt": "x", "schema": {"type": 5}}, "invalid_request: schema:"),
        ("research_start", {"question": "", "corpus": str(root)}, "question: is empty"),
        ("research_start", {"question": "q", "corpus": ""},
         "unsupported: backend 'scripted' cannot search the web"),  # web mode, no engine
        ("research_start", {"question": "q", "corpus": str(outside)}, "outside the allowed"),
        ("research_start", {"question": "q", "corpus": "../elsewhere"}, "outside the allowed"),
        ("research_start", {"question": "q", "corpus": str(root)}, "invalid_request: corpus:"),
        ("research_status", {"job_id": "r-nope"}, "no such job"),
        ("research_result", {"job_id": "r-nope"}, "no such job"),
        ("research_cancel", {"job_id": "r-nope"}, "no such job"),
        ("research_wait", {"job_id": "r-nope", "timeout_s": "soon"}, "invalid_request:"),
        ("refine", {"question": "q", "graph": str(outside / "graph.json")}, "outside the"),
        ("refine", {"question": " ", "graph": "g.json"}, "question: is empty"),
        ("review", {"graph": str(root / "missing.json"), "query_id": "x"}, "no such file"),
        ("apply", {"graph": "g.json", "query_id": "x", "actions": [], "approve": False},
         "approve: must be true"),
    ]  # fmt: skip
    async with _stdio("--root", str(root)) as client:
        for name, args, expected in cases:
            message = _error(await client.call_tool(name, args))
            assert expected in message, (name, message)
        alive = await client.call_tool("complete", {"prompt": "still there?"})
        assert _text(alive)
        assert not alive.is_error


# ── research jobs ──


@pytest.mark.anyio
async def test_research_job_runs_to_its_report_with_progress_notifications(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path)
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with _stdio("--root", str(tmp_path), "--verify-delay", "1.5") as client:
        started = await client.call_tool(
            "research_start", {"question": "How does the retry policy work?", "corpus": "corpus"}
        )
        assert not started.is_error, _text(started)
        assert started.structured_content is not None
        job = started.structured_content["job_id"]
        early = await client.call_tool("research_result", {"job_id": job})
        assert "still running" in _error(early)
        waited = await client.call_tool(
            "research_wait", {"job_id": job, "timeout_s": 120}, progress_callback=on_progress
        )
        assert waited.structured_content is not None
        assert waited.structured_content["state"] == "done", waited.structured_content
        result = await client.call_tool("research_result", {"job_id": job})
        assert not result.is_error, _text(result)
        body = result.structured_content
        assert body is not None
        report = body["report"]
        assert report["mode"] == "corpus"
        assert report["summary"].startswith("corpus done")
        assert report["claims"]
        assert report["sources"]
        assert all(s["url"].startswith("corpus://") for s in report["sources"])
        assert "corpus done" in body["markdown"]
        resource = await client.read_resource(f"agentport://research/{job}")
        assert "corpus done" in resource.contents[0].text  # type: ignore[union-attr]
        assert str(corpus) == body["status"]["corpus"]
        again = await client.call_tool("research_cancel", {"job_id": job})
        assert "already done" in _error(again)
    assert progress, "research_wait sent no progress notification"
    # the plan's upper bound is never a total: only the real count, once the job ended
    calls = waited.structured_content["calls_done"]
    assert all(total in (None, calls) for _, total, _ in progress), (calls, progress)
    values = [done for done, _, _ in progress]
    assert values == sorted(set(values))
    assert values[-1] == calls
    assert "planned" in str(progress[0][2])


@pytest.mark.anyio
async def test_cancel_mid_run_stops_the_job_and_its_processes(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    spawned = tmp_path / "spawned"
    spawned.mkdir()
    async with _stdio("--root", str(tmp_path), "--spawn-dir", str(spawned)) as client:
        started = await client.call_tool("research_start", {"question": "Q?", "corpus": "corpus"})
        assert started.structured_content is not None
        job = started.structured_content["job_id"]
        with anyio.fail_after(60):
            while not _pids(spawned):  # noqa: ASYNC110  (another process writes it: poll)
                await anyio.sleep(0.05)
        children = _pids(spawned)
        assert all(_alive(p) for p in children)
        cancelled = await client.call_tool("research_cancel", {"job_id": job})
        assert cancelled.structured_content is not None
        assert cancelled.structured_content["state"] == "cancelled"
        assert _wait_gone(_pids(spawned)) == []
        twice = await client.call_tool("research_cancel", {"job_id": job})
        assert "already cancelled" in _error(twice)
        assert "cancelled" in _error(await client.call_tool("research_result", {"job_id": job}))
        status = await client.call_tool("research_status", {"job_id": job})
        assert status.structured_content is not None
        assert status.structured_content["state"] == "cancelled"


@pytest.mark.anyio
async def test_client_disconnect_mid_job_ends_the_job_and_every_process(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    spawned = tmp_path / "spawned"
    spawned.mkdir()
    pid_file = tmp_path / "server.pid"
    args = ("--root", str(tmp_path), "--spawn-dir", str(spawned), "--pid-file", str(pid_file))
    async with _stdio(*args) as client:
        await client.call_tool("research_start", {"question": "Q?", "corpus": "corpus"})
        with anyio.fail_after(60):
            while not _pids(spawned):  # noqa: ASYNC110  (another process writes it: poll)
                await anyio.sleep(0.05)
    # the client is gone mid-job: the server, the job and the job's child all end
    assert _wait_gone([int(pid_file.read_text()), *_pids(spawned)]) == []


# ── DeepRefine: refine -> review -> apply on a real graphify graph ──


@pytest.mark.anyio
async def test_refine_review_apply_on_a_graphify_graph(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    project = real_copy(tmp_path_factory, tmp_path)
    graph = project / "graphify-out" / "graph.json"
    before = graph.read_bytes()
    hops: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        hops.append(done)

    async with _stdio("--root", str(project)) as client:
        refined = await client.call_tool(
            "refine", {"question": REFINE_Q, "graph": str(graph)}, progress_callback=on_progress
        )
        assert not refined.is_error, _text(refined)
        out = refined.structured_content
        assert out is not None
        assert out["early_exit"] is False
        assert out["actions"] == ['insert_edge("RetryingAdapter", "uses", "RetryPolicy")']
        assert out["trace"]["query"] == REFINE_Q
        assert Path(out["actions_file"]).is_file()  # noqa: ASYNC240
        assert graph.read_bytes() == before  # refine is a dry run
        assert hops
        assert hops[0] == 1
        qid = out["query_id"]

        reviewed = await client.call_tool("review", {"graph": str(graph), "query_id": qid})
        verdicts = reviewed.structured_content
        assert verdicts is not None
        assert verdicts["action_set_id"] == out["action_set_id"]
        item = verdicts["review"][0]
        assert item["confidence"] in {"HIGH", "MEDIUM", "LOW"}
        assert item["evidence"]
        # the verdict depends on the graph graphify builds from today's sources: a LOW one
        # must be refused first, then applied only with allow_low
        low = item["confidence"] == "LOW"

        base = {"graph": str(graph), "query_id": qid}
        wrong = await client.call_tool(
            "apply", base | {"actions": ['delete_edge("A", "b", "C")'], "approve": True}
        )
        assert "not the reviewed set" in _error(wrong)
        unapproved = await client.call_tool(
            "apply", base | {"actions": verdicts["actions"], "approve": False}
        )
        assert "approve: must be true" in _error(unapproved)
        assert graph.read_bytes() == before

        approved = base | {"actions": verdicts["actions"], "approve": True}
        if low:
            assert "refused: LOW" in _error(await client.call_tool("apply", approved))
            assert graph.read_bytes() == before
        applied = await client.call_tool("apply", approved | {"allow_low": low})
        assert not applied.is_error, _text(applied)
        done = applied.structured_content
        assert done is not None
        assert done["applied"] == 1
        assert done["written"] is True
        backup = Path(done["backup_file"]).read_bytes()  # noqa: ASYNC240
        assert backup == before  # exact pre-image
    links = json.loads(graph.read_text())["links"]
    assert any(link.get("relation") == "uses" for link in links)
    assert graph.read_bytes() != before


@pytest.mark.anyio
async def test_low_confidence_actions_are_refused_unless_allowed(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    project = real_copy(tmp_path_factory, tmp_path)
    graph = project / "graphify-out" / "graph.json"
    before = graph.read_bytes()
    async with _stdio("--root", str(project), "--refinement", LOW) as client:
        out = await client.call_tool("refine", {"question": REFINE_Q, "graph": str(graph)})
        body = out.structured_content
        assert body is not None, _text(out)
        assert body["counts"]["LOW"] == 1
        args = {"graph": str(graph), "query_id": body["query_id"], "actions": body["actions"]}
        refused = await client.call_tool("apply", args | {"approve": True})
        assert "refused: LOW-confidence" in _error(refused)
        assert graph.read_bytes() == before


# ── streamable HTTP ──


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def _http_server(*args: str) -> AsyncIterator[str]:
    port = _free_port()
    proc = subprocess.Popen(  # noqa: ASYNC220  (a server for the whole test)
        [sys.executable, str(LAUNCHER), "--http", f"127.0.0.1:{port}", *args],
        env=_env(), stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                        break
                except OSError:
                    assert proc.poll() is None, "the HTTP server exited"
                    await anyio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.anyio
async def test_http_transport_serves_tools_and_runs_a_job(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    async with _http_server("--root", str(tmp_path)) as url, Client(url) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        done = await client.call_tool("complete", {"prompt": "over http"})
        assert done.structured_content is not None
        assert done.structured_content["content"] == "echo: over http"
        started = await client.call_tool("research_start", {"question": "Q?", "corpus": "corpus"})
        assert started.structured_content is not None
        job = started.structured_content["job_id"]
        waited = await client.call_tool("research_wait", {"job_id": job, "timeout_s": 120})
        assert waited.structured_content is not None
        assert waited.structured_content["state"] == "done"
        assert "unknown" not in _text(await client.call_tool("research_result", {"job_id": job}))


@pytest.mark.anyio
async def test_http_token_is_checked(tmp_path: Path) -> None:
    async with _http_server("--root", str(tmp_path), "--token", "s3cret-token") as url:  # launcher
        async with httpx2.AsyncClient() as raw:
            denied = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert denied.status_code == 401
            wrong = await raw.post(url, json={}, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
        headers = {"Authorization": "Bearer s3cret-token"}
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(headers=headers) as authed,
            Client(streamable_http_client(url, http_client=authed)) as client,
        ):
            assert len((await client.list_tools()).tools) == len(TOOLS)


# ── the command line ──


def test_cli_refuses_a_non_loopback_bind_without_a_token() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentport", "mcp", "--http", "0.0.0.0:8765"],
        capture_output=True, text=True, timeout=60, env=_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "non-loopback" in done.stderr
    assert "AGENTPORT_MCP_TOKEN" in done.stderr
    assert "--token-file" in done.stderr


def test_cli_refuses_a_root_that_is_not_a_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentport", "mcp", "--root", str(tmp_path / "nope")],
        capture_output=True, text=True, timeout=60, env=_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "not a folder" in done.stderr


@pytest.mark.anyio
async def test_agentport_mcp_command_over_stdio_with_the_configured_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[llm]\nbackend = "scripted"\n[llm.scripted]\ndefault = "configured"\n')
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))
    cmd = [sys.executable, "-m", "agentport", "mcp"]
    async with _stdio("--root", str(tmp_path), cmd=cmd) as client:
        done = await client.call_tool("complete", {"prompt": "hello"})
        assert done.structured_content is not None, _text(done)
        assert done.structured_content["content"] == "configured"


# ── in process (the SDK's in-memory client): limits that need no transport ──


@pytest.mark.anyio
async def test_running_jobs_are_capped_and_a_symlink_out_of_a_root_is_refused(
    tmp_path: Path,
) -> None:
    from _mcp_util import model
    from agentport.mcp import build_server

    root = tmp_path / "root"
    write_corpus(root)
    outside = write_corpus(tmp_path / "outside")
    (root / "link").symlink_to(outside)
    server = build_server([root], lambda backend: model(verify_delay_s=30))
    async with Client(server) as client:
        escaped = await client.call_tool("research_start", {"question": "Q?", "corpus": "link"})
        assert "symbolic link" in _error(escaped)  # refused, never followed
        jobs = []
        for _ in range(4):
            started = await client.call_tool(
                "research_start", {"question": "Q?", "corpus": "corpus"}
            )
            assert started.structured_content is not None, _text(started)
            jobs.append(started.structured_content["job_id"])
        fifth = await client.call_tool("research_start", {"question": "Q?", "corpus": "corpus"})
        assert _error(fifth).startswith("rate_limited: 4 research jobs")
        for job in jobs:
            done = await client.call_tool("research_cancel", {"job_id": job})
            assert done.structured_content is not None
            assert done.structured_content["state"] == "cancelled"


@pytest.mark.parametrize(
    ("value", "host", "port"),
    [("8765", "127.0.0.1", 8765), (":8765", "127.0.0.1", 8765), ("[::1]:9", "[::1]", 9),
     ("localhost:80", "localhost", 80), ("10.0.0.5:8000", "10.0.0.5", 8000)],
)  # fmt: skip
def test_http_address_parsing_and_which_binds_need_a_token(
    value: str, host: str, port: int
) -> None:
    from agentport.cli._mcp import parse_http
    from agentport.mcp import check_bind

    assert parse_http(value) == (host, port)
    loopback = host != "10.0.0.5"
    assert (check_bind(host, None) is None) is loopback
    assert check_bind(host, "a-token") is None
