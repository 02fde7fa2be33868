"""Workflows for the cluster-cap tests (tests/temporal/test_temporal_cluster_cap.py): one
call through `execute_complete` with a `cluster_concurrency`, and a bare permit holder."""

# No `from __future__ import annotations`: the converter resolves these in the sandbox.

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agentport.core import CompletionConfig
    from agentport.temporal import CompleteOutput, execute_complete
    from agentport.temporal._semaphore import cluster_permit


@dataclass(frozen=True)
class CapCall:
    prompt: str
    prefix: str
    cluster_concurrency: dict[str, int]
    settings: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)


@workflow.defn(name="agentport-test.capped-call")
class CappedCallWorkflow:
    @workflow.run
    async def run(self, args: CapCall) -> CompleteOutput:
        return await execute_complete(
            "openai_compat",
            [{"role": "user", "content": args.prompt}],
            CompletionConfig(**args.config),
            call_id=f"{workflow.info().workflow_id}.1",
            settings=args.settings,
            prefix=args.prefix,
            cluster_concurrency=args.cluster_concurrency,
        )


@dataclass(frozen=True)
class Hold:
    queue: str
    workflow_queue: str
    limit: int
    hold_s: float
    check_s: float = 10.0
    max_events: int = 2000


@workflow.defn(name="agentport-test.permit-holder")
class PermitHolderWorkflow:
    """Holds one permit for `hold_s` seconds (a durable timer); returns the workflow times
    at which it got and gave back the permit."""

    @workflow.run
    async def run(self, hold: Hold) -> list[datetime]:
        async with cluster_permit(
            hold.queue, hold.limit, "permit", workflow_task_queue=hold.workflow_queue,
            check_s=hold.check_s, max_events=hold.max_events,
        ):  # fmt: skip
            got = workflow.now()
            await workflow.sleep(timedelta(seconds=hold.hold_s))
            gave_back = workflow.now()
        return [got, gave_back]
