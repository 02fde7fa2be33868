"""Warm codex processes (`codex app-server`): the process is opened once (`initialize`), each
call runs on a thread of its own in its own folder, a request of codex's is answered (never
left waiting), a process that saw an error, died or was cancelled is never reused, and calls
codex's app-server may not understand run cold. Against
tests/fixtures/fake_clis/fake_codex_app.py; the real codex is in
tests/contract/test_codex_warm_contract.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Failure

from _fake_clis_util import FAKE_CLIS, live_processes_with
from agentport.backends import CliAdapter
from agentport.core import CompletionConfig, ErrorKind, as_messages
from agentport.factory import create_llm_adapter

FAKE = FAKE_CLIS / "fake_codex_app.py"
pytestmark = pytest.mark.anyio


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    exe = tmp_path / "codex"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(0o755)
    path = tmp_path / "received.jsonl"
    monkeypatch.setenv("FAKE_RECORD", str(path))
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    return path


def codex(record: Path, extra_args: tuple[str, ...] = (), **settings: Any) -> CliAdapter:
    options = {"executable": str(record.parent / "codex"), "extra_args": list(extra_args)}
    adapter = create_llm_adapter("codex", retry=False, codex=options, **settings)
    assert isinstance(adapter, CliAdapter)
    return adapter


def seen(record: Path) -> list[dict[str, Any]]:
    lines = record.read_text().splitlines() if record.exists() else []
    return [json.loads(line) for line in lines]


async def ask(adapter: CliAdapter, text: str) -> tuple[str, int]:
    response = (await adapter.complete(as_messages(text))).unwrap()
    assert response.raw is not None
    return response.content, int(response.raw.extra["pid"])


async def test_warm_calls_share_one_process_each_on_its_own_thread(record: Path) -> None:
    adapter = codex(record, warm=2)
    answers = [await ask(adapter, f"question {i}") for i in range(3)]
    # the fake answers with its thread's prompts so far: each call saw only its own
    assert [a[0] for a in answers] == ["question 0", "question 1", "question 2"]
    assert len({a[1] for a in answers}) == 1
    methods = [line["method"] for line in seen(record)]
    assert methods == ["initialize", "initialized"] + ["thread/start", "turn/start"] * 3
    assert "app-server" in seen(record)[0]["argv"]
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


async def test_each_call_runs_in_a_folder_of_its_own(record: Path) -> None:
    adapter = codex(record, warm=1)
    _, pid = await ask(adapter, "write secret.txt")
    assert await ask(adapter, "list") == ("(empty)", pid)
    await adapter.aclose()


async def test_a_request_of_codexs_is_answered_not_left_waiting(record: Path) -> None:
    adapter = codex(record, warm=1)
    with anyio.fail_after(20):
        text, _ = await ask(adapter, "ask")
    assert text.startswith("answered: ")
    assert "not served" in text
    await adapter.aclose()


@pytest.mark.parametrize("prompt", ["fail", "die"])
async def test_a_failed_turn_closes_its_process(record: Path, prompt: str) -> None:
    adapter = codex(record, warm=1)
    _, pid = await ask(adapter, "warm it")
    failed = await adapter.complete(as_messages(prompt))
    assert isinstance(failed, Failure)
    if prompt == "fail":  # the turn's own error, as `codex exec` reports it
        assert failed.failure().kind is ErrorKind.server_error
    _, after = await ask(adapter, "again")
    assert after != pid
    await adapter.aclose()
    assert live_processes_with(str(record)) == []


async def test_a_cancelled_call_closes_its_process(record: Path) -> None:
    adapter = codex(record, warm=2)
    await ask(adapter, "warm it")
    with anyio.move_on_after(0.5):
        await adapter.complete(as_messages("slow"))
    with anyio.fail_after(10):
        while len(live_processes_with(str(record))) > 0:  # noqa: ASYNC110 - polling /proc
            await anyio.sleep(0.02)
    await adapter.aclose()


async def test_calls_app_server_may_not_understand_run_cold(record: Path) -> None:
    adapter = codex(record, extra_args=("--oss",), warm=1)
    pids = {(await ask(adapter, "q"))[1] for _ in range(2)}
    assert len(pids) == 2
    assert all("exec" in line["argv"] for line in seen(record))
    resumed = codex(record, warm=1)
    response = await resumed.complete(as_messages("q"), CompletionConfig(session_id="abc"))
    assert "resume" in seen(record)[-1]["argv"]
    assert response.unwrap().content
    await adapter.aclose()
    await resumed.aclose()


async def test_a_warm_call_ends_within_its_deadline(record: Path) -> None:
    adapter = codex(record, warm=1)
    await ask(adapter, "warm it")
    started = anyio.current_time()
    config = CompletionConfig(total_timeout_s=1.5)
    result = await adapter.complete(as_messages("slow"), config)
    elapsed = anyio.current_time() - started
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.timeout
    assert elapsed < 1.5 + 1.0
    await adapter.aclose()
    assert live_processes_with(str(record)) == []
