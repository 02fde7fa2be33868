"""A cluster-wide cap on the concurrent calls of one backend, built on Temporal itself.

`[temporal] cluster_concurrency = {codex = 2}` means: whatever the number of workers, at most
2 `codex` calls run at once in the cluster. Temporal has no server-side cap on running
activities, so the cap is a durable workflow, one per backend queue
(`SemaphoreWorkflow`, id `agentport-semaphore-<queue>`, on the workflows' queue):

- A workflow about to call the backend (`execute_complete`) asks for a permit: the
  `request_permit` activity signals-with-start the semaphore (`acquire` signal), so the first
  request of a cluster starts it. The semaphore keeps its waiters in FIFO order and grants a
  permit by signalling the holder workflow (`agentport.permit`); the holder then runs the
  `complete` activity and signals `release` when it ends, also on failure or cancellation.
- A holder that dies without releasing (a terminated or timed-out workflow) is found while
  someone waits: every `check_s` seconds the `holders_gone` activity describes the holders,
  and those no longer running lose their permits. So a dead holder's permit is free again
  within `check_s` (+ one activity round trip) of someone waiting for it. A grant signal to a
  holder that has already closed fails and frees the permit at once. (The dead holder's own
  activity learns of its workflow's end at its next heartbeat, at most 5 s later.)
- The cap is the `limit` of the latest request (the callers' configuration travels as
  workflow input, never read inside workflow code).
- History is bounded: after `max_events` history events (or when Temporal suggests it) the
  semaphore continues as new with its holders and waiters as input.

Workflow code here is deterministic: state changes only in signal handlers and the run loop,
timers are Temporal timers (`wait_condition(timeout=...)`), I/O happens in the activities.
"""

# No `from __future__ import annotations`: Temporal's converter resolves these dataclasses'
# hints inside the workflow sandbox.
import asyncio
import dataclasses
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated

import anyio
from pydantic import Field
from temporalio import activity, workflow
from temporalio.client import WorkflowExecutionStatus
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from ..catalog import resolve_backend
from ._inputs import REFUSED_INPUT, Closed, Label, parse, wire
from ._queues import _canonical

__all__ = [
    "ACQUIRE_SIGNAL",
    "DEFAULT_CHECK_S",
    "DEFAULT_MAX_EVENTS",
    "PERMIT_SIGNAL",
    "RELEASE_SIGNAL",
    "SEMAPHORE_ACTIVITIES",
    "SEMAPHORE_WORKFLOW",
    "HolderRef",
    "HolderRefs",
    "PermitGrant",
    "PermitRelease",
    "PermitRequest",
    "PermitRequestData",
    "RequestPermit",
    "SemaphoreState",
    "SemaphoreWorkflow",
    "cluster_cap_for",
    "cluster_permit",
    "holders_gone",
    "request_permit",
    "semaphore_id",
]

SEMAPHORE_WORKFLOW = "agentport.semaphore"
REQUEST_PERMIT_ACTIVITY = "agentport.semaphore.request"
HOLDERS_GONE_ACTIVITY = "agentport.semaphore.holders_gone"
ACQUIRE_SIGNAL = "acquire"
RELEASE_SIGNAL = "release"
PERMIT_SIGNAL = "agentport.permit"  # semaphore -> holder
DEFAULT_CHECK_S = 10.0  # how often holders are checked while someone waits
DEFAULT_MAX_EVENTS = 2000  # history events before continue-as-new

_STEP = timedelta(seconds=30)
_ASK_AGAIN = timedelta(seconds=60)  # a waiter repeats its request this often (deduplicated)
_STEP_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=0)


def cluster_cap_for(backend: str, configured: Mapping[str, int] | None) -> int | None:
    """The cluster-wide cap of *backend* from `[temporal] cluster_concurrency` (keys are
    names or aliases): its own entry, for a chain `"codex,claude"` the smallest of its
    members' entries; None when none applies (no cap)."""
    if not configured:
        return None
    names = _canonical(backend)
    caps = {resolve_backend(k): v for k, v in configured.items()}
    named = [caps[n] for n in names if n in caps]
    return min(named) if named else None


