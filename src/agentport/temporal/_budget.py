"""A batch budget on Temporal: the batch workflow owns it and grants each question an
allowance.

The client sends the ceilings (`--budget` over `[budget]`), what earlier runs of the batch
spent (`batch.json`) and the worst case of one question (its plan's upper bound of calls)
in `BatchJob.budget` (`budget_data`). In the batch workflow a `BudgetPool` decides:

- Before a child starts it asks `acquire()`. Once a ceiling is reached (what finished
  children reported, plus the calls reserved by running ones; or `wall` by
  `workflow.now()`) no new question starts: it is `not_run` ("not run (budget)").
- Calls are reserved, never shared: a child gets `min(worst case, calls left)`, and it
  waits while the calls left do not cover a worst case and other children still run
  (they give back what they did not use). So the call ceiling is never passed, a question
  is cut short only when the batch's calls are really gone, and under a tight budget
  questions run one after another.
- Tokens and dollars are not reserved (no worst case is known): each child may spend what
  is left at its start, so children running together may pass those ceilings by what they
  spend, as calls running together do in one run (`BudgetAdapter`).
- `wall` is a deadline from the batch's start (`workflow.now()`, deterministic on replay):
  no question starts and no call starts after it; a call already running is bounded by its
  own `total_timeout_s`, not cut.

In the child, `AllowanceAdapter` is a `BudgetAdapter` over the activity adapter with the
child's allowance: the pipelines see an ordinary budget (a refused call ends the run
partial), and the child reports what it spent (`ItemResult.spent`) to the pool.
Everything here is deterministic: no I/O, no wall clock but `workflow.now()`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from ..core import LLMAdapter
from ..policies import Budget, BudgetAdapter, BudgetLimit

__all__ = [
    "AllowanceAdapter",
    "BudgetPool",
    "budget_data",
    "budget_error",
    "metered",
    "spent_if_metered",
    "spent_of",
]

_TOKENS = ("input_tokens", "output_tokens", "cost_usd")


def budget_data(budget: Budget, spent: dict[str, Any] | None, worst_calls: int) -> dict[str, Any]:
    """`BatchJob.budget`: the ceilings, what the batch spent before (`batch.json`'s
    `extra["budget"]["spent"]`) and one question's worst case of calls."""
    ceilings = {k: v for k, v in asdict(budget).items() if v is not None}
    before = {k: v for k, v in (spent or {}).items() if k in ("calls", *_TOKENS) and v}
    return {"ceilings": ceilings, "spent": before, "worst_calls": max(1, int(worst_calls))}


def spent_of(adapter: BudgetAdapter) -> dict[str, Any]:
    """What *adapter* spent, as the pool counts it."""
    s = adapter.spent
    return {
        "calls": adapter.calls,
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
        "cost_usd": s.cost_usd or 0.0,
    }


