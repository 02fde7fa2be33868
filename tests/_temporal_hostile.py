"""A hostile client of the namespace: a workflow on its own task queue that schedules one of
agentport's activities BY NAME on the victim worker's queue with input it crafted, and
reports how it ended. Retries are unlimited (as a hostile client would set them): only a
non-retryable failure ends the attempt early."""

# No `from __future__ import annotations`: the converter resolves these hints in the sandbox.

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

HOSTILE_QUEUE = "hostile.probe"


@dataclass(frozen=True)
class Attack:
    activity: str
    queue: str
    payload: Any


@dataclass(frozen=True)
class Outcome:
    ok: bool
    error_type: str = ""
    non_retryable: bool = False
    message: str = ""
    attempts_left: bool = True


@workflow.defn(name="hostile.attack")
class AttackWorkflow:
    @workflow.run
    async def run(self, attack: Attack) -> Outcome:
        try:
            await workflow.execute_activity(
                attack.activity,
                attack.payload,
                task_queue=attack.queue,
                start_to_close_timeout=timedelta(seconds=30),
                schedule_to_close_timeout=timedelta(seconds=45),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=0),
            )
        except ActivityError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError):
                return Outcome(False, cause.type or "", cause.non_retryable, cause.message)
            return Outcome(False, type(cause).__name__, False, str(cause))
        return Outcome(True)
