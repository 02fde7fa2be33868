"""Batches on a real Temporal server (`temporal server start-dev`, see _temporal_server):
a research batch survives a SIGKILLed worker without redoing finished model calls and
writes the same reports as the local batch; a refine batch applies one question at a time
(no lost update); an existing batch id and an unreachable server are one-line errors."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from _batch_model import CONFIG, options, refine_questions, serve, serve_refine
from _deeprefine_util import write_tiny
from _temporal_server import WorkerProcess, temporal_binary, temporal_server  # noqa: F401
from agentport.testing import FakeModelServer

pytest.importorskip("temporalio")

from agentport.cli import app
from agentport.factory import create_llm_adapter
from agentport.temporal._batch import BatchJob
from agentport.temporal._client import connect, follow, start_batch
from agentport.workflows.batch import BatchInputError, question_id, read_questions, research_batch

pytestmark = pytest.mark.slow

LATENCY_S = 0.2  # per model call: long enough to kill a worker mid-batch
HEARTBEAT_S = 3.0  # a dead worker's calls move on after this much silence
GUARD_S = 240  # a hang of the suite, not a timing assertion
WORKER_CAP = 8  # openai_compat calls one worker runs at once (an HTTP backend's default)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        yield srv


@pytest.fixture
def workers(
    temporal_server: str,  # noqa: F811
    server: FakeModelServer,
    tmp_path: Path,
) -> Iterator[list[WorkerProcess]]:
    """Two workers whose own configuration points openai_compat at *server* (workflow
    input never chooses an endpoint or a key)."""
    started: list[WorkerProcess] = []
    config = tmp_path / "worker.toml"
    table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in options(server).items())
    config.write_text(f"[llm.openai_compat]\n{table}\n", encoding="utf-8")
    try:
        for i in range(2):
            folder = tmp_path / f"worker{i}"
            folder.mkdir()
            started.append(WorkerProcess(temporal_server, folder, config))
        yield started
    finally:
        for w in started:
            w.stop()


def _strip_duration(text: str) -> str:
    """A report without its wall-time statistic (the only measured value in it)."""
    return "\n".join(line for line in text.splitlines() if '"durationS"' not in line)


async def _run_batch(address: str, job: BatchJob, batch_id: str, on_progress: Any) -> Any:
    client = await connect(address)
    await start_batch(client, job, batch_id)
    return await asyncio.wait_for(follow(client, batch_id, on_progress, poll_s=0.3), GUARD_S)


def test_research_batch_survives_a_killed_worker_without_redoing_finished_calls(
    temporal_server: str,  # noqa: F811
    workers: list[WorkerProcess],
    server: FakeModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    questions = [f"What changed in release {i}?" for i in range(20)]
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(questions) + "\n", encoding="utf-8")
    parsed = read_questions(qfile)
    serve(server, LATENCY_S)
    # the single-process reference: the local batch on the same model
    local = tmp_path / "local"
    adapter = create_llm_adapter("openai_compat", openai_compat=options(server))
    summary = anyio.run(lambda: research_batch(parsed, local, adapter, CONFIG, jobs=20))
    assert summary.done == 20
    per_question = len(server.requests) // 20
    reference = len(server.requests)

    out = tmp_path / "temporal"
    job = BatchJob(
        kind="research",
        items=[[q.id, q.line, q.text] for q in parsed.questions],
        backend="openai_compat",
        out=str(out),
        jobs=20,
        config=CONFIG.model_dump(mode="json"),
        heartbeat_s=HEARTBEAT_S,
    )
    killed: list[int] = []
    stop = threading.Event()

    def kill_mid_batch() -> None:
        # kill one worker once a third of the calls are done (calls finished on both)
        while not stop.wait(0.05):
            if len(server.requests) - reference >= 20 * per_question // 3:
                killed.append(len(server.requests) - reference)
                workers[0].kill()
                return

    watcher = threading.Thread(target=kill_mid_batch, daemon=True)
    watcher.start()
    try:
        final = asyncio.run(_run_batch(temporal_server, job, "test-research-kill", None))
    finally:
        stop.set()
        watcher.join(10)
    assert killed, "the batch ended before a worker could be killed"
    assert final.state == "completed"
    assert final.progress is not None
    assert (final.progress.done, final.progress.failed) == (20, 0)

    prompts = Counter(
        (r.system_text, r.user_text) for r in server.requests[reference:] if not r.is_side
    )
    repeated = sum(n - 1 for n in prompts.values())
    # only calls in flight on the killed worker may be made again, never a finished one
    assert repeated <= WORKER_CAP
    local_prompts = {
        (r.system_text, r.user_text) for r in server.requests[:reference] if not r.is_side
    }
    new = [user[:600] for _, user in set(prompts) - local_prompts]  # none: the same prompts
    assert len(prompts) == 20 * per_question, new
    for q in questions:
        name = f"{question_id(q)}.md"
        assert _strip_duration((out / name).read_text(encoding="utf-8")) == _strip_duration(
            (local / name).read_text(encoding="utf-8")
        )
    state = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    assert state["counts"]["done"] == 20

    result = CliRunner().invoke(
        app, ["batch", "status", "test-research-kill", "--temporal", temporal_server]
    )
    assert result.exit_code == 0, result.output
    assert "completed: 20 done, 0 failed" in result.stdout


def test_refine_batch_applies_each_question_once_with_no_lost_update(
    temporal_server: str,  # noqa: F811
    workers: list[WorkerProcess],
    server: FakeModelServer,
    tmp_path: Path,
) -> None:
    graph = write_tiny(tmp_path)
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(refine_questions(10)) + "\n", encoding="utf-8")
    parsed = read_questions(qfile)
    serve_refine(server)
    job = BatchJob(
        kind="refine",
        items=[[q.id, q.line, q.text] for q in parsed.questions],
        backend="openai_compat",
        out=str(tmp_path / "reviews"),
        jobs=10,
        graph=str(graph),
        apply=True,
        allow_low=True,
        heartbeat_s=HEARTBEAT_S,
    )
    final = asyncio.run(_run_batch(temporal_server, job, "test-refine-apply", None))
    assert final.state == "completed"
    assert (final.progress.done, final.progress.failed) == (10, 0)
    after = json.loads(graph.read_text(encoding="utf-8"))  # valid JSON, graphify's shape
    assert {"nodes", "links"} <= set(after)
    assert len([link for link in after["links"] if link["relation"] == "uses"]) == 10
    rows = [
        json.loads(line)
        for line in (graph.parent / ".deeprefine" / "apply_log.jsonl").read_text().splitlines()
    ]
    assert [(r["applied"], r["written"]) for r in rows] == [(1, True)] * 10
    backup = json.loads((graph.parent / ".deeprefine" / "graph.json.bak").read_text())
    assert len(backup["links"]) == len(after["links"]) - 1
    reviews = list((tmp_path / "reviews").glob("how-*.md"))
    assert len(reviews) == 10
    assert all("## Applied" in r.read_text(encoding="utf-8") for r in reviews)


def test_an_existing_batch_id_and_an_unreachable_server_are_one_line(
    temporal_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    job = BatchJob(
        kind="research", items=[["x", 1, "Q?"]], backend="openai_compat", out=str(tmp_path)
    )

    async def twice() -> str:
        client = await connect(temporal_server)
        await start_batch(client, job, "test-dup-id")
        try:
            await start_batch(client, job, "test-dup-id")
        except BatchInputError as exc:
            return str(exc)
        finally:
            await client.get_workflow_handle("test-dup-id").terminate()
        return ""

    message = asyncio.run(twice())
    assert "batch id 'test-dup-id' exists" in message
    assert "\n" not in message

    questions = tmp_path / "q.txt"
    questions.write_text("Q?\n", encoding="utf-8")
    for argv in (
        ["batch", "status", "nope", "--temporal", "127.0.0.1:9"],
        ["refine", "--batch", str(questions), "--out", str(tmp_path / "o"),
         "--graph", str(write_tiny(tmp_path)), "-b", "openai_compat",
         "--temporal", "127.0.0.1:9"],
    ):  # fmt: skip
        result = CliRunner().invoke(app, argv, env={"AGENTPORT_ALLOW_REAL_BACKENDS": "1"})
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert "127.0.0.1:9" in lines[0]
        assert "Traceback" not in result.output


def _pad_graph(graph: Path, target_bytes: int) -> int:
    """Grow the tiny graph to *target_bytes* or more with nodes and links the refine
    questions never match (labels and paths from letters no question term holds), the way
    a real repository's graph is mostly code a question does not touch. Returns the size."""
    data = json.loads(graph.read_text(encoding="utf-8"))
    letters = "jkqwxz"

    def name(i: int) -> str:
        out = ""
        for _ in range(7):
            i, r = divmod(i, len(letters))
            out += letters[r]
        return out

    size, i = graph.stat().st_size, 0
    while size < target_bytes:
        batch = []
        for _ in range(5000):
            n = name(i)
            node = {"id": f"pad_{n}", "label": f"{n}()", "community": 7, "file_type": "code",
                    "norm_label": f"{n}()", "source_file": f"vendor/{n[:3]}/{n}.py",
                    "source_location": "L1"}  # fmt: skip
            batch.append(node)
            if i:
                data["links"].append({"source": f"pad_{name(i - 1)}", "target": node["id"],
                                      "relation": "calls", "confidence": "EXTRACTED",
                                      "confidence_score": 1.0, "weight": 1.0,
                                      "source_file": node["source_file"]})  # fmt: skip
            i += 1
        data["nodes"].extend(batch)
        size = len(json.dumps(data, separators=(",", ":")))
    graph.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    return graph.stat().st_size


