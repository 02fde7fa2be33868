"""The adaptive concurrency window through the policy layer, the way a caller uses it: the
window bounds the attempts in flight; a 429 halves it for every process of the user (the
shared store); an exhausted quota is recorded as a cooldown and leaves the window alone; a
cancelled call and a crashed process give their slots back; every backend of the catalog
has a window that starts where its kind's limits are known (agent CLIs: 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Failure, Result, Success

from agentport import create_llm_adapter
from agentport.catalog import all_backends
from agentport.core import (
    AgentEvent,
    BackendKind,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    RuntimeHandle,
)
from agentport.policies import (
    ConcurrencyGate,
    CooldownStore,
    GatedRuntime,
    RetryingAdapter,
    RetryPolicy,
    gate_key,
    windows,
)
from agentport.policies._pressure import enter
from agentport.testing import ConcurrencyLimit, FakeModelServer


class _Probe:
    """An adapter that counts the calls in flight and answers from a list of outcomes."""

    backend = "probe"

    def __init__(self, answers: Sequence[ProviderError | None] = (), hold_s: float = 0.02):
        self.answers = list(answers)
        self.hold_s = hold_s
        self.now = self.peak = self.calls = 0

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        self.calls += 1
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await anyio.sleep(self.hold_s)
        finally:
            self.now -= 1
        error = self.answers.pop(0) if self.answers else None
        if error is not None:
            return Failure(error)
        return Success(CompletionResponse(content="ok", backend="probe"))


def _gate(store: CooldownStore, initial: int = 2, maximum: int = 4) -> ConcurrencyGate:
    return ConcurrencyGate("probe", initial=initial, maximum=maximum, store=store)


def _retrying(probe: _Probe, store: CooldownStore, gate: ConcurrencyGate) -> RetryingAdapter:
    policy = RetryPolicy(attempts=1)
    return RetryingAdapter(probe, policy, cooldown=store, concurrency=gate)  # type: ignore[arg-type]


def _window(store: CooldownStore, key: str = "probe") -> tuple[int, int]:
    (row,) = [r for r in windows(store, time.time()) if r.key == key]
    return row.state.window, row.in_flight


@pytest.mark.anyio
async def test_the_window_bounds_the_attempts_in_flight(tmp_path: Path) -> None:
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    probe = _Probe()
    llm = _retrying(probe, store, _gate(store, initial=2, maximum=2))
    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(llm.complete, [Message.user("hi")])
    assert probe.calls == 10
    assert probe.peak == 2
    assert _window(store) == (2, 0)


@pytest.mark.anyio
async def test_a_429_halves_the_window_and_an_exhausted_quota_does_not(tmp_path: Path) -> None:
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    limited = ProviderError(ErrorKind.rate_limited, "too many concurrent requests", retry_after=0)
    reset = datetime.now(UTC) + timedelta(hours=2)
    exhausted = ProviderError(
        ErrorKind.quota_exhausted, "session limit", retry_at=reset, window="session"
    )
    probe = _Probe([limited, exhausted])
    llm = _retrying(probe, store, _gate(store, initial=4, maximum=8))
    assert llm.concurrency is not None
    assert (await llm.complete([Message.user("a")])).failure().kind is ErrorKind.rate_limited
    assert _window(store) == (2, 0)
    assert (await llm.complete([Message.user("b")])).failure().kind is ErrorKind.quota_exhausted
    assert _window(store) == (2, 0)  # the quota policy's business: not pressure
    (cooling,) = store.all_active()
    assert (cooling.backend, cooling.kind, cooling.window) == (
        "probe",
        "quota_exhausted",
        "session",
    )
    # the 429 is never recorded as an exhausted window
    assert all(c.kind == "quota_exhausted" and c.window == "session" for c in store.all_active())


@pytest.mark.anyio
async def test_a_cancelled_call_gives_its_slot_back(tmp_path: Path) -> None:
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    probe = _Probe(hold_s=30)
    llm = _retrying(probe, store, _gate(store, initial=1, maximum=1))
    with anyio.move_on_after(0.3):
        await llm.complete([Message.user("slow")])
    assert _window(store) == (1, 0)
    probe.hold_s = 0
    assert (await llm.complete([Message.user("next")])).unwrap().content == "ok"


_DIE = """
import os, sys, time
from pathlib import Path
from agentport.policies import CooldownStore
from agentport.policies._pressure import enter
entry = enter(CooldownStore(Path(sys.argv[1])), "probe", 1, 1, time.time())
assert entry.lease is not None
os._exit(0)  # a crash: the lease is never given back
"""

_HALVE = """
import sys
from pathlib import Path
import anyio
from returns.result import Failure
from agentport.core import ErrorKind, Message, ProviderError
from agentport.policies import ConcurrencyGate, CooldownStore, RetryingAdapter, RetryPolicy

