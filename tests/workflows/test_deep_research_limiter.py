"""The run's one concurrency cap: a priority queue that never leaks a slot."""

from __future__ import annotations

import anyio
import pytest

from agentport.workflows.deep_research._limiter import PriorityLimiter

pytestmark = pytest.mark.anyio


async def test_never_more_holders_than_the_total() -> None:
    limiter = PriorityLimiter(3)
    now = peak = 0

    async def hold() -> None:
        nonlocal now, peak
        async with limiter.slot():
            now += 1
            peak = max(peak, now)
            await anyio.sleep(0.005)
            now -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(hold)
    assert peak == 3
    assert limiter.busy == 0


async def test_waiters_are_served_lowest_priority_value_first_then_fifo() -> None:
    limiter = PriorityLimiter(1)
    order: list[str] = []
    gate = anyio.Event()

    async def first() -> None:
        async with limiter.slot():
            await gate.wait()

    async def waiter(name: str, priority: float) -> None:
        async with limiter.slot(priority):
            order.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await anyio.sleep(0.01)
        for name, priority in (("late", 0.0), ("urgent", -2.0), ("next", -1.0), ("later", 0.0)):
            tg.start_soon(waiter, name, priority)
            await anyio.sleep(0.001)
        gate.set()
    assert order == ["urgent", "next", "late", "later"]


async def test_a_cancelled_waiter_does_not_leak_or_steal_a_slot() -> None:
    limiter = PriorityLimiter(1)
    gate = anyio.Event()
    served: list[str] = []

    async def holder() -> None:
        async with limiter.slot():
            await gate.wait()

    async def waiter(name: str) -> None:
        async with limiter.slot():
            served.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await anyio.sleep(0.01)
        with anyio.move_on_after(0.01):
            await waiter("cancelled")
        tg.start_soon(waiter, "kept")
        await anyio.sleep(0.01)
        gate.set()
    assert served == ["kept"]
    assert limiter.busy == 0


async def test_cancelling_a_whole_group_returns_every_slot() -> None:
    limiter = PriorityLimiter(2)

    async def hold() -> None:
        async with limiter.slot():
            await anyio.sleep(10)

    with anyio.move_on_after(0.02):
        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(hold)
    assert limiter.busy == 0
    async with limiter.slot(), limiter.slot():
        assert limiter.busy == 2


def test_a_limiter_needs_at_least_one_slot() -> None:
    with pytest.raises(ValueError, match="total"):
        PriorityLimiter(0)
