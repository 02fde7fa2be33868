"""Warm claude processes (`[llm] warm = N`, `warm_processes`): a call takes an idle process,
starts a fresh conversation on it (`/clear`) in an emptied folder, and runs its turn; nothing
of one call's conversation or files reaches the next; a process that saw an error, failed its
reset, died, or was cancelled is never reused; calls started differently never share one.
Against tests/fixtures/fake_clis/fake_claude_live.py; the real claude is in
tests/contract/test_claude_warm_contract.py."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Failure

from _fake_clis_util import FAKE_CLIS, live_processes_with
from agentport.backends import CliAdapter
from agentport.core import CompletionConfig, ErrorKind, Message, as_messages
from agentport.factory import create_llm_adapter
from agentport.transport import warm_processes

FAKE = FAKE_CLIS / "fake_claude_live.py"


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    exe = tmp_path / "claude"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(0o755)
    path = tmp_path / "received.jsonl"
    monkeypatch.setenv("FAKE_RECORD", str(path))
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    return path


def claude(record: Path, **settings: Any) -> CliAdapter:
    exe = record.parent / "claude"
    adapter = create_llm_adapter("claude", retry=False, claude={"executable": str(exe)}, **settings)
    assert isinstance(adapter, CliAdapter)
    return adapter


def seen(record: Path) -> list[dict[str, Any]]:
    """What the fake received: a {"pid", "prompt", "argv"} per input line."""
    lines = record.read_text().splitlines() if record.exists() else []
    return [json.loads(line) for line in lines]


async def ask(
    adapter: CliAdapter, text: str | list[Message], config: CompletionConfig | None = None
) -> tuple[str, int]:
    """(answer, pid) of one successful call."""
    response = (await adapter.complete(as_messages(text), config)).unwrap()
    assert response.raw is not None
    return response.content, int(response.raw.extra["pid"])


@pytest.mark.anyio
async def test_warm_calls_share_one_process_and_no_conversation(record: Path) -> None:
    adapter = claude(record, warm=2)
    answers = [await ask(adapter, f"question {i}") for i in range(3)]
    # the fake answers with its conversation's prompts so far: each call saw only its own
    assert [a[0] for a in answers] == ["question 0", "question 1", "question 2"]
    assert len({a[1] for a in answers}) == 1
    assert [line["prompt"] for line in seen(record)] == [
        "question 0", "/clear", "question 1", "/clear", "question 2",
    ]  # fmt: skip
    assert live_processes_with(str(record)) != []  # kept warm between calls
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_no_file_of_an_earlier_call_is_in_the_next_ones_folder(record: Path) -> None:
    adapter = claude(record, warm=1)
    first = await ask(adapter, "write secret.txt")
    listing = await ask(adapter, "list")
    assert listing == ("(empty)", first[1])  # the same process, an emptied folder
    await adapter.aclose()


@pytest.mark.anyio
async def test_a_call_with_its_own_cwd_runs_there_and_keeps_its_files(
    record: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.txt").write_text("keep")
    adapter = claude(record, warm=1)
    config = CompletionConfig(cwd=work)
    _, pid = await ask(adapter, "write made.txt", config)
    assert await ask(adapter, "list", config) == ("made.txt,mine.txt", pid)
    _, other = await ask(adapter, "list")  # no cwd: another configuration, another process
    assert other != pid
    await adapter.aclose()


@pytest.mark.anyio
async def test_calls_started_differently_never_share_a_process(record: Path) -> None:
    adapter = claude(record, warm=2)
    plain = await ask(adapter, "q")
    system = [Message.system("be terse"), Message.user("q")]
    with_system = await ask(adapter, system)
    with_model = await ask(adapter, "q", CompletionConfig(model="other"))
    assert len({plain[1], with_system[1], with_model[1]}) == 3
    assert (await ask(adapter, system))[1] == with_system[1]
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_a_failed_call_closes_its_process(record: Path) -> None:
    adapter = claude(record, warm=1)
    _, pid = await ask(adapter, "warm it")
    failed = await adapter.complete(as_messages("fail"))
    assert isinstance(failed, Failure)
    assert failed.failure().kind is ErrorKind.server_error
    _, again = await ask(adapter, "after")
    assert again != pid
    assert pid not in live_processes_with(str(record))
    await adapter.aclose()


@pytest.mark.anyio
async def test_a_process_that_dies_mid_call_fails_that_call_only(record: Path) -> None:
    adapter = claude(record, warm=1)
    await ask(adapter, "warm it")
    died = await adapter.complete(as_messages("die"))
    assert isinstance(died, Failure)
    assert died.failure().exit_code == 3
    assert (await ask(adapter, "after"))[0] == "after"
    await adapter.aclose()


@pytest.mark.anyio
async def test_a_process_whose_reset_is_not_confirmed_is_replaced(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NO_CLEAR", "1")
    adapter = claude(record, warm=1)
    _, pid = await ask(adapter, "first")
    answer, again = await ask(adapter, "second")
    assert (answer, again != pid) == ("second", True)  # not "first | /clear | second"
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_a_process_killed_while_idle_is_replaced(record: Path) -> None:
    adapter = claude(record, warm=1)
    _, pid = await ask(adapter, "one")
    os.killpg(pid, signal.SIGKILL)
    with anyio.fail_after(10):
        while pid in live_processes_with(str(record)):  # noqa: ASYNC110 - polling /proc
            await anyio.sleep(0.02)
    answer, again = await ask(adapter, "two")
    assert (answer, again != pid) == ("two", True)
    await adapter.aclose()


@pytest.mark.anyio
async def test_a_cancelled_call_closes_its_process(record: Path) -> None:
    adapter = claude(record, warm=2)
    await ask(adapter, "warm it")
    with anyio.move_on_after(0.0):
        await adapter.complete(as_messages("never finished"))
    with anyio.fail_after(10):
        while len(live_processes_with(str(record))) > 1:  # noqa: ASYNC110 - polling /proc
            await anyio.sleep(0.02)
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_cold_without_warm_and_for_a_resumed_session(record: Path) -> None:
    cold = claude(record)  # warm unset, outside a warm_processes block
    pids = {(await ask(cold, "q"))[1] for _ in range(2)}
    assert len(pids) == 2
    warm = claude(record, warm=1)
    _, pid = await ask(warm, "q")
    await ask(warm, "resumed", CompletionConfig(session_id="abc"))
    # a resumed session runs cold, one-shot: `--resume` never reaches a warm process
    resumed = [line for line in seen(record) if line["prompt"] == "resumed"]
    assert [line["pid"] != pid for line in resumed] == [True]
    assert "--resume=abc" in resumed[0]["argv"]
    assert "--input-format=stream-json" not in resumed[0]["argv"]
    assert (await ask(warm, "q"))[1] == pid
    await warm.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_a_warm_processes_block_owns_its_processes(record: Path) -> None:
    adapter = claude(record)  # warm unset: the block decides
    async with warm_processes(2):
        pids = {(await ask(adapter, f"q{i}"))[1] for i in range(3)}
        assert len(pids) == 1
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["the reset", "the turn"])
async def test_a_warm_call_ends_within_its_deadline(
    record: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # the call's whole budget covers the fresh conversation's reset and its turn, and a
    # timed-out process is torn down at once, not waited for
    if where == "the reset":
        monkeypatch.setenv("FAKE_CLEAR_DELAY", "20")
    adapter = claude(record, warm=1)
    await ask(adapter, "warm it")
    started = anyio.current_time()
    prompt = "q" if where == "the reset" else "hang"
    result = await adapter.complete(as_messages(prompt), CompletionConfig(total_timeout_s=1.5))
    elapsed = anyio.current_time() - started
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.timeout
    assert elapsed < 1.5 + 1.0
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
@pytest.mark.parametrize("wrapped", ["retry policy", "failover chain", "budget"])
async def test_the_adapters_users_hold_close_their_warm_processes(
    record: Path, wrapped: str
) -> None:
    # `await adapter.aclose()` on what the factory hands out (its default retry policy, a
    # chain) or a workflow wraps it in (a budget), not only on the bare CliAdapter
    from agentport.policies import Budget, BudgetAdapter

    options = {"executable": str(record.parent / "claude")}
    if wrapped == "failover chain":
        adapter: Any = create_llm_adapter(["claude", "echo"], warm=1, claude=options)
    else:
        adapter = create_llm_adapter("claude", warm=1, claude=options)
    if wrapped == "budget":
        adapter = BudgetAdapter(adapter, Budget(calls=10))
    pids = set()
    for i in range(2):
        response = (await adapter.complete(as_messages(f"q{i}"))).unwrap()
        pids.add(response.raw.extra["pid"])
    assert len(pids) == 1
    assert live_processes_with(str(record)) != []
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


@pytest.mark.anyio
async def test_a_warm_process_that_died_reports_its_stderr_even_when_read_late(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentport.transport import _live

    drain = _live.drain

    async def late(*args: Any) -> None:
        await anyio.sleep(0.2)
        await drain(*args)

    monkeypatch.setattr(_live, "drain", late)
    adapter = claude(record, warm=1)
    await ask(adapter, "warm it")
    failed = await adapter.complete(as_messages("die"))
    assert isinstance(failed, Failure)
    assert "fatal: the fake died" in (failed.failure().stderr_tail or "")
    await adapter.aclose()
