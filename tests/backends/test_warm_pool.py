"""`WarmPool`'s rules as properties over any sequence of calls: never more idle processes than
its size (nor, for pools sharing an `IdleBudget`, than its limit in all), never one handed to
two calls, never a dead, worn-out or errored one reused, none lost (each given back is kept
or closed), and none left when the loop ends."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentport.transport import WarmPool
from agentport.transport._warm import IdleBudget


@dataclass(eq=False)
class Item:
    uses: int = 0
    dead: bool = False
    closed: bool = False
    killed: bool = False

    def alive(self) -> bool:
        return not (self.dead or self.closed or self.killed)

    def kill(self) -> None:
        self.killed = True

    async def aclose(self) -> None:
        assert not self.closed, "closed twice"
        self.closed = True


# one step: "call" (take or start, then give back if it ended cleanly), "die" (an idle one
# dies), "hold" (take one and keep it for a later "release"), "release"
STEP = st.one_of(
    st.tuples(st.just("call"), st.booleans()),
    st.tuples(st.just("die"), st.integers(0, 5)),
    st.tuples(st.just("hold"), st.booleans()),
    st.tuples(st.just("release"), st.booleans()),
)


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(1, 4),
    max_uses=st.integers(1, 5),
    steps=st.lists(STEP, max_size=40),
)
def test_pool_rules_hold_for_any_sequence(
    size: int, max_uses: int, steps: list[tuple[str, object]]
) -> None:
    pool: WarmPool[Item] = WarmPool(size, max_uses)
    made: list[Item] = []
    held: list[Item] = []

    async def get() -> Item:
        item = await pool.take()
        if item is None:
            item = Item()
            made.append(item)
            pool.started(item)
        assert item.alive()
        assert item not in held
        assert item.uses <= max_uses
        return item

    async def back(item: Item, clean: bool) -> None:
        if clean:
            await pool.give(item)
        else:
            await item.aclose()  # what a backend does with a process that saw an error

    async def run() -> None:
        for kind, arg in steps:
            if kind == "call":
                await back(await get(), bool(arg))
            elif kind == "die":
                idle = [i for i in made if i.alive() and i not in held and not i.closed]
                if idle:
                    idle[int(arg) % len(idle)].dead = True
            elif kind == "hold":
                held.append(await get())
            elif held:
                await back(held.pop(0), bool(arg))
            assert pool.idle <= size
            for item in made:  # never lost: in use, kept alive and unworn, or closed/killed
                kept = item.alive() and not item.closed and item.uses < max_uses
                assert item in held or kept or item.closed or item.killed or item.dead
        for item in held:
            await pool.give(item)

    anyio.run(run)
    # the loop ended: every process is closed, killed, or died by itself
    assert all(i.closed or i.killed or i.dead for i in made)
    assert pool.starts == len(made)


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(1, 3),
    steps=st.lists(
        st.tuples(st.sampled_from(["call", "hold", "release"]), st.integers(0, 2), st.booleans()),
        max_size=40,
    ),
)
def test_pools_sharing_a_budget_keep_at_most_its_limit_idle(
    limit: int, steps: list[tuple[str, int, bool]]
) -> None:
    budget = IdleBudget(limit)
    pools: list[WarmPool[Item]] = [WarmPool(limit, budget=budget) for _ in range(3)]
    made: list[Item] = []
    held: list[tuple[int, Item]] = []

    async def get(n: int) -> Item:
        item = await pools[n].take()
        if item is None:
            item = Item()
            made.append(item)
            pools[n].started(item)
        assert item.alive()
        assert all(item is not h for _, h in held)
        return item

    async def run() -> None:
        for kind, n, clean in steps:
            if kind == "call":
                item = await get(n)
                await (pools[n].give(item) if clean else item.aclose())
            elif kind == "hold":
                held.append((n, await get(n)))
            elif held:
                m, item = held.pop(0)
                await (pools[m].give(item) if clean else item.aclose())
            assert sum(p.idle for p in pools) == budget.idle <= limit
            for item in made:
                assert item.closed or any(item is h for _, h in held) or item.alive()
        for m, item in held:
            await pools[m].give(item)

    anyio.run(run)
    assert all(i.closed or i.killed for i in made)


@pytest.mark.anyio
async def test_a_closed_pool_closes_what_is_given_back() -> None:
    pool: WarmPool[Item] = WarmPool(2)
    a = Item()
    pool.started(a)
    await pool.aclose()
    await pool.give(a)
    assert a.closed
    assert pool.idle == 0


def test_a_pool_needs_a_size() -> None:
    with pytest.raises(ValueError, match="size >= 1"):
        WarmPool(0)


@pytest.mark.anyio
async def test_a_forked_child_never_signals_its_parents_idle_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentport.transport import _warm

    pool: WarmPool[Item] = WarmPool(1)
    assert await pool.take() is None
    item = Item()
    pool.started(item)
    await pool.give(item)
    monkeypatch.setattr(_warm.os, "getpid", lambda: -1)  # as seen in a forked child
    assert await pool.take() is None
    assert not item.killed
    assert not item.closed


def test_pools_are_per_configuration_and_grow_to_the_largest_size() -> None:
    from agentport.transport import close_shared, shared_pool

    a = shared_pool(("t", "one"), 1)
    assert shared_pool(("t", "one"), 3) is a
    assert a.size == 3
    assert shared_pool(("t", "two"), 1) is not a
    anyio.run(close_shared, ("t", "one"))
    anyio.run(close_shared, ("t", "two"))
    assert shared_pool(("t", "one"), 1) is not a
    anyio.run(close_shared, ("t", "one"))