def semaphore_id(queue: str) -> str:
    """The semaphore workflow's id for backend task queue *queue*."""
    return f"agentport-semaphore-{queue}"


@dataclass(frozen=True)
class PermitRequest:
    """One request for a permit.

    Attributes:
        holder_id / holder_run_id: the requesting workflow execution.
        request_id: unique within that run (the call's activity id).
        limit: the cluster-wide cap the requester was configured with (>= 1).
        check_s: seconds between holder checks while someone waits.
    """

    holder_id: str
    holder_run_id: str
    request_id: str
    limit: int
    check_s: float = DEFAULT_CHECK_S


@dataclass(frozen=True)
class PermitRelease:
    """A holder gives its permit back (or withdraws its request)."""

    holder_id: str
    holder_run_id: str
    request_id: str


@dataclass(frozen=True)
class PermitGrant:
    """Sent to the holder: its permit for *request_id*."""

    request_id: str


@dataclass
class SemaphoreState:
    """The semaphore's input (also carried across continue-as-new)."""

    limit: int = 1
    check_s: float = DEFAULT_CHECK_S
    max_events: int = DEFAULT_MAX_EVENTS
    holders: list[PermitRequest] = field(default_factory=list)
    waiters: list[PermitRequest] = field(default_factory=list)


class PermitRequestData(Closed):
    """A `PermitRequest` as activity input."""

    holder_id: Label
    holder_run_id: Label
    request_id: Label
    limit: Annotated[int, Field(ge=1, le=100_000)]
    check_s: Annotated[float, Field(ge=0.1, le=86_400)] = DEFAULT_CHECK_S


class RequestPermit(Closed):
    """The `request_permit` activity's input: the semaphore of a backend queue, on the
    queue this activity runs on (`_checked_permit`)."""

    semaphore_id: Label
    task_queue: Label
    request: PermitRequestData
    max_events: Annotated[int, Field(ge=10, le=1_000_000)] = DEFAULT_MAX_EVENTS


class HolderRef(Closed):
    holder_id: Label
    holder_run_id: Label


class HolderRefs(Closed):
    """The `holders_gone` activity's input."""

    holders: list[HolderRef] = Field(max_length=100_000)


def _key(item: PermitRequest | PermitRelease) -> tuple[str, str, str]:
    return (item.holder_id, item.holder_run_id, item.request_id)


@activity.defn(name=REQUEST_PERMIT_ACTIVITY)
async def request_permit(raw: RawValue) -> None:
    """Signal-with-start the semaphore with an `acquire` for `data.request`. Input that is
    not a `RequestPermit`, or that names another workflow than a semaphore on this
    activity's own task queue, is a non-retryable `ApplicationError`."""
    data = parse(RequestPermit, raw, "semaphore request")
    queue = activity.info().task_queue
    if data.task_queue != queue or not data.semaphore_id.startswith("agentport-semaphore-"):
        raise ApplicationError(
            "refused semaphore request input: only a semaphore workflow "
            f"(agentport-semaphore-<queue>) on this task queue ({queue})",
            type=REFUSED_INPUT,
            non_retryable=True,
        )
    request = PermitRequest(**data.request.model_dump())
    await activity.client().start_workflow(
        SEMAPHORE_WORKFLOW,
        SemaphoreState(limit=request.limit, check_s=request.check_s, max_events=data.max_events),
        id=data.semaphore_id,
        task_queue=data.task_queue,
        start_signal=ACQUIRE_SIGNAL,
        start_signal_args=[request],
    )


