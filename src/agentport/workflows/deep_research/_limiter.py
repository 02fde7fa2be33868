"""`PriorityLimiter`: at most N holders; waiters are served lowest priority value first.

The run uses ONE limiter over all agent calls (the seed's single semaphore). Priorities
only reorder the queue: fetches of the angle whose search finished last go first, because
that angle is on the critical path (its chain started latest). Ties are FIFO.
"""

from __future__ import annotations

import heapq
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

__all__ = ["PriorityLimiter"]


@dataclass(order=True)
class _Waiter:
    priority: float
    seq: int
    event: anyio.Event = field(compare=False)
    granted: bool = field(default=False, compare=False)
    gone: bool = field(default=False, compare=False)


class PriorityLimiter:
    """A capacity limiter with a priority queue. Cancellation-safe: a waiter cancelled
    before its turn leaves the queue; one cancelled just after being granted passes the
    slot on."""

    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError("total must be >= 1")
        self.total = total
        self.busy = 0
        self._queue: list[_Waiter] = []
        self._seq = 0

    @asynccontextmanager
    async def slot(self, priority: float = 0.0) -> AsyncIterator[None]:
        if self.busy < self.total and not self._queue:
            self.busy += 1
        else:
            self._seq += 1
            waiter = _Waiter(priority, self._seq, anyio.Event())
            heapq.heappush(self._queue, waiter)
            try:
                await waiter.event.wait()
            except BaseException:
                if waiter.granted:
                    self._release()
                else:
                    waiter.gone = True
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        # Hand the slot straight to the next live waiter, so `busy` never dips and refills.
        while self._queue:
            waiter = heapq.heappop(self._queue)
            if waiter.gone:
                continue
            waiter.granted = True
            waiter.event.set()
            return
        self.busy -= 1
