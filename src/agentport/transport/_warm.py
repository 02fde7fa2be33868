"""Warm processes: a bounded set of started agent processes kept between calls, so a call
that finds one idle skips the agent's start-up (Node's start, the agent's own set-up: 1-5 s
for the agent CLIs, against tens of milliseconds for a turn on a warm one).

- `WarmPool(size, max_uses)`: at most *size* idle processes; `take()` hands out an idle one
  of this event loop (or None: start a fresh one), `give(item)` keeps it for the next call
  unless the pool is full, closed, the process is gone or it has served *max_uses* calls.
  A caller gives back only what ended cleanly: a process that saw any error is closed
  (`item.aclose()`), never reused. The backend gives each call a fresh conversation on the
  process it takes (for ACP: a new `session/new`).
- A process belongs to the event loop that started it (anyio's `Process`). A pool closes its
  idle processes when that loop ends: it parks an async generator in the loop, which the loop
  finalizes at its end (asyncio's `shutdown_asyncgens`, PEP 525; trio finalizes the async
  generators still alive when its run ends). A pool used from another loop first kills what
  is left of the old one's (`item.kill()`, synchronous, the whole process group).
- Pools are per configuration (a hashable key the backend derives from its options), not
  per adapter: adapters made per call share their agents. Outside a block one process-wide
  pool per key (`shared_pool`, `close_shared`); a forked child never touches its parent's.
- `warm_processes(size)`: an async context manager giving every pool made inside it a default
  size (for adapters whose `[llm] warm` is unset) and closing those pools when it exits. The
  workflows run inside one.

Teardown: each item is spawned under the runner's guardian, so an idle warm process dies with
the host even on SIGKILL (docs/runner.md); `aclose()` on a pool closes its idle processes.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Hashable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Generic, ParamSpec, Protocol, TypeVar

import anyio
import anyio.lowlevel

__all__ = [
    "DEFAULT_MAX_USES",
    "WORKFLOW_WARM",
    "IdleBudget",
    "Warm",
    "WarmPool",
    "WarmScope",
    "call_pool",
    "close_shared",
    "current_scope",
    "pool_size",
    "shared_pool",
    "warm_processes",
    "with_warm_processes",
]

DEFAULT_MAX_USES = 25  # a process that served this many calls is replaced (state it may keep)
WORKFLOW_WARM = 4  # idle agents a workflow keeps per adapter (each agent CLI: ~100-200 MB)


class Warm(Protocol):
    """What a pool keeps: a started process with a use count."""

    uses: int

    def alive(self) -> bool: ...

    def kill(self) -> None: ...

    async def aclose(self) -> None: ...


W = TypeVar("W", bound=Warm)


class IdleBudget:
    """At most *limit* idle processes across several pools (a block's, or the process-wide
    ones): a backend whose processes are started per command line (claude: the system
    prompt, schema and tools are flags) has a pool per configuration, and a workflow's
    phases would otherwise each park a pool's worth. Beyond the limit the process idle the
    longest is closed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._order: list[tuple[WarmPool[Any], Any]] = []  # oldest first

    @property
    def idle(self) -> int:
        return len(self._order)

    def forget(self, items: list[Any]) -> None:
        self._order = [entry for entry in self._order if entry[1] not in items]

    async def kept(self, pool: WarmPool[Any], item: Any) -> None:
        self._order.append((pool, item))
        while len(self._order) > self.limit:
            oldest_pool, oldest = self._order.pop(0)
            oldest_pool._idle.remove(oldest)
            if oldest_pool._loop == anyio.lowlevel.current_token():
                await oldest.aclose()
            else:  # a process-wide pool last used from another event loop
                oldest.kill()