def test_refine_batch_on_a_20_mb_graph_keeps_graph_json_out_of_history(
    temporal_server: str,  # noqa: F811
    workers: list[WorkerProcess],
    server: FakeModelServer,
    tmp_path: Path,
) -> None:
    """graph.json travels by reference (the workers read it under their roots): a graph
    ten times Temporal's 2 MB payload limit runs, a worker killed mid-batch included, and
    no question's history holds more than a small fraction of the graph."""
    graph = write_tiny(tmp_path)
    size = _pad_graph(graph, 20_000_000)
    qfile = tmp_path / "q.txt"
    # the last question matches nothing in the graph: it fails, and Temporal's status says so
    unmatched = "Where is the flux capacitor?"
    qfile.write_text("\n".join([*refine_questions(6), unmatched]) + "\n", encoding="utf-8")
    parsed = read_questions(qfile)
    serve_refine(server, LATENCY_S)
    job = BatchJob(
        kind="refine",
        items=[[q.id, q.line, q.text] for q in parsed.questions],
        backend="openai_compat",
        out=str(tmp_path / "reviews"),
        jobs=7,
        graph=str(graph),
        apply=True,
        allow_low=True,
        heartbeat_s=HEARTBEAT_S,
    )
    stop = threading.Event()
    killed: list[int] = []

    def kill_mid_batch() -> None:
        while not stop.wait(0.05):
            if len(server.requests) >= 6:  # every question is past its first judge call
                killed.append(len(server.requests))
                workers[0].kill()
                return

    watcher = threading.Thread(target=kill_mid_batch, daemon=True)
    watcher.start()
    try:
        final = asyncio.run(_run_batch(temporal_server, job, "test-refine-20mb", None))
    finally:
        stop.set()
        watcher.join(10)
    assert killed, "the batch ended before a worker could be killed"
    assert final.state == "completed", final
    assert (final.progress.done, final.progress.failed) == (6, 1)
    failed = [i for i in final.progress.items if i.status == "failed"]
    assert [i.question for i in failed] == [unmatched]
    assert "no node matches the question" in (failed[0].error or "")
    after = json.loads(graph.read_text(encoding="utf-8"))
    assert len([link for link in after["links"] if link["relation"] == "uses"]) == 6

    # an operator finds the failed question with the `temporal` CLI alone
    binary = temporal_binary()
    assert binary is not None
    query = 'ExecutionStatus="Failed" AND WorkflowId STARTS_WITH "test-refine-20mb."'
    listed = subprocess.run(
        [binary, "workflow", "list", "--address", temporal_server, "--query", query,
         "--output", "json"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    rows = json.loads(listed.stdout or "[]")
    assert [r["execution"]["workflowId"] for r in rows] == [f"test-refine-20mb.{failed[0].id}"]

    async def history_bytes() -> dict[str, int]:
        client = await connect(temporal_server)
        sizes = {}
        for q in parsed.questions[:6]:
            handle = client.get_workflow_handle(f"test-refine-20mb.{q.id}")
            sizes[q.id] = len((await handle.fetch_history()).to_json())
        return sizes

    per_question = asyncio.run(history_bytes())
    # the graph never crosses the wire: each history is the hops' triples and prompts
    assert max(per_question.values()) < size // 100, (size, per_question)


def _release_corpus(root: Path, documents: int) -> int:
    """*documents* release notes (about 12 KB each, so 200 are more than Temporal's 2 MB
    payload limit), each one sentence a question can find among filler. Returns the size."""
    root.mkdir()
    for i in range(documents):
        filler = "\n\n".join(
            f"Section {j} of note {i} lists housekeeping item {i * 31 + j} without news." * 6
            for j in range(28)
        )
        (root / f"release-{i}.md").write_text(
            f"# Release {i}\n\nRelease {i} changed the retry limit to {i % 7 + 2} "
            f"attempts.\n\n{filler}\n",
            encoding="utf-8",
        )
    return sum(f.stat().st_size for f in root.iterdir())


def test_corpus_research_batch_runs_on_temporal_as_it_runs_locally(
    temporal_server: str,  # noqa: F811
    workers: list[WorkerProcess],
    server: FakeModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`research --batch --corpus DIR --temporal` (the CLI as a user types it): the corpus
    stays on the workers' disk and each search or quote check is an activity; with a worker
    killed mid-batch the reports are those of the local batch on the same corpus, and no
    question's history holds more than a small part of the corpus."""
    docs = tmp_path / "docs"
    size = _release_corpus(docs, 200)
    assert size > 2_097_152
    qfile = tmp_path / "q.txt"
    qfile.write_text(
        "\n".join(f"What changed in release {i}?" for i in (3, 50, 120, 199)) + "\n",
        encoding="utf-8",
    )
    serve(server, LATENCY_S)
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(tmp_path / "worker.toml"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    common = ["research", "--batch", str(qfile), "--corpus", str(docs), "--quiet",
              "--backend", "openai_compat"]  # fmt: skip
    local = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    reference = len(server.requests)

    stop = threading.Event()
    killed: list[int] = []

    def kill_mid_batch() -> None:
        while not stop.wait(0.05):
            if len(server.requests) - reference >= reference // 3:
                killed.append(len(server.requests) - reference)
                workers[0].kill()
                return

    watcher = threading.Thread(target=kill_mid_batch, daemon=True)
    watcher.start()
    try:
        result = CliRunner().invoke(
            app,
            [*common, "--out", str(tmp_path / "temporal"), "--temporal", temporal_server,
             "--batch-id", "test-corpus"],
        )  # fmt: skip
    finally:
        stop.set()
        watcher.join(10)
    assert result.exit_code == 0, result.output
    assert killed, "the batch ended before a worker could be killed"
    assert "completed: 4 done, 0 failed" in result.stderr
    parsed = read_questions(qfile)

    def comparable(path: Path) -> str:
        # the angles search alike: which one found a passage first is a race, as is the
        # measured peak of calls in flight; sources, claims and verdicts are not
        text = _strip_duration(path.read_text(encoding="utf-8"))
        text = re.sub(r"via a\d\)", "via an angle)", text)
        return "\n".join(line for line in text.splitlines() if '"maxInFlight"' not in line)

    for q in parsed.questions:
        report = comparable(tmp_path / "temporal" / f"{q.id}.md")
        assert report == comparable(tmp_path / "local" / f"{q.id}.md")
        assert f"corpus://release-{q.text.split()[-1].rstrip('?')}.md/0" in report

    async def history_bytes() -> list[int]:
        client = await connect(temporal_server)
        return [
            len((await client.get_workflow_handle(f"test-corpus.{q.id}").fetch_history()).to_json())
            for q in parsed.questions
        ]

    per_question = asyncio.run(history_bytes())
    print(f"corpus of {size} bytes: history per question {per_question}")
    assert max(per_question) < size // 5, (size, per_question)
