"""A one-call workflow for the activity tests: it runs `execute_complete` once, in the
workflow sandbox like real workflow code, and returns the `CompleteOutput`."""

# No `from __future__ import annotations`: the converter resolves CallArgs in the sandbox.

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from agentport.core import CompletionConfig
    from agentport.temporal import CompleteOutput, execute_complete

PROBE_QUEUE_SUFFIX = ".probe"


@dataclass(frozen=True)
class CallArgs:
    backend: str
    prompt: str
    prefix: str
    call_id: str = "call-1"
    settings: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    heartbeat_s: float = 30.0
    initial_retry_s: float = 0.05
    attempts: int = 5


@workflow.defn(name="agentport-test.call")
class CallWorkflow:
    @workflow.run
    async def run(self, args: CallArgs) -> CompleteOutput:
        return await execute_complete(
            args.backend,
            [{"role": "user", "content": args.prompt}],
            CompletionConfig(**args.config),
            call_id=args.call_id,
            settings=args.settings,
            prefix=args.prefix,
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=args.initial_retry_s),
                maximum_attempts=args.attempts,
            ),
            heartbeat_timeout=timedelta(seconds=args.heartbeat_s),
        )
