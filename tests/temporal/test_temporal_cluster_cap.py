"""A cluster-wide cap per backend, on a real Temporal server: however many
workers serve a backend's queue, `[temporal] cluster_concurrency` bounds the calls of that
backend running at once; a permit whose holder workflow dies is taken back; the semaphore
workflow keeps its state across continue-as-new."""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

temporalio = pytest.importorskip("temporalio", reason="needs agentport[temporal]")

import anyio  # noqa: E402
from temporalio.client import Client, WorkflowHandle  # noqa: E402
from temporalio.service import RPCError  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from _temporal_cap_probe import (  # noqa: E402
    CapCall,
    CappedCallWorkflow,
    Hold,
    PermitHolderWorkflow,
)
from agentport.config import load_settings  # noqa: E402
from agentport.core import ProviderError  # noqa: E402
from agentport.temporal import CompleteOutput, complete, queue_for, workflow_queue  # noqa: E402
from agentport.temporal._semaphore import (  # noqa: E402
    ACQUIRE_SIGNAL,
    RELEASE_SIGNAL,
    SEMAPHORE_ACTIVITIES,
    SEMAPHORE_WORKFLOW,
    PermitRelease,
    PermitRequest,
    SemaphoreState,
    SemaphoreWorkflow,
    cluster_cap_for,
    semaphore_id,
)
from agentport.temporal._workflows import workflow_runner  # noqa: E402
from agentport.testing import FakeModelServer, TextReply  # noqa: E402

LATENCY_S = 0.4  # every fake model answer takes this long
FAST = {"startup_timeout_s": 10, "idle_timeout_s": 10, "total_timeout_s": 60}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the Temporal SDK runs on asyncio only


def test_the_cap_applies_to_the_backend_its_aliases_and_chains() -> None:
    assert cluster_cap_for("codex", None) is None
    assert cluster_cap_for("codex", {"claude": 1}) is None  # unnamed: no cluster-wide cap
    assert cluster_cap_for("codex", {"codex": 2}) == 2
    assert cluster_cap_for("claude-code", {"claude": 3}) == 3  # an alias names the same queue
    assert cluster_cap_for("codex,claude", {"codex": 2, "claude": 1}) == 1  # the tightest


@given(
    st.lists(st.sampled_from(["codex", "claude", "gemini", "qwen"]), min_size=1, max_size=3,
             unique=True),
    st.dictionaries(st.sampled_from(["codex", "claude", "gemini", "qwen"]),
                    st.integers(min_value=1, max_value=50)),
)  # fmt: skip
def test_a_chain_is_capped_by_its_tightest_named_member(
    chain: list[str], caps: dict[str, int]
) -> None:
    cap = cluster_cap_for(",".join(chain), caps)
    named = [caps[n] for n in chain if n in caps]
    assert cap == (min(named) if named else None)  # never looser than any named member


def test_the_setting_is_read_from_the_user_config_and_validated(tmp_path: Path) -> None:
    _user_config("[temporal]\ncluster_concurrency = {codex = 2}\n")
    assert load_settings(tmp_path).temporal.cluster_concurrency == {"codex": 2}
    _user_config("[temporal]\ncluster_concurrency = {codex = 0}\n")
    with pytest.raises(ProviderError, match="cluster_concurrency") as caught:
        load_settings(tmp_path)
    assert "codex: must be >= 1" in str(caught.value)


@asynccontextmanager
async def cluster(address: str, *, activity_workers: int = 0) -> AsyncIterator[tuple[Client, str]]:
    """The workflow-queue worker (probe workflows + the semaphore) and *activity_workers*
    workers of the openai_compat queue, each running up to 4 calls at once (fresh prefix)."""
    client = await Client.connect(address)
    prefix = f"cap{uuid.uuid4().hex[:8]}"
    workers = [
        Worker(client, task_queue=workflow_queue(prefix),
               workflows=[CappedCallWorkflow, PermitHolderWorkflow, SemaphoreWorkflow],
               activities=SEMAPHORE_ACTIVITIES, workflow_runner=workflow_runner()),
    ] + [  # each on its own connection, as two machines would be
        Worker(await Client.connect(address), task_queue=queue_for("openai_compat", prefix),
               activities=[complete], max_concurrent_activities=4)
        for _ in range(activity_workers)
    ]  # fmt: skip
    async with anyio.create_task_group() as group:
        for worker in workers:
            group.start_soon(worker.run)
        try:
            yield client, prefix
        finally:
            for worker in workers:
                await worker.shutdown()


