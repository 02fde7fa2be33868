"""Deep-research jobs: started by one tool call, polled, waited on, cancelled by others.

A job runs in the server's task group (one per stdio connection, one per HTTP server), so a
stdio client that disconnects cancels its jobs: the cancel scope stops the workflow and the
runner ends any agent process the job started.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import anyio
from anyio.abc import TaskGroup

from ..core import ErrorKind
from ..workflows.deep_research import ResearchEvent, ResearchReport
from ._errors import ToolFailure
from ._outputs import JobStatus

__all__ = ["Job", "JobState", "Jobs"]

JobState = Literal["running", "done", "failed", "cancelled"]
#: finished jobs kept for `research_result` (oldest dropped first)
MAX_FINISHED = 64
#: research jobs running at once (each runs up to CONCURRENCY agent calls)
MAX_RUNNING = 4


@dataclass
class Job:
    """One research run and what the status tool reports about it."""

    id: str
    question: str
    corpus: str | None  # None: web research
    state: JobState = "running"
    phase: str = "start"
    done: int = 0
    expected: int = 0
    message: str = ""
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    report: ResearchReport | None = None
    error: str | None = None
    budget_reached: str | None = None  # the ceiling that stopped the run: a partial report
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    finished: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)

    def on_event(self, event: ResearchEvent) -> None:
        self.done, self.expected = event.done, max(event.expected, event.done)
        if event.kind == "phase":
            self.phase, self.message = event.phase, event.message
        elif event.kind == "call_finished" and not event.ok:
            self.message = f"{event.phase} call failed"
        self._poke()

    def _poke(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def status(self) -> JobStatus:
        end = self.ended if self.ended is not None else time.monotonic()
        return {
            "job_id": self.id,
            "state": self.state,
            "question": self.question,
            "mode": "web" if self.corpus is None else "corpus",
            "corpus": self.corpus,
            "phase": self.phase,
            "calls_done": self.done,
            "calls_expected": self.expected,
            "message": self.message,
            "elapsed_s": round(end - self.started, 3),
            "error": self.error,
            "partial": self.budget_reached is not None,
            "budget_reached": self.budget_reached,
        }


class Jobs:
    """The job table. `start` needs the task group that `running()` provides."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._tg: TaskGroup | None = None

    def attach(self, tg: TaskGroup | None) -> None:
        self._tg = tg
        if tg is None:  # the connection (stdio) or server (HTTP) ended: nothing runs on
            for job in self._jobs.values():
                if job.state == "running":
                    job.state, job.error = "cancelled", "the server stopped"
                    job.scope.cancel()

    def start(
        self, question: str, corpus: str | None, run: Callable[[Job], Awaitable[None]]
    ) -> Job:
        if self._tg is None:
            raise ToolFailure(ErrorKind.server_error, "the server is not accepting jobs")
        if len(self.running()) >= MAX_RUNNING:
            raise ToolFailure(
                ErrorKind.rate_limited,
                f"{MAX_RUNNING} research jobs are already running; wait for one or cancel one",
            )
        job = Job(id="r-" + secrets.token_hex(6), question=question, corpus=corpus)
        self._jobs[job.id] = job
        self._prune()

        async def body() -> None:
            with job.scope:
                try:
                    await run(job)
                except Exception as exc:  # a workflow bug: the job fails, the server lives
                    job.state, job.error = "failed", f"{type(exc).__name__}: {exc}"
            if job.scope.cancel_called and job.state == "running":
                job.state = "cancelled"
            if job.budget_reached is not None:
                job.message = f"budget reached ({job.budget_reached}): the report is partial"
            job.ended = time.monotonic()
            job.finished.set()
            job._poke()

        self._tg.start_soon(body)
        return job

    def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"job_id {job_id!r}: no such job (research_start returns the id)",
            )
        return job

    def cancel(self, job_id: str) -> Job:
        job = self.get(job_id)
        if job.state != "running":
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"job_id {job_id!r}: already {job.state}; nothing to cancel",
            )
        job.state, job.error = "cancelled", "cancelled by the client"
        job.scope.cancel()
        return job

    def running(self) -> list[Job]:
        return [j for j in self._jobs.values() if j.state == "running"]

    def _prune(self) -> None:
        finished = [j for j in self._jobs.values() if j.state != "running"]
        for job in finished[: max(0, len(finished) - MAX_FINISHED)]:
            del self._jobs[job.id]
