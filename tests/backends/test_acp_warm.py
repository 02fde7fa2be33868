"""Warm ACP agents (`[llm] warm = N`, `warm_processes`): a call takes an idle agent and opens
a fresh session on it; nothing of one call's conversation reaches the next; an agent that saw
an error, died while idle, or belongs to another event loop is never reused; every idle agent
ends with its pool, its block, `complete_sync`, or the host (SIGKILL included).
Against the fake ACP agent (tests/fixtures/fake_clis/fake_acp_agent.py); the real agents are
in tests/contract/test_acp_gemini_contract.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Failure

from _fake_clis_util import FAKE_CLIS, live_processes_with
from agentport.backends.acp import AcpAdapter
from agentport.core import CompletionConfig, ErrorKind, ProviderError, as_messages
from agentport.factory import complete_sync, create_llm_adapter
from agentport.transport import WORKFLOW_WARM, current_scope, warm_processes

AGENT = FAKE_CLIS / "fake_acp_agent.py"


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    path = tmp_path / "received.jsonl"
    monkeypatch.setenv("FAKE_RECORD", str(path))
    monkeypatch.setenv("FAKE_SCENARIO", "history")
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    return path


def methods(record: Path) -> list[str]:
    return [json.loads(line).get("method", "") for line in record.read_text().splitlines()]


def acp(**settings: Any) -> AcpAdapter:
    adapter = create_llm_adapter(
        "acp", retry=False, acp={"command": [sys.executable, str(AGENT)]}, **settings
    )
    assert isinstance(adapter, AcpAdapter)
    return adapter


async def ask(adapter: AcpAdapter, text: str) -> tuple[str, int, int]:
    """(answer, pid, calls the agent served) of one successful call."""
    response = (await adapter.complete(as_messages(text))).unwrap()
    extra = response.raw.extra if response.raw else {}
    return response.content, int(extra["pid"]), int(extra["agent_uses"])


@pytest.mark.anyio
async def test_warm_calls_share_one_agent_and_no_conversation(record: Path) -> None:
    adapter = acp(warm=2)
    answers = [await ask(adapter, f"question {i}") for i in range(3)]
    # the agent answers with its session's prompts so far: each call saw only its own
    assert [a[0] for a in answers] == ["question 0", "question 1", "question 2"]
    assert len({a[1] for a in answers}) == 1  # one agent ...
    assert [a[2] for a in answers] == [1, 2, 3]
    got = methods(record)
    assert got.count("initialize") == 1  # ... started once ...
    assert got.count("session/new") == 3  # ... with a fresh session for each call
    assert live_processes_with(str(record)) != []  # kept warm between calls
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_without_warm_every_call_starts_its_own_agent(record: Path) -> None:
    adapter = acp()  # warm unset, outside a warm_processes block: cold
    pids = {(await ask(adapter, "q"))[1] for _ in range(2)}
    assert len(pids) == 2
    assert methods(record).count("initialize") == 2
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_an_agent_that_saw_an_error_is_not_reused(record: Path) -> None:
    adapter = acp(warm=2)
    _, first, _ = await ask(adapter, "ok")
    failed = await adapter.complete(as_messages("FAIL please"))
    assert failed.failure().kind is ErrorKind.rate_limited
    _, after, uses = await ask(adapter, "ok again")
    assert after != first
    assert uses == 1
    assert methods(record).count("initialize") == 2
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_an_agent_that_died_while_idle_is_replaced_and_the_call_succeeds(
    record: Path,
) -> None:
    adapter = acp(warm=1)
    _, pid, _ = await ask(adapter, "one")
    os.killpg(pid, signal.SIGKILL)
    with anyio.fail_after(10):
        while pid in live_processes_with(str(record)):  # noqa: ASYNC110 - polling /proc
            await anyio.sleep(0.02)
    answer, again, uses = await ask(adapter, "two")
    assert (answer, uses) == ("two", 1)
    assert again != pid
    await adapter.aclose()


@pytest.mark.anyio
async def test_a_pool_keeps_at_most_its_size_of_idle_agents(record: Path) -> None:
    adapter = acp(warm=2)
    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(ask, adapter, f"q{i}")
    pool = adapter.warm_pool()
    assert pool is not None
    assert (pool.starts, pool.idle) == (3, 2)  # three at once; the third closed after its call
    with anyio.fail_after(10):
        while len(live_processes_with(str(record))) > 2:  # noqa: ASYNC110 - polling /proc
            await anyio.sleep(0.02)
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_a_cancelled_call_closes_its_agent(record: Path) -> None:
    adapter = acp(warm=2)
    await ask(adapter, "warm it")
    with anyio.move_on_after(0.0):
        await adapter.complete(as_messages("never finished"))
    pool = adapter.warm_pool()
    assert pool is not None
    assert pool.idle == 0
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_a_warm_processes_block_makes_calls_warm_and_closes_them(record: Path) -> None:
    adapter = acp()  # warm unset: the block's size applies
    async with warm_processes(2) as scope:
        assert current_scope() is scope
        pids = {(await ask(adapter, "q"))[1] for _ in range(3)}
        assert len(pids) == 1
        assert live_processes_with(str(record)) != []
    assert current_scope() is None
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_warm_zero_in_the_settings_wins_over_a_block(record: Path) -> None:
    adapter = acp(warm=0)
    async with warm_processes(2):
        pids = {(await ask(adapter, "q"))[1] for _ in range(2)}
    assert len(pids) == 2


@pytest.mark.anyio
async def test_a_block_closes_its_agents_when_cancelled(record: Path) -> None:
    adapter = acp()
    with anyio.CancelScope() as outer:
        async with warm_processes(1):
            await ask(adapter, "q")
            outer.cancel()
            await anyio.sleep(5)
    assert live_processes_with(str(record)) == []


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_the_end_of_its_event_loop_closes_a_pools_idle_agents(record: Path, loop: str) -> None:
    adapter = acp(warm=1)  # no block, no aclose(): as a script with its own anyio.run
    first = anyio.run(ask, adapter, "first", backend=loop)
    assert live_processes_with(str(record)) == []
    second = anyio.run(ask, adapter, "second", backend=loop)
    assert second[1] != first[1]
    assert second[2] == 1
    assert live_processes_with(str(record)) == []


def test_complete_sync_leaves_no_warm_agent(record: Path) -> None:
    result = complete_sync(
        "hello", backend="acp", retry=False, warm=2,
        acp={"command": [sys.executable, str(AGENT)]},
    )  # fmt: skip
    assert result.unwrap().content == "hello"
    assert live_processes_with(str(record)) == []


_HOST = """
import sys, anyio
from agentport.core import as_messages
from agentport.factory import create_llm_adapter