@activity.defn(name=HOLDERS_GONE_ACTIVITY)
async def holders_gone(raw: RawValue) -> list[int]:
    """Indexes of the holders (`HolderRefs`) whose workflow run is no longer running (or
    unknown)."""
    holders = parse(HolderRefs, raw, "semaphore holders").holders
    client = activity.client()
    gone: list[int] = []
    for index, ref in enumerate(holders):
        handle = client.get_workflow_handle(ref.holder_id, run_id=ref.holder_run_id)
        try:
            status = (await handle.describe()).status
        except RPCError as exc:
            if exc.status is not RPCStatusCode.NOT_FOUND:
                raise
            status = None
        if status is not WorkflowExecutionStatus.RUNNING:
            gone.append(index)
    return gone


SEMAPHORE_ACTIVITIES = [request_permit, holders_gone]


@workflow.defn(name=SEMAPHORE_WORKFLOW)
class SemaphoreWorkflow:
    """At most `limit` permits out at once, granted in request order."""

    @workflow.init
    def __init__(self, state: SemaphoreState) -> None:
        # The input is taken here, not in `run`: a signal that reached a new run (one sent
        # while the previous run continued as new) is handled before `run` starts, and must
        # find the holders and waiters it applies to (a release would be lost otherwise).
        self._state = SemaphoreState(state.limit, state.check_s, state.max_events)
        self._holders = {_key(h): h for h in state.holders}
        self._waiters = [w for w in state.waiters if _key(w) not in self._holders]
        self._regrant: list[PermitRequest] = []
        self._wake = False

    @workflow.signal(name=ACQUIRE_SIGNAL)
    def acquire(self, request: PermitRequest) -> None:
        self._state.limit = max(1, request.limit)
        self._state.check_s = max(0.1, request.check_s)
        key = _key(request)
        if key in self._holders:  # a retried request: grant it again (the holder dedupes)
            self._regrant.append(request)
        elif all(_key(w) != key for w in self._waiters):
            self._waiters.append(request)
        self._wake = True

    @workflow.signal(name=RELEASE_SIGNAL)
    def release(self, release: PermitRelease) -> None:
        key = _key(release)
        self._holders.pop(key, None)
        self._waiters = [w for w in self._waiters if _key(w) != key]
        self._wake = True

    @workflow.query
    def state(self) -> SemaphoreState:
        """The limit, the holders and the waiters (FIFO), as now."""
        return SemaphoreState(
            self._state.limit,
            self._state.check_s,
            self._state.max_events,
            list(self._holders.values()),
            list(self._waiters),
        )

    @workflow.run
    async def run(self, state: SemaphoreState) -> None:  # the state was taken in __init__
        while True:
            self._wake = False
            await self._grant()
            info = workflow.info()
            if (
                info.is_continue_as_new_suggested()
                or info.get_current_history_length() >= self._state.max_events
            ):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self.state())
            saturated = bool(self._waiters) and len(self._holders) >= self._state.limit
            try:
                await workflow.wait_condition(
                    lambda: self._wake,
                    timeout=timedelta(seconds=self._state.check_s) if saturated else None,
                )
            except TimeoutError:
                await self._drop_gone()

    async def _grant(self) -> None:
        granted: list[PermitRequest] = list(self._regrant)
        self._regrant.clear()
        while self._waiters and len(self._holders) < self._state.limit:
            request = self._waiters.pop(0)
            self._holders[_key(request)] = request
            granted.append(request)
        if not granted:
            return
        results = await asyncio.gather(*(self._signal(r) for r in granted), return_exceptions=True)
        for request, result in zip(granted, results, strict=True):
            if isinstance(result, BaseException):  # the holder has closed: free its permit
                self._holders.pop(_key(request), None)
                self._wake = True

    @staticmethod
    async def _signal(request: PermitRequest) -> None:
        handle = workflow.get_external_workflow_handle(
            request.holder_id, run_id=request.holder_run_id
        )
        await handle.signal(PERMIT_SIGNAL, PermitGrant(request.request_id))

    async def _drop_gone(self) -> None:
        holders = list(self._holders.values())
        refs = [HolderRef(holder_id=h.holder_id, holder_run_id=h.holder_run_id) for h in holders]
        gone: list[int] = await workflow.execute_activity(
            HOLDERS_GONE_ACTIVITY,
            wire(HolderRefs(holders=refs)),
            result_type=list[int],
            start_to_close_timeout=_STEP,
            retry_policy=_STEP_RETRY,
        )
        for index in gone:
            self._holders.pop(_key(holders[index]), None)