def _peak(arrivals: list[float], latency: float) -> int:
    """Most requests in flight at once at the server: every request is in flight for at least
    *latency* seconds after it arrives, so k arrivals within less than *latency* mean k calls
    in flight together."""
    times = sorted(arrivals)
    return max((sum(1 for u in times[i:] if u - t < latency) for i, t in enumerate(times)),
               default=0)  # fmt: skip


async def _semaphore_state(client: Client, queue: str) -> SemaphoreState:
    handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(semaphore_id(queue))
    return await handle.query(SemaphoreWorkflow.state)


@pytest.mark.anyio
async def test_two_workers_never_run_more_calls_than_the_cluster_cap(
    temporal_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers of 4 slots each (8 in the cluster), `cluster_concurrency = {openai_compat =
    2}`, ten calls at once: the model server never sees more than 2 in flight, all 10 end."""
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer(shutdown_timeout=1.0) as server:
        server.reply(TextReply("capped", delay=LATENCY_S), times=None)
        # the worker's own configuration names the endpoint and key; the input, the model
        _user_config(
            f'[llm.openai_compat]\nbase_url = "{server.openai_base_url}"\n'
            'api_key = "sk-fake-0123456789"\n'
        )
        settings = {"model": "fake-model"}
        outputs: list[CompleteOutput] = []
        async with cluster(temporal_server, activity_workers=2) as (client, prefix):

            async def one(i: int) -> None:
                args = CapCall(f"q{i}", prefix, {"openai_compat": 2}, settings, FAST)
                outputs.append(await client.execute_workflow(
                    CappedCallWorkflow.run, args, id=f"{prefix}-call-{i}",
                    task_queue=workflow_queue(prefix), result_type=CompleteOutput,
                    execution_timeout=timedelta(seconds=60),
                ))  # fmt: skip

            async with anyio.create_task_group() as calls:
                for i in range(10):
                    calls.start_soon(one, i)
            state = await _semaphore_state(client, queue_for("openai_compat", prefix))
        arrivals = [r.received_at for r in server.model_requests]
    assert [o.to_result().unwrap().content for o in outputs] == ["capped"] * 10
    assert len(arrivals) == 10  # each call made once
    assert 1 <= _peak(arrivals, LATENCY_S) <= 2
    assert (state.limit, state.holders, state.waiters) == (2, [], [])  # every permit back


@pytest.mark.anyio
async def test_a_dead_holders_permit_is_taken_back(temporal_server: str) -> None:
    """Cap 1: a holder keeps its permit for an hour and is terminated; the next requester
    gets the permit within the check interval instead of waiting for the hour."""
    async with cluster(temporal_server) as (client, prefix):
        queue = queue_for("openai_compat", prefix)
        hold = Hold(queue, workflow_queue(prefix), 1, hold_s=3600, check_s=1.0)
        dead = await client.start_workflow(
            PermitHolderWorkflow.run, hold, id=f"{prefix}-dead", task_queue=workflow_queue(prefix)
        )
        await _until(client, queue, lambda st: bool(st.holders))  # it holds the permit
        next_one = await client.start_workflow(
            PermitHolderWorkflow.run, Hold(queue, workflow_queue(prefix), 1, 0.1, check_s=1.0),
            id=f"{prefix}-next", task_queue=workflow_queue(prefix),
            result_type=list[datetime], execution_timeout=timedelta(seconds=60),
        )  # fmt: skip
        await _until(client, queue, lambda st: bool(st.waiters))  # it waits behind the holder
        await dead.terminate("the holder dies")
        got, gave_back = await next_one.result()  # not after the dead holder's hour
        state = await _semaphore_state(client, queue)
    assert got <= gave_back
    assert (state.holders, state.waiters) == ([], [])


@pytest.mark.anyio
async def test_a_cancelled_holder_gives_its_permit_back_at_once(temporal_server: str) -> None:
    """Cap 1, holder checks only hourly: a holder cancelled mid-call releases its permit on
    the way out, so the next requester runs without waiting for a check."""
    async with cluster(temporal_server) as (client, prefix):
        queue = queue_for("openai_compat", prefix)
        hourly = Hold(queue, workflow_queue(prefix), 1, hold_s=3600, check_s=3600)
        first = await client.start_workflow(
            PermitHolderWorkflow.run, hourly, id=f"{prefix}-first",
            task_queue=workflow_queue(prefix),
        )  # fmt: skip
        await _until(client, queue, lambda st: bool(st.holders))
        second = await client.start_workflow(
            PermitHolderWorkflow.run, dataclasses.replace(hourly, hold_s=0.1),
            id=f"{prefix}-second", task_queue=workflow_queue(prefix),
            result_type=list[datetime], execution_timeout=timedelta(seconds=60),
        )  # fmt: skip
        await _until(client, queue, lambda st: bool(st.waiters))
        await first.cancel()
        got, gave_back = await second.result()
        state = await _semaphore_state(client, queue)
    assert got <= gave_back
    assert (state.holders, state.waiters) == ([], [])


async def _until(client: Client, queue: str, ready: Callable[[SemaphoreState], bool]) -> None:
    """Poll the semaphore of *queue* (once it exists) until *ready* holds (30 s at most)."""
    with anyio.fail_after(30):
        while True:
            try:
                if ready(await _semaphore_state(client, queue)):
                    return
            except RPCError:  # not started yet
                pass
            await anyio.sleep(0.2)


@pytest.mark.anyio
async def test_the_semaphore_continues_as_new_without_losing_a_permit(
    temporal_server: str,
) -> None:
    """A semaphore that continues as new after 40 history events, 8 holders, cap 2: every
    holder gets a permit in turn, never more than 2 at once, across several runs."""
    async with cluster(temporal_server) as (client, prefix):
        queue = queue_for("openai_compat", prefix)
        hold = Hold(queue, workflow_queue(prefix), 2, hold_s=0.3, max_events=40)
        results: list[list[datetime]] = []

        async def one(i: int) -> None:
            results.append(await client.execute_workflow(
                PermitHolderWorkflow.run, hold, id=f"{prefix}-h{i}",
                task_queue=workflow_queue(prefix), result_type=list[datetime],
                execution_timeout=timedelta(seconds=60),
            ))  # fmt: skip

        async with anyio.create_task_group() as group:
            for i in range(8):
                group.start_soon(one, i)
        # a holder's `release` is recorded in the semaphore's history before the holder
        # returns, but the semaphore applies it in its next workflow task: wait for that (a
        # permit really lost would never come back: nobody waits, so no holder check runs)
        await _until(client, queue, lambda st: not st.holders and not st.waiters)
        handle = client.get_workflow_handle(semaphore_id(queue))
        history = [e async for e in handle.fetch_history_events()]
    assert len(results) == 8
    events = sorted([(r[0], 1) for r in results] + [(r[1], -1) for r in results])
    running, peak = 0, 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak <= 2
    # the run now answering was started by continue-as-new
    assert history[0].workflow_execution_started_event_attributes.continued_execution_run_id


def _req(name: str) -> PermitRequest:
    """A request of workflow *name*, which is not running (run ids must be UUIDs)."""
    return PermitRequest(name, str(uuid.uuid4()), "permit", 2, check_s=3600)


@pytest.mark.parametrize(
    ("signal", "gone"),
    [
        (RELEASE_SIGNAL, "h1"),  # a holder gives its permit back
        (RELEASE_SIGNAL, "w"),  # a waiter withdraws its request
        (ACQUIRE_SIGNAL, "h1"),  # a holder's request, retried
    ],
)
@pytest.mark.anyio
async def test_a_signal_that_reaches_a_new_run_first_applies_to_the_carried_state(
    temporal_server: str, signal: str, gone: str
) -> None:
    """A signal sent while the semaphore continues as new is delivered to the new run, whose
    handlers run before its `run` method: it must see the holders and waiters the run carries
    (a release landing there was lost, and its permit with it). Signal-with-start puts the
    signal in the run's first task, as that race does. Holders check hourly, so only the
    signal changes the state; the holders and the waiter are not running workflows, so a
    permit signalled to one of them is freed at once."""
    async with cluster(temporal_server) as (client, prefix):
        queue = queue_for("openai_compat", prefix)
        h1, h2, w = _req("h1"), _req("h2"), _req("w")
        carried = SemaphoreState(2, 3600, holders=[h1, h2], waiters=[w])
        arg: PermitRequest | PermitRelease = {"h1": h1, "w": w}[gone]
        if signal == RELEASE_SIGNAL:
            arg = PermitRelease(arg.holder_id, arg.holder_run_id, arg.request_id)
        await client.start_workflow(
            SEMAPHORE_WORKFLOW, carried, id=semaphore_id(queue),
            task_queue=workflow_queue(prefix), start_signal=signal, start_signal_args=[arg],
        )  # fmt: skip
        # the state it settles in: each signal handled once, and the permits of requests
        # that are not running freed (a lost release never gets there)
        expected = {
            (RELEASE_SIGNAL, "h1"): ([h2], []),  # h1's permit went to w, then was freed
            (RELEASE_SIGNAL, "w"): ([h1, h2], []),  # the holders keep their permits
            (ACQUIRE_SIGNAL, "h1"): ([h2], []),  # granted again, to no one: freed; then w's
        }[signal, gone]
        await _until(client, queue, lambda st: (st.holders, st.waiters) == expected)


@pytest.mark.anyio
async def test_a_refine_batch_from_the_command_line_obeys_the_configured_cap(
    temporal_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a user runs it: `cluster_concurrency = {openai_compat = 1}` in the config, two
    `agentport worker`s of 8 slots each, `agentport refine --batch --temporal`: every
    question is reviewed and the model server never sees two calls at once."""
    from typer.testing import CliRunner

    from _batch_model import options, refine_questions, serve_refine
    from _deeprefine_util import write_tiny
    from agentport.cli import app
    from agentport.temporal import run_worker

    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    graph = write_tiny(tmp_path / "repo")
    questions = tmp_path / "q.txt"
    questions.write_text("\n".join(refine_questions(2)) + "\n", encoding="utf-8")
    out = tmp_path / f"reviews-{uuid.uuid4().hex[:8]}"
    with FakeModelServer(shutdown_timeout=1.0) as server:
        serve_refine(server, latency_s=LATENCY_S)
        o = options(server)
        _user_config(
            "[temporal]\ncluster_concurrency = {openai_compat = 1}\n"
            f'[llm.openai_compat]\nbase_url = "{o["base_url"]}"\napi_key = "{o["api_key"]}"\n'
            'model = "fake-model"\n'
        )
        ready = anyio.Event()
        started: list[object] = []

        def on_ready(plan: object) -> None:
            started.append(plan)
            if len(started) == 2:
                ready.set()

        async with anyio.create_task_group() as group:
            for _ in range(2):  # the default prefix, as `agentport worker` without options
                group.start_soon(lambda: run_worker(
                    temporal_server, ["openai_compat"], on_ready=on_ready, roots=[tmp_path]
                ))  # fmt: skip
            await ready.wait()
            argv = [
                "refine",
                "--batch",
                str(questions),
                "--graph",
                str(graph),
                "--out",
                str(out),
                "--backend",
                "openai_compat",
                "--temporal",
                temporal_server,
                "-q",
            ]
            result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(app, argv))
            assert result.exit_code == 0, result.output
            client = await Client.connect(temporal_server)
            state = await _semaphore_state(client, queue_for("openai_compat"))
            group.cancel_scope.cancel()
        arrivals = [r.received_at for r in server.model_requests]
    assert len(list(out.glob("how-*.md"))) == 2  # every question reviewed
    assert (state.limit, state.holders, state.waiters) == (1, [], [])
    assert len(arrivals) >= 2, len(arrivals)
    assert _peak(arrivals, LATENCY_S) == 1


def _user_config(text: str) -> None:
    """Write the session's own user config (conftest points AGENTPORT_CONFIG_FILE at it)."""
    Path(os.environ["AGENTPORT_CONFIG_FILE"]).write_text(text, encoding="utf-8")
