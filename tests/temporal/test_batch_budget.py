"""A budget for a whole batch:
at a ceiling no new question starts, the questions in flight end partial, the rest are
"not run (budget)" in summary.md and batch.json, exit code 3, the call ceiling is never
passed, and a rerun with a bigger budget continues from what the batch spent — locally and
on a real Temporal server (the batch workflow grants each question a share)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import agentport.factory
from _batch_model import API_KEY, refine_answer, refine_questions, serve_refine
from _deep_research_util import PASS, scope
from _deeprefine_util import write_tiny
from _extras import needs_temporal
from _temporal_server import WorkerProcess, temporal_server  # noqa: F401
from agentport.cli import app
from agentport.testing import Call, FakeModelServer, ScriptedAdapter
from agentport.workflows.batch import question_id, read_questions, refine_batch, research_batch

runner = CliRunner()


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = tmp_path / "agentport-config.toml"
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))


def _research_model() -> ScriptedAdapter:
    llm = ScriptedAdapter()
    llm.add(scope(3), label="scope")
    llm.add({"results": [{"url": "[1]", "title": "t", "relevance": "high"}]}, label="search")
    claim = {"claim": "Retries back off.", "quote": "exponential backoff", "importance": "central"}
    llm.add({"sourceQuality": "primary", "claims": [claim]}, label="extract")
    llm.add(PASS, label="verify")
    llm.add(
        {"summary": "retries back off", "findings": [], "caveats": "c", "openQuestions": []},
        label="synthesis",
    )
    return llm


def _statuses(out: Path) -> list[str]:
    state = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    return [item["status"] for item in state["items"]]


def test_a_local_research_batch_stops_at_its_budget_and_a_bigger_one_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "retry.md").write_text("The retry waits with exponential backoff.", encoding="utf-8")
    questions = tmp_path / "q.txt"
    questions.write_text("".join(f"How do retries wait, case {i}?\n" for i in range(6)), "utf-8")
    # the whole batch without a budget: what it costs
    reference = _research_model()
    parsed = read_questions(questions)
    full = anyio.run(lambda: _reference_research(parsed, tmp_path, reference, docs))
    assert full.done == 6
    total = len(reference.calls)
    half = total // 2

    out = tmp_path / "reports"
    argv = ["research", "--batch", str(questions), "--out", str(out), "--corpus", str(docs),
            "-b", "scripted", "--jobs", "2"]  # fmt: skip
    first = _research_model()
    monkeypatch.setattr(agentport.factory, "create_llm_adapter", lambda *_a, **_k: first)
    result = runner.invoke(app, [*argv, "--budget", f"calls={half}"])
    assert result.exit_code == 3, result.output
    assert len(first.calls) == half  # the batch's call ceiling is never passed
    statuses = _statuses(out)
    assert "not_run" in statuses  # no new question started after the ceiling
    assert "done" in statuses
    assert set(statuses) <= {"done", "partial", "not_run"}
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "not run (budget)" in summary
    state = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    assert state["extra"]["budget"]["spent"]["calls"] == half
    for item in state["items"]:
        done = (out / f"{item['id']}.md").exists()
        assert done == (item["status"] == "done")  # a partial report is never taken as done
        if item["status"] == "partial":
            partial = (out / f"{item['id']}.partial.md").read_text(encoding="utf-8")
            assert "Budget reached" in partial
    assert "budget reached" in result.stderr
    assert "bigger --budget" in result.stderr

    # the same budget again: the batch already spent it, so nothing runs
    again = _research_model()
    monkeypatch.setattr(agentport.factory, "create_llm_adapter", lambda *_a, **_k: again)
    result = runner.invoke(app, [*argv, "--budget", f"calls={half}"])
    assert result.exit_code == 3, result.output
    assert again.calls == []

    # a bigger budget continues where the batch stopped and finishes it
    second = _research_model()
    monkeypatch.setattr(agentport.factory, "create_llm_adapter", lambda *_a, **_k: second)
    result = runner.invoke(app, [*argv, "--budget", f"calls={2 * total}"])
    assert result.exit_code == 0, result.output
    assert _statuses(out) == ["done"] * 6
    done_first = statuses.count("done")
    assert len(second.calls) == total // 6 * (6 - done_first)  # finished questions not redone
    for q in parsed.questions:
        assert (out / f"{q.id}.md").exists()


def _corpus_config() -> Any:
    from agentport.workflows.deep_research import ResearchConfig

    return ResearchConfig()


async def _reference_research(parsed: Any, tmp_path: Path, llm: ScriptedAdapter, docs: Path) -> Any:
    from agentport.workflows.deep_research import load_corpus

    corpus = load_corpus(docs).unwrap()
    return await research_batch(parsed, tmp_path / "ref", llm, _corpus_config(), corpus=corpus)


def _refine_model() -> ScriptedAdapter:
    def answer(call: Call) -> str:
        system = " ".join(m.content for m in call.messages if m.role == "system")
        return refine_answer(system, call.prompt)

    return ScriptedAdapter(default=answer)


def test_a_refine_batch_at_its_budget_keeps_partial_traces_and_applies_nothing_partial(
    tmp_path: Path,
) -> None:
    from agentport.policies import Budget

    graph = write_tiny(tmp_path)
    questions = tmp_path / "q.txt"
    questions.write_text("\n".join(refine_questions(4)) + "\n", encoding="utf-8")
    parsed = read_questions(questions)
    llm = _refine_model()
    ref = anyio.run(lambda: refine_batch(parsed, tmp_path / "ref", llm, graph, jobs=1))
    assert ref.done == 4
    per_question = len(llm.calls) // 4
    graph = write_tiny(tmp_path / "fresh")
    before = graph.read_bytes()
    budget = Budget(calls=per_question + per_question // 2)  # one question and a half
    llm = _refine_model()
    summary = anyio.run(
        lambda: refine_batch(
            parsed,
            tmp_path / "out",
            llm,
            graph,
            apply=True,
            allow_low=True,
            jobs=1,
            budget=budget,
        )
    )
    assert (summary.done, summary.partial, summary.not_run) == (1, 1, 2)
    assert summary.budget_reached is not None
    assert summary.budget_reached.startswith("calls")
    assert len(llm.calls) == budget.calls
    after = json.loads(graph.read_text(encoding="utf-8"))
    added = [link for link in after["links"] if link["relation"] == "uses"]
    assert len(added) == 1  # only the finished question was applied
    assert graph.read_bytes() != before
    partial = next((tmp_path / "out").glob("*.partial.md")).read_text(encoding="utf-8")
    assert "Partial trace" in partial
    assert "graph.json was not modified" in partial
    assert list((graph.parent / ".deeprefine").glob("loop_trace_*.partial.json"))


# ── the batch workflow's pool (pure, deterministic) ──


@settings(max_examples=60, deadline=None)
@given(
    needs=st.lists(st.integers(1, 9), min_size=1, max_size=8),
    ceiling=st.integers(1, 40),
    jobs=st.integers(1, 4),
)
@needs_temporal
def test_the_pool_never_grants_past_the_ceiling_and_serves_questions_in_order(
    needs: list[int], ceiling: int, jobs: int
) -> None:
    from agentport.temporal._budget import BudgetPool

    async def wait(predicate: Any) -> None:
        while not predicate():  # noqa: ASYNC110 (workflow.wait_condition stand-in)
            await asyncio.sleep(0)

    async def run() -> tuple[BudgetPool, list[str]]:
        pool = BudgetPool(
            {"ceilings": {"calls": ceiling}, "spent": {}, "worst_calls": 9}, lambda: 0.0, wait
        )
        slots = asyncio.Semaphore(jobs)
        outcomes = [""] * len(needs)

        async def one(i: int) -> None:
            async with slots:
                allowance = await pool.acquire()
                if allowance is None:
                    outcomes[i] = "not_run"
                    return
                used = min(needs[i], allowance["calls"])
                for _ in range(used):
                    await asyncio.sleep(0)
                outcomes[i] = "done" if used == needs[i] else "partial"
                pool.release(allowance, {"calls": used})

        await asyncio.gather(*(one(i) for i in range(len(needs))))
        return pool, outcomes

    pool, outcomes = asyncio.run(run())
    assert pool.spent["calls"] <= ceiling
    assert pool.reserved == 0
    assert pool.running == 0
    if sum(needs) <= ceiling:
        assert outcomes == ["done"] * len(needs)
    if "partial" in outcomes or "not_run" in outcomes:
        assert pool.spent["calls"] == ceiling  # cut only when the batch's calls are gone
    # first come, first served: finished questions, at most one cut short, then the rest
    assert re.fullmatch(r"(d)*p?n*", "".join(o[0] for o in outcomes))


# ── on a real Temporal server ──


def _worker(address: str, tmp: Path, server: FakeModelServer) -> WorkerProcess:
    """`agentport worker` for openai_compat, its config pointing at the fake server."""
    config = tmp / "worker.toml"
    config.write_text(
        f'[llm.openai_compat]\nbase_url = "{server.openai_base_url}"\napi_key = "{API_KEY}"\n',
        encoding="utf-8",
    )
    return WorkerProcess(address, tmp, config)


@pytest.fixture
def fake_refine_server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        serve_refine(server)
        yield server


@pytest.mark.slow
def test_a_temporal_refine_batch_stops_at_its_budget_and_a_bigger_one_finishes_it(
    tmp_path: Path,
    fake_refine_server: FakeModelServer,
    temporal_server: str,  # noqa: F811
) -> None:
    pytest.importorskip("temporalio")
    address = temporal_server
    server = fake_refine_server
    graph = write_tiny(tmp_path)
    questions = tmp_path / "q.txt"
    texts = refine_questions(6)
    questions.write_text("\n".join(texts) + "\n", encoding="utf-8")
    # what one question costs on this model (the local batch, same answers)
    ref_graph = write_tiny(tmp_path / "ref")
    llm = _refine_model()
    parsed = read_questions(questions)
    anyio.run(lambda: refine_batch(parsed, tmp_path / "r", llm, ref_graph))
    per_question = len(llm.calls) // 6
    half = 3 * per_question + per_question // 2  # three questions and a half

    worker = _worker(address, tmp_path, server)
    try:
        out = tmp_path / "reviews"
        argv = ["refine", "--batch", str(questions), "--out", str(out), "--graph", str(graph),
                "-b", "openai_compat", "--temporal", address, "--jobs", "3", "-q"]  # fmt: skip
        env = {"AGENTPORT_ALLOW_REAL_BACKENDS": "1"}
        result = runner.invoke(
            app, [*argv, "--budget", f"calls={half}", "--batch-id", "budget-1"], env=env
        )
        assert result.exit_code == 3, result.output
        made = [r for r in server.requests if not r.is_side]
        assert len(made) <= half  # the batch's call ceiling is never passed
        statuses = _statuses(out)
        # 3 questions and a half: in order, three done, one cut short, two not started
        assert statuses == ["done"] * 3 + ["partial"] + ["not_run"] * 2
        assert "not run (budget)" in (out / "summary.md").read_text(encoding="utf-8")
        state = json.loads((out / "batch.json").read_text(encoding="utf-8"))
        assert state["extra"]["budget"]["spent"]["calls"] == len(made)

        result = runner.invoke(
            app, [*argv, "--budget", f"calls={10 * per_question}", "--batch-id", "budget-2"],
            env=env,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert _statuses(out) == ["done"] * 6
        for text in texts:
            assert (out / f"{question_id(text)}.md").exists()
    finally:
        worker.stop()


@pytest.mark.parametrize("spec", ["calls=0", "calls=-3", "cals=5", "calls=1.5"])
@pytest.mark.parametrize("command", ["research", "refine"])
def test_a_bad_batch_budget_is_one_line_before_anything_runs(
    tmp_path: Path, spec: str, command: str
) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("Q?\n", encoding="utf-8")
    argv = [command, "--batch", str(questions), "--out", str(tmp_path / "o"), "--budget", spec]
    if command == "refine":
        argv += ["--graph", str(write_tiny(tmp_path))]
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "--budget" in lines[0]
    assert not (tmp_path / "o").exists()


@needs_temporal
def test_the_wall_budget_on_temporal_stops_new_questions_and_new_calls() -> None:
    # workflow.now() stands still in a workflow task; here a list plays the clock
    from agentport.core import ErrorKind, Message
    from agentport.temporal._budget import AllowanceAdapter, BudgetPool

    clock = [100.0]

    async def never(_predicate: Any) -> None:
        raise AssertionError("a wall ceiling never waits")

    async def run() -> tuple[Any, Any, Any, Any]:
        pool = BudgetPool({"ceilings": {"deadline_s": 60}}, lambda: clock[0], never)
        allowance = await pool.acquire()
        assert allowance is not None
        adapter = AllowanceAdapter(ScriptedAdapter(default="ok"), allowance, lambda: clock[0])
        before = await adapter.complete([Message(role="user", content="q")])
        clock[0] = 160.0
        after = await adapter.complete([Message(role="user", content="q")])
        pool.release(allowance, {"calls": adapter.calls})
        return before, after, await pool.acquire(), pool

    before, after, late, pool = asyncio.run(run())
    assert before.unwrap().content == "ok"
    assert after.failure().kind is ErrorKind.budget_exhausted
    assert "wall" in after.failure().message
    assert late is None  # no question starts after the wall deadline
    assert pool.reached.startswith("deadline_s 60")