# ------------------------------------------------------------------ the holder's side


class _Holder:
    """Per workflow run: the permits granted to it, and requests it gave up on (a permit
    that arrives for one of those is given back at once)."""

    def __init__(self) -> None:
        self.granted: set[str] = set()
        self.abandoned: set[str] = set()
        self.semaphore_of: dict[str, str] = {}  # request id -> semaphore workflow id

    async def on_permit(self, grant: PermitGrant) -> None:
        if grant.request_id in self.abandoned:
            await _release(self.semaphore_of.get(grant.request_id, ""), grant.request_id)
            return
        self.granted.add(grant.request_id)


def _holder() -> _Holder:
    handler = workflow.get_signal_handler(PERMIT_SIGNAL)
    holder = getattr(handler, "__self__", None)
    if isinstance(holder, _Holder):
        return holder
    holder = _Holder()
    workflow.set_signal_handler(PERMIT_SIGNAL, holder.on_permit)
    return holder


async def _release(semaphore: str, request_id: str) -> None:
    if not semaphore or not workflow.in_workflow():  # a run torn down by its worker: no-op
        return
    info = workflow.info()
    handle = workflow.get_external_workflow_handle(semaphore)
    with anyio.CancelScope(shield=True):  # also when the caller is being cancelled
        try:
            await handle.signal(
                RELEASE_SIGNAL, PermitRelease(info.workflow_id, info.run_id, request_id)
            )
        except Exception:  # the semaphore is gone: nothing to give back
            workflow.logger.warning("could not release permit %s of %s", request_id, semaphore)


@asynccontextmanager
async def cluster_permit(
    queue: str,
    limit: int,
    request_id: str,
    *,
    workflow_task_queue: str,
    check_s: float = DEFAULT_CHECK_S,
    max_events: int = DEFAULT_MAX_EVENTS,
) -> AsyncIterator[None]:
    """Workflow code: hold one of the *limit* cluster-wide permits of *queue* for the body.
    Waits (durably, FIFO) for a permit; gives it back when the body ends, also on an
    exception or cancellation. *request_id* must be unique within the workflow run."""
    holder = _holder()
    semaphore = semaphore_id(queue)
    holder.semaphore_of[request_id] = semaphore
    info = workflow.info()
    request = PermitRequest(info.workflow_id, info.run_id, request_id, limit, check_s)
    ask = RequestPermit(
        semaphore_id=semaphore,
        task_queue=workflow_task_queue,
        request=PermitRequestData.model_validate(dataclasses.asdict(request)),
        max_events=max_events,
    )
    try:
        while request_id not in holder.granted:  # asked again every minute: a semaphore
            await workflow.execute_activity(  # reset by an operator forgets no waiter
                REQUEST_PERMIT_ACTIVITY,
                wire(ask),
                task_queue=workflow_task_queue,
                start_to_close_timeout=_STEP,
                retry_policy=_STEP_RETRY,
            )
            with suppress(TimeoutError):
                await workflow.wait_condition(
                    lambda: request_id in holder.granted, timeout=_ASK_AGAIN
                )
    except BaseException:
        holder.abandoned.add(request_id)  # a permit arriving later is given back
        await _release(semaphore, request_id)
        raise
    try:
        yield
    finally:
        holder.granted.discard(request_id)
        holder.abandoned.add(request_id)
        await _release(semaphore, request_id)
