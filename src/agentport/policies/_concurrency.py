"""Adaptive concurrency: how many calls of one backend (one account) run at once.

`ConcurrencyGate` holds one shared window (`_window`, kept in the cooldown store's file by
`_pressure`, so every process of the user on this machine sees the same window and the same
calls in flight). `RetryingAdapter(concurrency=gate)` takes a slot around every attempt it
sends: an attempt waits until the window admits it, and its outcome moves the window (a
retryable 429 or an overload halves it and its Retry-After pauses every caller; three
successes grow it by one; an exhausted quota window leaves it alone: the shared cooldown
answers that). The agent runtime takes a slot per turn (`gated_turn`).

Waiting is fair within a process: one waiter per process and key polls the store (the head
of the line), the others wait their turn locally, so a burst of 200 waiting calls costs one
SQLite transaction per poll, not 200. Cancellation is never swallowed; a slot is always given
back, in a shielded, bounded step.

The window's defaults are the catalog's (`BackendCapability.concurrency`: agent CLIs, whose
limits nobody publishes, start at 4; HTTP backends higher). A gate's key is the backend's
name, and for an HTTP backend its endpoint (`openai_compat@host:port`): two servers are two
windows.
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import anyio
import anyio.lowlevel
from returns.result import Failure, Result

from ..core import BackendCapability, ProviderError
from ._cooldown import CooldownStore
from ._pressure import Entry, enter, leave
from ._tracing import note_window
from ._window import Outcome, WindowState, outcome_of

__all__ = ["ConcurrencyGate", "Slot", "concurrency_gate", "gate_key"]

_POLL_S = 0.025  # a waiting head re-reads the shared window this often (jittered)
_LEAVE_BOUND_S = 15.0  # giving a slot back waits at most this on a busy store


@dataclass
class Slot:
    """One admitted attempt: the window it entered under and how long it waited (seconds).
    `settle(result)` records the attempt's outcome (else it leaves as `neutral`)."""

    state: WindowState
    waited_s: float
    in_flight: int
    outcome: Outcome = Outcome.neutral
    retry_after: float | None = None

    def settle(self, result: Result[object, ProviderError]) -> Outcome:
        """Note *result*'s `Outcome` (a retryable 429 or an overload is pressure; an
        exhausted quota is the quota policy's); returns it."""
        error = result.failure() if isinstance(result, Failure) else None
        self.outcome = outcome_of(error)
        self.retry_after = error.retry_after if error is not None else None
        return self.outcome


@dataclass
class _Line:
    """The waiters of one key in one event loop: only the head polls the store."""

    lock: anyio.Lock
    freed: anyio.Event = field(default_factory=anyio.Event)


class ConcurrencyGate:
    """The shared window of *key*: at most `window` attempts in flight across the user's
    processes, starting at *initial*, never above *maximum* (module docstring).

    Raises `ValueError` when *initial* or *maximum* is below 1."""

    def __init__(
        self,
        key: str,
        *,
        initial: int,
        maximum: int,
        store: CooldownStore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if initial < 1 or maximum < 1:
            raise ValueError(
                f"concurrency of {key!r}: initial={initial} and maximum={maximum} must be >= 1"
            )
        self.key = key
        self.initial = min(initial, maximum)
        self.maximum = maximum
        self.store = store
        self._clock = clock
        self._lines: dict[object, _Line] = {}

    def _line(self) -> _Line:
        token = anyio.lowlevel.current_token()  # locks and events belong to one event loop
        line = self._lines.get(token)
        if line is None:
            if len(self._lines) > 16:  # loops of finished `anyio.run`s
                self._lines.clear()
            line = self._lines[token] = _Line(anyio.Lock())
        return line

    async def _enter(self, line: _Line) -> Entry:
        while True:
            now = self._clock()
            # shielded: a lease taken in the worker thread must reach the caller's `finally`
            # (no checkpoint between here and there), never be lost to a cancellation
            with anyio.CancelScope(shield=True):
                entry = await anyio.to_thread.run_sync(
                    enter, self.store, self.key, self.initial, self.maximum, now
                )
            if entry.lease is not None:
                return entry
            wait = max(entry.state.until - now, 0.0) or _POLL_S * (0.5 + random.random())
            with anyio.move_on_after(wait):
                await line.freed.wait()  # a slot given back in this process: look again

    async def _leave(self, slot: Slot, lease: int, line: _Line) -> WindowState:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_LEAVE_BOUND_S):
            after = await anyio.to_thread.run_sync(
                lambda: leave(
                    self.store, self.key, lease, slot.outcome, initial=self.initial,
                    maximum=self.maximum, retry_after=slot.retry_after, now=self._clock(),
                )
            )  # fmt: skip
            line.freed.set()
            line.freed = anyio.Event()
            return after
        return slot.state

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """Wait for room in the window, hold it for the block, give it back after (with the
        outcome `Slot.settle` noted). The span of the call gets the window's attributes."""
        line = self._line()
        began = time.monotonic()
        entry: Entry | None = None
        slot: Slot | None = None
        try:
            async with line.lock:
                entry = await self._enter(line)
            slot = Slot(entry.state, time.monotonic() - began, entry.in_flight + 1)
            yield slot
        finally:
            if entry is not None and entry.lease is not None:
                held = slot or Slot(entry.state, time.monotonic() - began, entry.in_flight + 1)
                after = await self._leave(held, entry.lease, line)
                note_window(self.key, held, after)


def gate_key(backend: str, base_url: str | None = None) -> str:
    """The window's key: the backend's name, and for an HTTP backend its endpoint's host and
    port (`openai_compat@127.0.0.1:8080`): another server is another window. Credentials in
    the URL never become part of the key."""
    if not base_url:
        return backend
    host = urlsplit(base_url).netloc.rpartition("@")[2]
    return f"{backend}@{host}" if host else backend


def concurrency_gate(
    capability: BackendCapability, store: CooldownStore, base_url: str | None = None
) -> ConcurrencyGate | None:
    """The `ConcurrencyGate` of *capability*'s catalog window (`BackendCapability.concurrency`)
    in *store*, or None for a backend that is not gated."""
    limits = capability.concurrency
    if limits is None:
        return None
    key = gate_key(capability.name, base_url)
    return ConcurrencyGate(key, initial=limits.initial, maximum=limits.maximum, store=store)
