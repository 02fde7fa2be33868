"""Typed failover (and optional hedging) across an ordered chain of backends.

`FailoverAdapter` tries its members in order inside ONE whole-call deadline
(`total_timeout_s`). It moves on only for failures another backend can fix
(`DEFAULT_FAILOVER_ON`: not installed, auth, rate limit, exhausted window, timeout, server
error, overloaded, a model the member does not know, network, a process that failed, a
capability the backend lacks; `[llm] failover_on` changes the set); a caller's own error
(`invalid_request`, `schema_mismatch`, `context_length`, `config`) or a `content_filter`
ends the call at once. Before calling a member it is passed over,
not called, when:

- the catalog says it IGNOREs a parameter the call needs under `on_ignored="fail"`, or it
  cannot enforce a safety parameter (`check_params`): `kind=unsupported`;
- its usage window is exhausted in the shared cooldown store: `kind=quota_exhausted`;
- (not the last member) its provider last reported less than `min_headroom` of a usage
  window left (`quota_status`): `kind=quota_exhausted`.

The answer records which backend gave it (`CompletionResponse.backend`) and each member tried
or passed over before it (`CompletionResponse.skipped`: kind, seconds, reason). Its usage
counts every request of the call: the winner's, the failed members' and the hedged losers'
that reported any (a failure's usage likewise). A failure of the whole chain is the last
member's failure, with every attempt of every member and the skipped list in
`details["skipped"]`.

Session handover (`handover`, opt-in: `SessionHandover`): a call that resumes a session the
chain served goes to the member that holds it; when that one fails with a handover kind
(`quota_exhausted`, `rate_limited`), the next member continues from a bounded briefing.

Hedging (`hedge_after_s`): when the running member has not answered after that many seconds
the next one starts too; the first success wins and every other running member is cancelled
(a CLI's process group is killed by the runner's cancellation teardown). A loser is recorded
in `skipped` with `kind=None`, its seconds, and its usage when it reported one (a cancelled
CLI reports none).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from returns.result import Failure, Result, Success

from ..core import (
    Attempt,
    BackendCapability,
    CallPlan,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    Deadline,
    ErrorKind,
    LLMAdapter,
    Message,
    ProviderError,
    SkippedBackend,
    Usage,
    aclose_adapter,
    check_params,
    plan_call,
    planned,
)
from ._chain import DEFAULT_FAILOVER_ON
from ._cooldown import CooldownStore, cooling_error
from ._handover import SessionHandover
from ._headroom import quota_status
from ._receipt import billed, receipt
from ._tracing import call_span, record

__all__ = ["ChainMember", "FailoverAdapter"]


@dataclass
class ChainMember:
    """One backend of a chain.

    Attributes:
        name: canonical backend name.
        build: makes its adapter (called once, on first use); may raise `ProviderError`
            (a missing extra, real backends blocked), which counts as that member's failure.
        capability: its catalog entry, for capability-aware skipping and the receipt.
    """

    name: str
    build: Callable[[], LLMAdapter]
    capability: BackendCapability | None = None
    _adapter: LLMAdapter | None = field(default=None, repr=False)

    def adapter(self) -> LLMAdapter:
        if self._adapter is None:
            self._adapter = self.build()
        return self._adapter


@dataclass
class _Outcome:
    index: int
    result: Result[CompletionResponse, ProviderError] | None  # None: passed over, not called
    skipped: SkippedBackend | None = None
    error: ProviderError | None = None


class FailoverAdapter(ClosableAdapter):
    """An `LLMAdapter` over an ordered chain of `ChainMember`s (module docstring)."""

    def __init__(
        self,
        members: Sequence[ChainMember],
        *,
        failover_on: frozenset[ErrorKind] = DEFAULT_FAILOVER_ON,
        hedge_after_s: float | None = None,
        defaults: CompletionConfig | None = None,
        cooldown: CooldownStore | None = None,
        min_headroom: float | None = None,
        handover: SessionHandover | None = None,
    ) -> None:
        if not members:
            raise ValueError("a failover chain needs at least one backend")
        if hedge_after_s is not None and not hedge_after_s > 0:
            raise ValueError(f"hedge_after_s must be > 0 (got {hedge_after_s!r})")
        self.members = list(members)
        self.failover_on = failover_on
        self.hedge_after_s = hedge_after_s
        self.defaults = defaults or CompletionConfig()
        self.cooldown = cooldown
        self.min_headroom = min_headroom
        self.handover = handover  # opt-in: sessions continue across members (_handover)

    @property
    def backend(self) -> str:
        """The chain, comma-separated (the answering backend is in each response)."""
        return ",".join(m.name for m in self.members)

    async def aclose(self) -> None:
        """Close what the members built so far keep between calls (their warm processes)."""
        for member in self.members:
            if member._adapter is not None:
                await aclose_adapter(member._adapter)

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        plan = plan_call(messages, config, self.defaults)  # the call's one merge and deadline
        config, deadline = plan.config, plan.deadline
        outcomes: list[_Outcome] = []
        winner: _Outcome | None = None
        with call_span(self.backend, config) as current:
            with anyio.move_on_after(deadline.remaining()):
                winner = await self._race(messages, config, deadline, outcomes)
            result = self._result(messages, config, outcomes, winner)
            if self.handover is not None and isinstance(result, Success):
                result = Success(self.handover.record(config.session_id, messages, result.unwrap()))
            record(current, result)
        return result

    async def _prepare(
        self, index: int, messages: Sequence[Message], config: CompletionConfig
    ) -> _Outcome | LLMAdapter:
        """The member's adapter, or the outcome of passing it over / failing to build it."""
        member = self.members[index]
        cap = member.capability
        if cap is not None:
            checked = check_params(cap, messages, config)
            if isinstance(checked, Failure):
                error = checked.failure().with_backend(member.name)
                return _Outcome(index, None, _skip(member.name, error, called=False), error)
        if self.cooldown is not None:
            cooling = await cooling_error(self.cooldown, member.name)
            if cooling is None and index < len(self.members) - 1:
                cooling = await self._low_headroom(member.name, self.cooldown.path.parent)
            if cooling is not None:
                return _Outcome(index, None, _skip(member.name, cooling, called=False), cooling)
        try:
            return member.adapter()
        except ProviderError as exc:
            error = exc.with_backend(member.name)
            return _Outcome(index, None, _skip(member.name, error, called=False), error)

    async def _low_headroom(self, backend: str, folder: Path) -> ProviderError | None:
        """`quota_exhausted` (not called) when *backend* last reported less than
        `min_headroom` of a window left; None when it did not, or said nothing."""
        if self.min_headroom is None:
            return None
        status = await anyio.to_thread.run_sync(lambda: quota_status(backend, folder=folder))
        known = [(w, w.remaining_share) for w in status.windows if w.remaining_share is not None]
        low = [(w, share) for w, share in known if share < self.min_headroom]
        if not low:
            return None
        w, share = low[0]
        return ProviderError(
            ErrorKind.quota_exhausted,
            f"{w.window} window {share:.0%} left, under min_headroom "
            f"{self.min_headroom:.0%}; passed over",
            backend=backend,
            retryable=False,
            retry_at=w.resets_at,
            window=w.window,
        )

    async def _run(
        self,
        index: int,
        adapter: LLMAdapter,
        messages: Sequence[Message],
        config: CompletionConfig,
        deadline: Deadline,
    ) -> _Outcome:
        began = time.monotonic()
        # the member runs within the chain's deadline, its config already merged (and
        # perhaps shaped by the hand-over): a plan of its own, nothing merged again
        plan = CallPlan(tuple(messages), config, deadline).within(deadline, began)
        with planned(plan):
            result = await adapter.complete(plan.messages, plan.config)
        elapsed = time.monotonic() - began
        if isinstance(result, Success):
            return _Outcome(index, result)
        error = result.failure().with_backend(self.members[index].name)
        return _Outcome(
            index, result, _skip(self.members[index].name, error, elapsed=elapsed), error
        )

    def _shape(
        self,
        index: int,
        messages: Sequence[Message],
        config: CompletionConfig,
        outcomes: Sequence[_Outcome],
    ) -> tuple[Sequence[Message], CompletionConfig] | _Outcome:
        """The call as member *index* gets it: unchanged, or shaped by `handover` for a
        session the chain served (passed over when the session lives on a later member)."""
        if self.handover is None or config.session_id is None:
            return messages, config
        failed = [o.error for o in outcomes if o.error is not None]
        shaped = self.handover.shape(self.members[index].name, messages, config, failed)
        if isinstance(shaped, ProviderError):
            return _Outcome(index, None, _skip(shaped.backend, shaped, called=False), shaped)
        return shaped

    def _moves_on(self, outcome: _Outcome) -> bool:
        return outcome.error is not None and outcome.error.kind in self.failover_on

    async def _race(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        deadline: Deadline,
        outcomes: list[_Outcome],
    ) -> _Outcome | None:
        """Run members (one at a time, or hedged); the winning outcome, or None when every
        member failed (or one failed in a way no other backend can fix: last in
        *outcomes*)."""
        send, receive = anyio.create_memory_object_stream[_Outcome](len(self.members))
        running: dict[int, float] = {}  # index -> start time
        next_index = 0
        winner: _Outcome | None = None

        async with anyio.create_task_group() as tg:

            async def start_next() -> bool:
                """Start the next member that is not passed over; False when none is left
                (or a member failed for a reason the chain must not pass)."""
                nonlocal next_index
                while next_index < len(self.members):
                    index = next_index
                    next_index += 1
                    shaped = self._shape(index, messages, config, outcomes)
                    if isinstance(shaped, _Outcome):
                        outcomes.append(shaped)
                        if not self._moves_on(shaped):
                            return False
                        continue
                    m, c = shaped
                    prepared = await self._prepare(index, m, c)
                    if isinstance(prepared, _Outcome):
                        outcomes.append(prepared)
                        if not self._moves_on(prepared):
                            return False
                        continue
                    running[index] = time.monotonic()

                    async def member(
                        i: int = index,
                        a: LLMAdapter = prepared,
                        m: Sequence[Message] = m,
                        c: CompletionConfig = c,
                    ) -> None:
                        await send.send(await self._run(i, a, m, c, deadline))

                    tg.start_soon(member)
                    return True
                return False

            stop = not await start_next()
            while not stop and running:
                more = next_index < len(self.members)
                wait = self.hedge_after_s if (self.hedge_after_s and more) else math.inf
                got: _Outcome | None = None
                with anyio.move_on_after(wait):
                    got = await receive.receive()
                if got is None:  # hedge: the running member is slow, start the next too
                    await start_next()
                    continue
                running.pop(got.index, None)
                if got.error is None:
                    winner = got
                    break
                outcomes.append(got)
                if not self._moves_on(got):
                    break
                if not running and not await start_next():
                    break
            losers = dict(running)
            tg.cancel_scope.cancel()
        self._after_race(losers, outcomes, send, receive)
        return winner

    def _after_race(
        self,
        losers: dict[int, float],
        outcomes: list[_Outcome],
        send: MemoryObjectSendStream[_Outcome],
        receive: MemoryObjectReceiveStream[_Outcome],
    ) -> None:
        """Record the hedged members cancelled when another won, and the outcomes of hedges
        that finished while the winner was chosen (their usage is still reported)."""
        now = time.monotonic()
        for index, began in losers.items():
            outcomes.append(
                _Outcome(
                    index,
                    None,
                    SkippedBackend(
                        backend=self.members[index].name,
                        kind=None,
                        duration_s=now - began,
                        reason="hedged: another backend answered first; cancelled",
                    ),
                )
            )
        # a hedge that finished while the winner was chosen: its usage is still reported
        with send, receive:
            while True:
                try:
                    late = receive.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
                outcomes.append(_late(late, self.members[late.index].name))

    def _result(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        outcomes: list[_Outcome],
        winner: _Outcome | None,
    ) -> Result[CompletionResponse, ProviderError]:
        skipped = tuple(o.skipped for o in outcomes if o.skipped is not None)
        errors = [o.error for o in outcomes if o.error is not None]
        # every request the call made: failed members' and hedged losers' that reported usage
        # (a member refused before sending spent nothing: its route does not mix in)
        spent = sum((e.usage for e in errors if e.request_sent is not False), Usage())
        spent = sum((s.usage for s in skipped if s.kind is None and s.usage), spent)
        if winner is not None and winner.result is not None:
            response = winner.result.unwrap()
            member = self.members[winner.index]
            usage = response.usage
            if member.capability is not None:  # a member built without the retry policy
                usage = billed(member.capability, usage)
            update: dict[str, object] = {
                "skipped": skipped + response.skipped,
                "usage": spent + usage,
            }
            if not response.receipt and member.capability is not None:
                update["receipt"] = receipt(member.capability, messages, config)
            if not response.backend:
                update["backend"] = member.name
            return Success(response.model_copy(update=update))
        attempts: list[Attempt] = []
        for o in outcomes:
            if o.error is not None and o.result is not None:
                attempts += o.error.attempts or (
                    Attempt(o.error.kind, o.skipped.duration_s if o.skipped else 0.0,
                            o.error.exit_code, o.error.backend, o.error.timeout),
                )  # fmt: skip
        listed = [s.model_dump(mode="json", exclude={"usage"}) for s in skipped]
        last = errors[-1] if errors else None
        failed = [o for o in outcomes if o.error is not None]
        member_cap = self.members[failed[-1].index].capability if failed else None
        if member_cap is not None and None in (spent.billing_route, spent.cost_state):
            # nothing spent reported a route (every member refused before sending, or none
            # had the retry policy): the last member's catalog entry says it
            unsent = all(e.request_sent is False for e in errors)
            spent = billed(member_cap, spent, sent=False if unsent else None)
        finished = last is not None and not self._moves_on(outcomes[-1])
        if last is not None and (finished or len(outcomes) >= len(self.members)):
            last = last.reached_by(errors).replace(usage=spent)
            return Failure(
                last.replace(attempts=tuple(attempts), details={**last.details, "skipped": listed})
            )
        return Failure(
            ProviderError(
                ErrorKind.timeout,
                f"the call's deadline (total_timeout_s={config.total_timeout_s:g}) was reached "
                f"in the failover chain {self.backend}"
                + (f"; last failure: {last.kind.value}: {last.message}" if last else ""),
                backend=self.backend,
                retryable=False,
                timeout="total",
                attempts=attempts,
                details={"skipped": listed},
                usage=spent,
            ).reached_by(errors)
        )


def _skip(
    backend: str, error: ProviderError, *, elapsed: float = 0.0, called: bool = True
) -> SkippedBackend:
    return SkippedBackend(
        backend=backend,
        kind=error.kind,
        duration_s=elapsed,
        reason=error.message[:300],
        called=called,
    )


def _late(outcome: _Outcome, backend: str) -> _Outcome:
    if outcome.result is not None and isinstance(outcome.result, Success):
        response = outcome.result.unwrap()
        return _Outcome(
            outcome.index,
            None,
            SkippedBackend(
                backend=backend,
                kind=None,
                duration_s=response.duration_s,
                reason="hedged: answered too, after the winner",
                usage=response.usage,
            ),
        )
    return outcome
