"""The client side of a batch on Temporal: connect, submit, follow, status.

A batch is the workflow `agentport.batch` with id `--batch-id` (default
`agentport-<kind>-<out folder name>-<UTC time>`), on the workflow task queue. It keeps
running when the client exits; `agentport batch status ID --temporal HOST:PORT` (or the
Temporal UI) follows it. An id that exists, running or closed, is refused (one line): a
batch id names one run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from ..core import ProviderError
from ..workflows.batch import BatchInputError
from ._batch import BatchJob, BatchResult
from ._inputs import wire
from ._queues import DEFAULT_PREFIX, workflow_queue
from ._workflows import BATCH_WORKFLOW, BatchWorkflow

__all__ = ["BatchStatus", "connect", "default_batch_id", "follow", "start_batch", "status"]

CONNECT_TIMEOUT_S = 5.0


async def connect(address: str, namespace: str = "default") -> Client:
    """A client of the cluster at *address* (`HOST:PORT`). Raises `BatchInputError` (one
    line) for a malformed address or a server that does not answer within 5 s."""
    from ._worker import connect as worker_connect

    try:
        return await worker_connect(address, namespace, timeout_s=CONNECT_TIMEOUT_S)
    except ProviderError as exc:
        raise BatchInputError(str(exc)) from None


def default_batch_id(kind: str, out_name: str) -> str:
    """`agentport-<kind>-<out folder name>-<YYYYmmddTHHMMSS>` (UTC): new per submission."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"agentport-{kind}-{out_name or 'batch'}-{stamp}"


async def start_batch(
    client: Client, job: BatchJob, batch_id: str
) -> WorkflowHandle[BatchWorkflow, BatchResult]:
    """Submit *job* as workflow *batch_id*. Raises `BatchInputError` when that id exists."""
    try:
        handle: WorkflowHandle[BatchWorkflow, BatchResult] = await client.start_workflow(
            BATCH_WORKFLOW,
            wire(job),  # the closed type the workflow parses (`_inputs`)
            result_type=BatchResult,
            id=batch_id,
            task_queue=workflow_queue(job.prefix or DEFAULT_PREFIX),
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        )
    except WorkflowAlreadyStartedError:
        raise BatchInputError(
            f"batch id {batch_id!r} exists on the cluster; follow it with `agentport batch "
            f"status {batch_id} --temporal ...` or pass another --batch-id"
        ) from None
    return handle


class BatchStatus:
    """A batch as the cluster sees it: `state` (running, completed, failed, ...) and the
    latest `progress` (None when the workflow has not answered a query yet)."""

    def __init__(self, state: str, progress: BatchResult | None) -> None:
        self.state = state
        self.progress = progress

    def line(self) -> str:
        p = self.progress
        if p is None:
            return f"{self.state}"
        running = sum(1 for i in p.items if i.status == "running")
        budget = f", {p.partial} partial, {p.not_run} not run (budget)"
        return (
            f"{self.state}: {p.done} done, {p.failed} failed, {running} running"
            f"{budget if p.partial or p.not_run else ''} of {len(p.items)}"
        )


async def status(client: Client, batch_id: str) -> BatchStatus:
    """The batch's state and progress. Raises `BatchInputError` for an unknown id."""
    handle = client.get_workflow_handle_for(BatchWorkflow.run, batch_id)
    try:
        described = await handle.describe()
    except RPCError:
        raise BatchInputError(f"no batch with id {batch_id!r} on this cluster") from None
    state = described.status
    name = state.name.lower() if state is not None else "unknown"
    if state == WorkflowExecutionStatus.COMPLETED:
        return BatchStatus(name, await handle.result())
    if state == WorkflowExecutionStatus.RUNNING:
        try:
            progress = await handle.query(BatchWorkflow.progress, rpc_timeout=timedelta(seconds=10))
        except RPCError:
            progress = None
        return BatchStatus(name, progress)
    return BatchStatus(name, None)


async def follow(
    client: Client,
    batch_id: str,
    on_status: Callable[[BatchStatus], None] | None = None,
    *,
    poll_s: float = 1.0,
) -> BatchStatus:
    """Poll the batch every *poll_s* until it closes; *on_status* sees each change."""
    last = ""
    while True:
        now = await status(client, batch_id)
        if on_status is not None and now.line() != last:
            on_status(now)
            last = now.line()
        if now.state != "running":
            return now
        await asyncio.sleep(poll_s)