class WarmPool(Generic[W]):
    """At most *size* idle processes (`size >= 1`), each reused for at most *max_uses* calls;
    with a *budget*, also at most its limit across the pools that share it.

    `starts` and `reuses` count what happened (for tests and `benchmarks/warm_calls.py`):
    callers call `started()` when they had to start a process."""

    def __init__(
        self, size: int, max_uses: int = DEFAULT_MAX_USES, budget: IdleBudget | None = None
    ) -> None:
        if size < 1 or max_uses < 1:
            raise ValueError("a warm pool needs size >= 1 and max_uses >= 1")
        self.size = size
        self.budget = budget
        self.max_uses = max_uses
        self.starts = 0
        self.reuses = 0
        self._idle: list[W] = []
        self._loop: Any = None
        self._pid = os.getpid()
        self._closed = False
        self._loop_end: AsyncGenerator[None, None] | None = None

    @property
    def idle(self) -> int:
        return len(self._idle)

    def _drop_idle(self) -> list[W]:
        idle, self._idle = self._idle, []
        if self.budget is not None:
            self.budget.forget(idle)
        return idle

    async def _same_loop(self) -> None:
        token = anyio.lowlevel.current_token()
        if self._loop == token and self._pid == os.getpid():
            return
        idle = self._drop_idle()
        if self._pid == os.getpid():
            for item in idle:  # their loop is gone or elsewhere: they cannot be driven here
                item.kill()
        # else: a forked child; the idle agents are its parent's, never signalled from here
        self._loop, self._pid = token, os.getpid()
        self._loop_end = self._close_at_loop_end()
        await self._loop_end.asend(None)  # parked: the loop finalizes it when it ends

    async def _close_at_loop_end(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            idle = self._drop_idle()
            with anyio.CancelScope(shield=True):
                for item in idle:
                    await item.aclose()

    async def take(self) -> W | None:
        """An idle process of this event loop, marked used; None when there is none."""
        await self._same_loop()
        while self._idle:
            item = self._idle.pop()
            if self.budget is not None:
                self.budget.forget([item])
            if item.alive():
                item.uses += 1
                self.reuses += 1
                return item
            item.kill()
        return None

    def started(self, item: W) -> None:
        """Count a process the caller started for this pool (its first use, after `take`)."""
        item.uses = 1
        self.starts += 1

    async def give(self, item: W) -> None:
        """Keep *item* (which ended its call cleanly) for the next call, or close it."""
        keep = (
            not self._closed
            and len(self._idle) < self.size
            and item.uses < self.max_uses
            and item.alive()
        )
        if keep:
            self._idle.append(item)
            if self.budget is not None:
                await self.budget.kept(self, item)
        else:
            await item.aclose()

    async def aclose(self) -> None:
        """Close every idle process; a process given back later is closed, not kept."""
        self._closed = True
        idle = self._drop_idle()
        same = self._loop is None or self._loop == anyio.lowlevel.current_token()
        for item in idle:
            if same:
                await item.aclose()
            else:
                item.kill()
        loop_end, self._loop_end = self._loop_end, None
        if loop_end is not None and same:
            await loop_end.aclose()


class WarmScope:
    """The pools made while a `warm_processes` block runs, closed when it exits."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._pools: dict[Hashable, WarmPool[Any]] = {}
        self.budget = IdleBudget(size)

    def pool_for(self, key: Hashable, size: int) -> WarmPool[Any]:
        """The block's pool for one configuration *key* (shared by every adapter made with
        it), made on first use; the block's pools keep at most *size* idle in all."""
        return _pool_in(self._pools, key, size, self.budget)

    async def aclose(self) -> None:
        pools, self._pools = self._pools, {}
        with anyio.CancelScope(shield=True):
            for pool in pools.values():
                await pool.aclose()


def _pool_in(
    pools: dict[Hashable, WarmPool[Any]], key: Hashable, size: int, budget: IdleBudget
) -> WarmPool[Any]:
    pool = pools.get(key)
    if pool is None:
        pool = pools[key] = WarmPool[Any](size, budget=budget)
    pool.size = max(pool.size, size)
    budget.limit = max(budget.limit, size)
    return pool


# outside a block: one pool per configuration for the whole process, so adapters made per
# call (a common pattern) share their warm agents instead of each parking its own
_SHARED: dict[Hashable, WarmPool[Any]] = {}
_SHARED_BUDGET = IdleBudget(0)


def shared_pool(key: Hashable, size: int) -> WarmPool[Any]:
    """The process-wide pool for configuration *key* (at least *size* idle agents; the
    process-wide pools keep at most the largest size asked for in all)."""
    return _pool_in(_SHARED, key, size, _SHARED_BUDGET)


async def close_shared(key: Hashable) -> None:
    """Close and forget the process-wide pool for *key* (a later call makes a new one)."""
    pool = _SHARED.pop(key, None)
    if pool is not None:
        await pool.aclose()


_SCOPE: ContextVar[WarmScope | None] = ContextVar("agentport_warm_scope", default=None)


def current_scope() -> WarmScope | None:
    """The innermost `warm_processes` block running in this task, or None."""
    return _SCOPE.get()


def pool_size(warm: int | None) -> int:
    """Idle processes a call keeps: `[llm] warm` when set (0: none), else the enclosing
    `warm_processes` block's size, else 0 (outside a block, warm is opt-in)."""
    if warm is not None:
        return warm
    scope = current_scope()
    return scope.size if scope is not None else 0


def call_pool(key: Hashable, size: int) -> WarmPool[Any]:
    """The pool for configuration *key*: the enclosing block's, else the process-wide one."""
    scope = current_scope()
    return scope.pool_for(key, size) if scope is not None else shared_pool(key, size)


@asynccontextmanager
async def warm_processes(size: int = 2) -> AsyncIterator[WarmScope]:
    """Inside the block, adapters that can keep warm processes and whose `[llm] warm` is unset
    keep up to *size* idle ones each (0: none; `warm = 0` in the settings always wins); every
    such process is closed when the block exits (shielded, even on cancellation)."""
    if size < 0:
        raise ValueError("warm_processes(size): size must be >= 0")
    scope = WarmScope(size)
    reset = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(reset)
        await scope.aclose()


P = ParamSpec("P")
R = TypeVar("R")


def with_warm_processes(
    size: int,
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Run the decorated coroutine function inside `warm_processes(size)` (the workflows)."""

    def wrap(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(fn)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            async with warm_processes(size):
                return await fn(*args, **kwargs)

        return run

    return wrap
