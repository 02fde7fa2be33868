"""The call plan: what one `complete()` is, worked out once at the top of the adapter stack.

`plan_call` builds a `CallPlan` from the messages, the caller's config merged over the
configured defaults (the only merge of the call), and the call's `Deadline`. Each layer
below hands the next `complete(plan.messages, plan.config)` inside `planned(plan)`; a layer
that asks `plan_call` again with that same config object gets the same plan back, so the
defaults are never merged twice and the deadline is never recomputed. A layer that changes
the call (the retry policy's per-attempt bound, a budget's tighter deadline, a failover
member's session hand-over) derives a new plan from it (`for_attempt`, `within`) or, for a
config it builds itself, a new plan is made from it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from ._config import CompletionConfig
from ._deadline import Deadline, DeadlineLimit
from ._messages import Message

__all__ = ["CallPlan", "merge_config", "plan_call", "planned"]


@dataclass(frozen=True, slots=True)
class CallPlan:
    """One call, immutable: *messages*, *config* (already merged over the defaults) and the
    *deadline* this layer and every one below it must end by."""

    messages: tuple[Message, ...]
    config: CompletionConfig
    deadline: Deadline

    def for_attempt(self, now: float | None = None) -> CallPlan:
        """The plan of one attempt: the call's deadline narrowed by `attempt_timeout_s`
        from *now*, and the config's `total_timeout_s` the attempt's bound (what a backend
        that reads only its config runs with)."""
        bound = self.deadline.narrow(self.config.attempt_timeout_s, "attempt", now)
        return self.within(bound, now)

    def within(self, deadline: Deadline, now: float | None = None) -> CallPlan:
        """This plan bounded by *deadline* (the earlier of the two), its config's
        `total_timeout_s` the seconds left (at least 1 ms: the field must be > 0)."""
        bound = self.deadline.earliest(deadline)
        left = max(bound.remaining(now), 0.001)
        config = self.config.model_copy(update={"total_timeout_s": left})
        return replace(self, config=config, deadline=bound)


_CURRENT: ContextVar[CallPlan | None] = ContextVar("agentport_call_plan", default=None)


def current_plan() -> CallPlan | None:
    """The plan of the call running in this task, or None."""
    return _CURRENT.get()


@contextmanager
def planned(plan: CallPlan) -> Iterator[CallPlan]:
    """Make *plan* the one the next layer finds (`plan_call` with `plan.config`)."""
    token = _CURRENT.set(plan)
    try:
        yield plan
    finally:
        _CURRENT.reset(token)


def plan_call(
    messages: Sequence[Message],
    config: CompletionConfig | None,
    defaults: CompletionConfig,
    *,
    limit: DeadlineLimit = "total",
) -> CallPlan:
    """The plan of this call: the layer above's when it handed *config* down from its plan
    (nothing merged, nothing recomputed), else a new one: *config* merged over *defaults*
    and the deadline from its `total_timeout_s` (narrowed by `attempt_timeout_s` when
    *limit* is "attempt": a call run as one attempt, without the retry policy)."""
    above = _CURRENT.get()
    if above is not None and config is above.config:
        return above
    merged = merge_config(config, defaults)
    attempt = merged.attempt_timeout_s if limit == "attempt" else None
    return CallPlan(tuple(messages), merged, Deadline.of_call(merged.total_timeout_s, attempt))


def merge_config(config: CompletionConfig | None, defaults: CompletionConfig) -> CompletionConfig:
    """The config a backend runs with: *config* (None = nothing set) over *defaults*, field by
    field (`CompletionConfig.with_defaults`). Settings > `CompletionConfig` defaults; the
    caller's explicit fields > settings. A config handed down from the call's plan is
    returned as it is (merged once, at the top). The only caller of `with_defaults`."""
    above = _CURRENT.get()
    if above is not None and config is above.config:
        return config
    return defaults if config is None else config.with_defaults(defaults)