class Limited:
    backend = "probe"
    async def complete(self, messages, config=None):
        return Failure(ProviderError(ErrorKind.rate_limited, "429", retry_after=0))

store = CooldownStore(Path(sys.argv[1]))
gate = ConcurrencyGate("probe", initial=4, maximum=8, store=store)
llm = RetryingAdapter(Limited(), RetryPolicy(attempts=1), cooldown=store, concurrency=gate)
anyio.run(llm.complete, [Message.user("x")])
"""


def _run_process(code: str, path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_the_window_is_shared_by_the_users_processes(tmp_path: Path) -> None:
    path = tmp_path / "state" / "cooldown.sqlite3"
    store = CooldownStore(path)
    _run_process(_HALVE, path)
    assert _window(store) == (2, 0)  # this process sees the other one's 429
    probe = _Probe()
    llm = _retrying(probe, store, _gate(store, initial=4, maximum=8))

    async def burst() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(llm.complete, [Message.user("hi")])

    anyio.run(burst)
    assert probe.peak <= 3  # 2, grown by one after three successes at most


def test_a_slot_of_a_process_that_died_is_given_back(tmp_path: Path) -> None:
    path = tmp_path / "state" / "cooldown.sqlite3"
    _run_process(_DIE, path)
    store = CooldownStore(path)
    entry = enter(store, "probe", 1, 1, time.time())
    assert entry.lease is not None
    assert entry.in_flight == 0


def test_every_backend_has_its_kinds_window_and_agent_clis_start_at_one() -> None:
    for capability in all_backends():
        limits = capability.concurrency
        if capability.kind is BackendKind.cli:
            assert limits is not None, capability.name
            assert limits.initial == 4, capability.name
        elif capability.kind is BackendKind.http:
            assert limits is not None, capability.name
            assert 1 < limits.initial <= limits.maximum, capability.name
        else:  # in-process and test backends are not gated
            assert limits is None, capability.name


def test_an_http_backends_window_is_per_endpoint_and_never_keeps_credentials() -> None:
    assert gate_key("codex") == "codex"
    assert gate_key("openai_compat", "http://127.0.0.1:8080/v1") == "openai_compat@127.0.0.1:8080"
    key = gate_key("openai_compat", "https://user:secret@api.example.com/v1")
    assert key == "openai_compat@api.example.com"


@pytest.mark.anyio
async def test_a_burst_against_a_hidden_limit_completes_through_the_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    limit = ConcurrencyLimit(3, service_s=0.02, retry_after=0.05)
    with FakeModelServer(default=limit, shutdown_timeout=1.0) as server:
        options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123"}
        llm = create_llm_adapter(
            "openai_compat", cwd=tmp_path, model="fake-model", openai_compat=options,
            retry_attempts=8, retry_base_delay_s=0.02, retry_max_delay_s=0.5,
        )  # fmt: skip
        results: list[Result[CompletionResponse, ProviderError]] = []

        async def one(i: int) -> None:
            results.append(await llm.complete([Message.user(f"q{i}")]))

        async with anyio.create_task_group() as tg:
            for i in range(30):
                tg.start_soon(one, i)
    assert sum(isinstance(r, Success) for r in results) == 30
    assert limit.over == 0
    store = CooldownStore()
    window, in_flight = _window(store, f"openai_compat@127.0.0.1:{server.port}")
    assert in_flight == 0
    assert 1 <= window <= 64
    assert store.all_active() == []  # no 429 became an exhausted window


def test_agentport_quota_shows_the_shared_windows() -> None:
    from typer.testing import CliRunner

    from agentport.cli import app
    from agentport.policies import Outcome, default_store
    from agentport.policies._pressure import leave

    store = default_store()  # the conftest's AGENTPORT_STATE_DIR
    now = time.time()
    entry = enter(store, "codex", 1, 8, now)
    assert entry.lease is not None
    grown = enter(store, "openai_compat@127.0.0.1:9", 8, 64, now)
    assert grown.lease is not None
    leave(
        store, "openai_compat@127.0.0.1:9", grown.lease, Outcome.pressure,
        initial=8, maximum=64, retry_after=60, now=now,
    )  # fmt: skip
    shown = CliRunner().invoke(app, ["quota", "--json"])
    assert shown.exit_code == 0, shown.output
    rows = {r["backend"]: r for r in json.loads(shown.stdout)}
    (codex,) = rows["codex"]["concurrency"]
    assert (codex["window"], codex["maximum"], codex["in_flight"]) == (1, 8, 1)
    (http,) = rows["openai_compat"]["concurrency"]
    assert (http["window"], http["decreases"], http["in_flight"]) == (4, 1, 0)
    assert http["paused_until"] is not None
    assert rows["claude"]["concurrency"] == []
    table = CliRunner().invoke(app, ["quota", "openai_compat"])
    assert "openai_compat@127.0.0.1:9" in table.stdout
    assert "4 / 64" in table.stdout


class _Turns:
    """A runtime whose turns end as scripted (None = a final event), counting the turns that
    run at once."""

    def __init__(self, ends: Sequence[ProviderError | None], hold_s: float = 0.05) -> None:
        self.ends = list(ends)
        self.hold_s = hold_s
        self.now = self.peak = 0
        self.handle = RuntimeHandle(backend="probe")
        self.started: anyio.Event | None = None

    async def __aenter__(self) -> _Turns:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def send(self, prompt: object, config: object = None) -> Any:
        return self._events()

    async def _events(self) -> Any:
        self.now += 1
        self.peak = max(self.peak, self.now)
        if self.started is not None:
            self.started.set()
        try:
            await anyio.sleep(self.hold_s)
            yield AgentEvent(type="text", content="hi")
            end = self.ends.pop(0) if self.ends else None
            if end is None:
                yield AgentEvent(type="final", content="hi")
            else:
                yield AgentEvent(type="error", is_error=True, metadata={"error": end})
        finally:
            self.now -= 1


@pytest.mark.anyio
async def test_agent_runtime_turns_share_the_window(tmp_path: Path) -> None:
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    gate = _gate(store, initial=1, maximum=1)
    inner = _Turns([])
    seen: list[str] = []

    async def turn(runtime: GatedRuntime) -> None:
        async for event in runtime.send("go"):
            seen.append(event.type)

    async with (
        GatedRuntime(inner, gate) as one,  # type: ignore[arg-type]
        GatedRuntime(inner, gate) as two,  # type: ignore[arg-type]
        anyio.create_task_group() as tg,
    ):
        for runtime in (one, two, one, two):
            tg.start_soon(turn, runtime)
    assert inner.peak == 1
    assert seen.count("final") == 4
    assert _window(store) == (1, 0)


@pytest.mark.anyio
async def test_a_runtime_turns_429_halves_the_window_and_its_quota_does_not(
    tmp_path: Path,
) -> None:
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    limited = ProviderError(ErrorKind.rate_limited, "too many concurrent requests")
    exhausted = ProviderError(ErrorKind.quota_exhausted, "weekly limit", window="weekly")
    inner = _Turns([limited, exhausted, None], hold_s=30)
    async with GatedRuntime(inner, _gate(store, initial=4, maximum=8)) as runtime:  # type: ignore[arg-type]
        inner.hold_s = 0
        assert [e.type async for e in runtime.send("a")][-1] == "error"
        assert _window(store) == (2, 0)
        assert [e.type async for e in runtime.send("b")][-1] == "error"
        assert _window(store) == (2, 0)
        inner.hold_s = 30  # a long turn, cancelled when the runtime's block ends
        inner.started = anyio.Event()
        stream = runtime.send("c")
        with anyio.fail_after(10):
            await inner.started.wait()
        assert _window(store) == (2, 1)
        await stream.aclose()  # type: ignore[attr-defined]
    assert _window(store) == (2, 0)  # its slot given back


def test_the_factory_gates_an_agent_clis_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentport import create_agent_runtime

    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    runtime = create_agent_runtime("codex")
    assert isinstance(runtime, GatedRuntime)
    assert (runtime.gate.key, runtime.gate.initial) == ("codex", 4)


@pytest.mark.anyio
async def test_calls_cancelled_while_waiting_or_entering_leak_no_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentport.policies._concurrency as gate_module

    def slow_enter(*args: Any) -> Any:  # a busy store: cancellations land mid-transaction
        time.sleep(0.02)
        return enter(*args)

    monkeypatch.setattr(gate_module, "enter", slow_enter)
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    probe = _Probe(hold_s=0.05)
    llm = _retrying(probe, store, _gate(store, initial=2, maximum=2))

    async def one(i: int) -> None:
        with anyio.move_on_after(0.003 * i):  # cancelled at every stage of entering
            await llm.complete([Message.user("hi")])

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(one, i)
    assert _window(store) == (2, 0)
    assert probe.peak <= 2


@pytest.mark.anyio
async def test_a_deadline_passing_while_queued_says_so(tmp_path: Path) -> None:
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    probe = _Probe(hold_s=1.0)
    llm = _retrying(probe, store, _gate(store, initial=1, maximum=1))
    quick = CompletionConfig(total_timeout_s=0.2)
    results: list[Result[CompletionResponse, ProviderError]] = []

    async def call(config: CompletionConfig | None) -> None:
        results.append(await llm.complete([Message.user("hi")], config))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, None)
        await anyio.sleep(0.05)  # the first holds the only slot
        tg.start_soon(call, quick)
    queued = next(r for r in results if isinstance(r, Failure)).failure()
    assert queued.kind is ErrorKind.timeout
    assert queued.timeout == "total"
    assert "waiting for room in the concurrency window of probe" in queued.message
    assert queued.request_sent is False
    assert probe.calls == 1