async def main():
    llm = create_llm_adapter("acp", retry=False, warm=1,
                             acp={"command": [sys.executable, sys.argv[1]]})
    (await llm.complete(as_messages("hi"))).unwrap()
    print("idle", flush=True)
    await anyio.sleep(300)

anyio.run(main, backend=sys.argv[2])
"""


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_sigkill_of_the_host_ends_its_idle_warm_agents(record: Path, loop: str) -> None:
    host = subprocess.Popen(
        [sys.executable, "-c", _HOST, str(AGENT), loop], stdout=subprocess.PIPE, text=True
    )
    try:
        assert host.stdout is not None
        assert host.stdout.readline().strip() == "idle"
        assert live_processes_with(str(record)) != []  # the idle agent
        host.kill()
        host.wait()
        deadline = time.monotonic() + 10
        while live_processes_with(str(record)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live_processes_with(str(record)) == []
    finally:
        host.kill()


class _Spy:
    """An adapter that notes the warm block each call runs in, and fails the call."""

    backend = "echo"

    def __init__(self) -> None:
        self.scopes: list[Any] = []

    async def complete(self, messages: Any, config: CompletionConfig | None = None) -> Any:
        self.scopes.append(current_scope())
        return Failure(ProviderError(ErrorKind.process_failed, "enough", retryable=False))


@pytest.mark.anyio
async def test_the_workflows_run_inside_a_warm_processes_block(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from _deeprefine_util import real_copy
    from agentport.workflows.deep_research import ResearchConfig, run_research
    from agentport.workflows.deeprefine import load_graph, run_loop

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("Retry policies back off exponentially.\n")
    spy = _Spy()
    config = ResearchConfig(CONCURRENCY=3)
    await run_research("How do retries back off?", spy, config=config, corpus=tmp_path / "corpus")
    assert spy.scopes
    assert all(s is not None and s.size == 3 for s in spy.scopes)  # one per call in flight
    spy.scopes.clear()
    project = real_copy(tmp_path_factory, tmp_path)
    graph = load_graph(project / "graphify-out" / "graph.json")
    await run_loop(spy, graph, "How does with_retry retry a ProviderError?")
    assert spy.scopes
    assert all(s is not None and s.size == WORKFLOW_WARM for s in spy.scopes)
    assert current_scope() is None


def test_warm_through_the_default_policies_and_a_failover_chain(record: Path) -> None:
    # as users build it: retries on, or a chain whose first member is the ACP agent
    command = {"command": [sys.executable, str(AGENT)]}

    async def twice(llm: Any) -> set[int]:
        pids = set()
        for text in ("one", "two"):
            response = (await llm.complete(as_messages(text))).unwrap()
            assert response.content == text
            pids.add(response.raw.extra["pid"])
        return pids

    for llm in (
        create_llm_adapter("acp", warm=1, acp=command),
        create_llm_adapter(["acp", "echo"], warm=1, acp=command),
    ):
        assert len(anyio.run(twice, llm)) == 1
        assert live_processes_with(str(record)) == []  # closed with the event loop


@pytest.mark.parametrize("backend", ["echo", "gemini", "opencode", "qwen"])
def test_warm_on_a_backend_without_warm_processes_says_so(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with pytest.warns(UserWarning, match=rf"warm = 2 has no effect on backend '{backend}'"):
        create_llm_adapter(backend, warm=2)


def test_warm_on_a_backend_that_keeps_warm_processes_or_unset_warns_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import warnings

    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        create_llm_adapter("acp", warm=2, acp={"command": ["agent"]})
        create_llm_adapter("claude", warm=2)
        create_llm_adapter("pi", warm=2)
        create_llm_adapter("codex", warm=2)
        create_llm_adapter("echo")


@pytest.mark.anyio
async def test_adapters_made_per_call_share_their_warm_agents(record: Path) -> None:
    # `await create_llm_adapter(...).complete(...)` in a loop: one agent, not one per adapter
    pids = {(await ask(acp(warm=1), f"q{i}"))[1] for i in range(3)}
    assert len(pids) == 1
    assert len(live_processes_with(str(record))) == 1  # one agent (its guardian is the host's)
    await acp(warm=1).aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_an_agent_is_reused_only_with_the_environment_it_started_with(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = acp(warm=1)
    _, first, _ = await ask(adapter, "one")
    monkeypatch.setenv("FAKE_TOKEN", "rotated")  # an allow-listed variable changed
    _, second, uses = await ask(adapter, "two")
    assert second != first
    assert uses == 1
    await adapter.aclose()
    monkeypatch.delenv("FAKE_TOKEN")
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_a_warm_call_ends_within_its_deadline(record: Path) -> None:
    # a warm agent that never answers: the call ends at its deadline, and the agent goes
    adapter = acp(warm=1)
    await ask(adapter, "warm it")
    started = anyio.current_time()
    config = CompletionConfig(total_timeout_s=1.5)
    result = await adapter.complete(as_messages("HANG"), config)
    elapsed = anyio.current_time() - started
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.timeout
    assert elapsed < 1.5 + 1.0
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


def session_cwds(record: Path) -> list[Path]:
    return [
        Path(m["params"]["cwd"])
        for m in map(json.loads, record.read_text().splitlines())
        if m.get("method") == "session/new"
    ]


@pytest.mark.anyio
async def test_warm_sessions_open_in_the_agents_own_folder_emptied_between_calls(
    record: Path,
) -> None:
    """One folder for all of a warm agent's sessions (agents set up per folder: opencode
    answers `session/new` 50x sooner in a folder it has seen), private, and emptied before
    each call: nothing an earlier call left there is seen by the next."""
    adapter = acp(warm=1)
    await ask(adapter, "first")
    (home,) = set(session_cwds(record))
    assert home.stat().st_mode & 0o077 == 0
    (home / "left-by-the-first-call.txt").write_text("secret")
    (home / "sub").mkdir()
    (home / "sub" / "deeper.txt").write_text("secret")
    (home / "link").symlink_to(record.parent)  # removed, never followed
    await ask(adapter, "second")
    assert set(session_cwds(record)) == {home}
    assert list(home.iterdir()) == []
    assert await anyio.Path(record).exists()  # the link's target is still there
    await adapter.aclose()
    assert not await anyio.Path(home).exists()


@pytest.mark.anyio
async def test_a_call_with_a_cwd_of_its_own_works_there_and_nothing_of_it_is_removed(
    record: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("keep me")
    for warm in (1, 0):
        adapter = acp(warm=warm)
        for _ in range(2):
            response = await adapter.complete(as_messages("q"), CompletionConfig(cwd=project))
            response.unwrap()
        await adapter.aclose()
    assert set(session_cwds(record)) == {project.resolve()}
    assert (project / "README.md").read_text() == "keep me"


@pytest.mark.anyio
async def test_cold_calls_each_work_in_a_folder_of_their_own_removed_after(record: Path) -> None:
    adapter = acp(warm=0)
    for _ in range(2):
        await ask(adapter, "q")
    first, second = session_cwds(record)
    assert first != second
    assert not first.exists()
    assert not second.exists()