class BudgetPool:
    """The batch's budget in the batch workflow. *now* is `workflow.now().timestamp()`;
    *wait* is `workflow.wait_condition`. `acquire()` returns a child's allowance (the
    `ResearchJob.allowance` / `RefineJob.allowance` dict) or None with `reached` set."""

    def __init__(
        self,
        data: dict[str, Any],
        now: Callable[[], float],
        wait: Callable[[Callable[[], bool]], Awaitable[None]],
    ) -> None:
        self.ceilings: dict[str, float] = dict(data.get("ceilings") or {})
        self.spent: dict[str, float] = {"calls": 0, **{k: 0 for k in _TOKENS}}
        for key, value in (data.get("spent") or {}).items():
            if key in self.spent:
                self.spent[key] = value
        self.worst = int(data.get("worst_calls") or 1)
        self.reserved = 0  # calls granted to running children
        self.running = 0
        self.reached: str | None = None
        self._now = now
        self._wait = wait
        self._version = 0
        self._tickets = 0  # acquire() calls so far: each one's place in line
        self._head = 0  # the ticket whose turn it is
        self._gone: set[int] = set()  # tickets whose wait was cancelled before their turn
        wall = self.ceilings.get("deadline_s")
        self._deadline = None if wall is None else now() + float(wall)

    def check(self) -> str | None:
        """Which ceiling is reached (e.g. "calls 20/20"), or None; sticky once set."""
        if self.reached is not None:
            return self.reached
        for name in ("calls", *_TOKENS):
            ceiling = self.ceilings.get(name)
            used = self.spent[name] + (self.reserved if name == "calls" else 0)
            if ceiling is not None and used >= ceiling and (name != "calls" or not self.running):
                self.reached = f"{name} {self.spent[name]:g}/{ceiling:g}"
                return self.reached
        if self._deadline is not None and self._now() >= self._deadline:
            self.reached = f"deadline_s {self.ceilings['deadline_s']:g} (wall)"
        return self.reached

    async def acquire(self) -> dict[str, Any] | None:
        """Wait for an allowance; None once the budget is reached (start no question).
        First come, first served: a question never overtakes one that asked before it."""
        ticket = self._tickets
        self._tickets += 1
        try:
            while True:
                if ticket == self._head:
                    if self.check() is not None:
                        return None
                    if (allowance := self._grant()) is not None:
                        return allowance
                await self._wait(self._changed(self._version))
        finally:
            if ticket == self._head:  # the next in line may ask
                self._head += 1
                while self._head in self._gone:
                    self._gone.discard(self._head)
                    self._head += 1
                self._version += 1
            else:  # a wait cancelled before its turn gives its place up
                self._gone.add(ticket)

    def _grant(self) -> dict[str, Any] | None:
        calls = self.ceilings.get("calls")
        left = None if calls is None else int(calls - self.spent["calls"] - self.reserved)
        if not (left is None or left >= self.worst or (self.running == 0 and left > 0)):
            return None
        grant = None if left is None else min(self.worst, left)
        self.reserved += grant or 0
        self.running += 1
        allowance: dict[str, Any] = {"calls": grant, "deadline_at": self._deadline}
        for name in _TOKENS:
            if (ceiling := self.ceilings.get(name)) is not None:
                allowance[name] = ceiling - self.spent[name]
        return allowance

    def _changed(self, version: int) -> Callable[[], bool]:
        return lambda: self._version != version

    def release(self, allowance: dict[str, Any], spent: dict[str, Any] | None) -> None:
        """A child ended: its reservation goes back, what it spent is counted."""
        self.running -= 1
        self.reserved -= allowance.get("calls") or 0
        if spent is None:  # a child that failed without a report: count its whole share
            spent = {"calls": allowance.get("calls") or 0}
        for key in self.spent:
            self.spent[key] += spent.get(key) or 0
        self._version += 1

    def data(self) -> dict[str, Any]:
        """`batch.json`'s `extra["budget"]` (the same shape as the local batch's)."""
        return {"ceilings": dict(self.ceilings), "spent": dict(self.spent)}


class AllowanceAdapter(BudgetAdapter):
    """A child's allowance over its activity adapter: a `BudgetAdapter` with the granted
    calls / tokens / dollars, that also refuses a call after the batch's `deadline_at`
    (*now*: `workflow.now().timestamp()`)."""

    def __init__(
        self, inner: LLMAdapter, allowance: dict[str, Any], now: Callable[[], float]
    ) -> None:
        fields = {k: allowance.get(k) for k in ("calls", *_TOKENS)}
        fields = {k: v for k, v in fields.items() if v is not None}  # > 0: see acquire()
        budget = Budget(
            calls=fields.get("calls"),
            input_tokens=fields.get("input_tokens"),
            output_tokens=fields.get("output_tokens"),
            cost_usd=fields.get("cost_usd"),
        )
        super().__init__(inner, budget, clock=now)
        self._deadline_at: float | None = allowance.get("deadline_at")
        self._now = now

    def reached_limit(self) -> BudgetLimit | None:
        limit = super().reached_limit()
        if limit is not None:
            return limit.model_copy(update={"scope": "question_share"})
        if self._deadline_at is not None and self._now() >= self._deadline_at:
            return BudgetLimit(name="deadline_s", ceiling=None, scope="batch_deadline")
        return None


def metered(adapter: LLMAdapter, allowance: dict[str, Any] | None) -> LLMAdapter:
    """Workflow code: *adapter* under the child's *allowance* (itself when None)."""
    if allowance is None:
        return adapter
    from temporalio import workflow

    return AllowanceAdapter(adapter, allowance, lambda: workflow.now().timestamp())


def spent_if_metered(adapter: LLMAdapter) -> dict[str, Any] | None:
    """What a `metered` adapter spent (None when it has no allowance)."""
    return spent_of(adapter) if isinstance(adapter, AllowanceAdapter) else None


def budget_error(status: str, error: str | None, why: str | None) -> str | None:
    """The one line of a `partial` / `not_run` item: "not run (budget: calls 20/20)"."""
    if error is not None or status not in ("partial", "not_run"):
        return error
    return f"{status.replace('_', ' ')} (budget{': ' + why if why else ''})"
