"""The shared cooldown: an exhausted window reported once is known to every process until it
resets, the store survives concurrent writers and a corrupt file, and the retry policy never
calls a cooling backend nor retries a window before its reset."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from returns.result import Failure, Result, Success

from agentport import create_llm_adapter
from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    as_messages,
)
from agentport.factory import resolve_auto
from agentport.policies import (
    CooldownStore,
    CooldownStoreWarning,
    RetryingAdapter,
    RetryPolicy,
    default_store,
    state_dir,
)

pytestmark = pytest.mark.anyio
SOON = timedelta(hours=2)


def test_state_dir_follows_agentport_then_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTPORT_STATE_DIR", str(tmp_path / "mine"))
    assert state_dir() == tmp_path / "mine"
    monkeypatch.delenv("AGENTPORT_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "agentport"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the spec: absolute paths only
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state_dir() == tmp_path / "home" / ".local" / "state" / "agentport"


def test_record_read_expire_and_the_later_reset_wins(tmp_path: Path) -> None:
    store = CooldownStore(tmp_path / "c.sqlite3")
    now = datetime.now(UTC)
    assert store.active("codex") is None
    assert not store.path.exists()  # reading creates nothing
    assert store.record("codex", now + SOON, reason="usage limit", window="session")
    assert store.record("codex", now + timedelta(hours=1))  # earlier: the later one stays
    found = store.active("codex")
    assert found is not None
    assert found.until == pytest.approx(now + SOON, abs=timedelta(milliseconds=1))
    assert found.window == "session"
    assert store.active("codex", now=now + SOON + timedelta(seconds=1)) is None  # expired
    assert [c.backend for c in store.all_active()] == ["codex"]
    assert not store.record("claude", now - timedelta(seconds=1))  # already past: no-op
    with pytest.raises(ValueError, match="more than 31 days ahead"):
        store.record("claude", now + timedelta(days=400))
    with pytest.raises(ValueError, match="aware"):
        store.record("claude", datetime(2030, 1, 1))
    store.clear("codex")
    assert store.active("codex") is None


@pytest.mark.parametrize(
    "junk", [b"not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 5000]
)
def test_a_corrupt_store_is_recreated_with_a_warning_never_a_crash(
    tmp_path: Path, junk: bytes
) -> None:
    path = tmp_path / "cooldown.sqlite3"
    path.write_bytes(junk)
    store = CooldownStore(path)
    with pytest.warns(CooldownStoreWarning, match="recreated"):
        assert store.active("codex") is None
    assert (tmp_path / "cooldown.sqlite3.corrupt").exists()
    assert store.record("codex", datetime.now(UTC) + SOON)
    assert store.active("codex") is not None


def _hammer(path: str, worker: int, rounds: int) -> int:
    store = CooldownStore(Path(path))
    seen = 0
    for i in range(rounds):
        until = datetime.now(UTC) + timedelta(minutes=10 + worker * rounds + i)
        store.record(f"b{i % 3}", until, reason=f"w{worker}")
        seen += len(store.all_active())
    return seen


def test_several_processes_hammering_the_store_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cooldown.sqlite3"
    workers, rounds = 4, 40
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        counts = pool.starmap(_hammer, [(str(path), w, rounds) for w in range(workers)])
    assert all(c >= rounds for c in counts)  # every read saw at least its own write
    store = CooldownStore(path)
    latest = {c.backend: c for c in store.all_active()}
    assert sorted(latest) == ["b0", "b1", "b2"]
    # the latest reset of all writers won for each backend
    top = datetime.now(UTC) + timedelta(minutes=10 + (workers - 1) * rounds + rounds - 1)
    assert latest["b0"].until <= top
    assert max(c.until for c in latest.values()) >= top - timedelta(minutes=2)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


class _Window:
    """An adapter whose window is exhausted (`quota_exhausted` with retry_at) after *ok* calls."""

    backend = "fakecli"

    def __init__(self, ok: int = 0, reset_in: timedelta = SOON) -> None:
        self.calls = 0
        self.ok = ok
        self.reset_in = reset_in

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        self.calls += 1
        if self.calls <= self.ok:
            return Success(CompletionResponse(content="fine", backend=self.backend))
        return Failure(
            ProviderError(
                ErrorKind.quota_exhausted,
                "You've hit your usage limit.",
                backend=self.backend,
                retryable=False,
                retry_at=datetime.now(UTC) + self.reset_in,
                window="session",
            )
        )


async def test_a_window_is_not_retried_before_its_reset(tmp_path: Path) -> None:
    inner = _Window()
    llm = RetryingAdapter(inner, RetryPolicy(attempts=5, base_delay_s=0))
    result = await llm.complete(as_messages("hi"), CompletionConfig(total_timeout_s=60))
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.quota_exhausted
    assert inner.calls == 1  # the reset is 2 h away, the deadline 60 s: no retry


async def test_a_window_resetting_before_the_deadline_is_retried_after_the_reset() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    inner = _Window(reset_in=timedelta(seconds=20))
    llm = RetryingAdapter(inner, RetryPolicy(attempts=2, max_delay_s=1), sleep=sleep)
    await llm.complete(as_messages("hi"), CompletionConfig(total_timeout_s=600))
    assert inner.calls == 2
    assert len(slept) == 1
    assert 18 <= slept[0] <= 20  # until the reset, not the back-off cap of 1 s


async def test_the_first_exhausted_answer_stops_every_later_call(tmp_path: Path) -> None:
    store = CooldownStore(tmp_path / "c.sqlite3")
    inner = _Window(ok=2)
    llm = RetryingAdapter(inner, RetryPolicy(attempts=3, base_delay_s=0), cooldown=store)
    other_process = RetryingAdapter(_Window(ok=99), RetryPolicy(), cooldown=store)
    results = [await llm.complete(as_messages("hi")) for _ in range(6)]
    assert [isinstance(r, Success) for r in results] == [True, True, False, False, False, False]
    assert inner.calls == 3  # two answers, ONE exhausted answer, then nothing
    late = results[-1].failure()
    assert late.kind is ErrorKind.quota_exhausted
    assert late.details.get("cooldown") is True
    assert late.retry_at is not None
    assert "not called" in late.message
    # another adapter of the same backend (another process) is not called either
    blocked = await other_process.complete(as_messages("hi"))
    assert isinstance(blocked, Failure)
    assert other_process.inner.calls == 0  # type: ignore[attr-defined]


async def test_the_factory_wires_the_users_store_and_auto_passes_a_cooling_backend(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from agentport import factory
    from agentport.catalog import get_capability

    llm = create_llm_adapter("echo", cwd=tmp_path)
    assert isinstance(llm, RetryingAdapter)
    assert llm.cooldown is not None
    assert llm.cooldown.path == default_store().path
    assert llm.cooldown.path.parent == Path(os.environ["AGENTPORT_STATE_DIR"])  # not ~/.local
    entries = (get_capability("claude"), get_capability("codex"))
    monkeypatch.setattr(factory, "all_backends", lambda: entries)
    monkeypatch.setattr(factory, "is_installed", lambda c: True)
    assert resolve_auto() == "claude"
    default_store().record("claude", datetime.now(UTC) + SOON)
    assert resolve_auto() == "codex"
    default_store().record("codex", datetime.now(UTC) + SOON)
    assert resolve_auto() == "claude"  # all cooling: the first one; its calls say why
