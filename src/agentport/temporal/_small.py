"""Small-model mode on Temporal: one question as one activity on the embedded model's queue.

Small-model mode (the embedded `local` backend's default) asks the model only for choices
the code can check, among the whole corpus (every sentence id) or the whole graph (every
node): the pipeline needs the loaded `Corpus` or `Graph` in the process that makes the
calls, which a workflow cannot hold (its history keeps at most 2 MB per payload). And the
embedded model runs inside the worker's process anyway. So a small-model question runs
whole on the worker that serves the backend's queue (`queue_for(backend)`): the research
run (`small_research`) or the DeepRefine loop (`small_refine`), heartbeating while it
runs; the workflow then writes the report, saves and reviews exactly as for any backend.
A worker that dies mid-question hands it to another worker, which runs it again from the
start (the unit of durability is the question, not the call).

The worker serving that queue reads the corpus or graph through the path authority under
its `--root`s, like the file steps.
"""

# No `from __future__ import annotations`: Temporal's converter resolves these hints in the
# workflow sandbox.
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any

import anyio
from pydantic import Field
from temporalio import activity, workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ApplicationError

from ..catalog import get_capability
from ..core import BackendKind, ProviderError
from ._batch import RefineJob, ResearchJob, _graph, _inside
from ._data import CallSettings, error_to_dict
from ._inputs import REFUSED_INPUT, BackendName, Closed, Label, PathText, parse, wire
from ._queues import _canonical, queue_for

__all__ = [
    "SMALL_ACTIVITIES",
    "SMALL_REFINE_ACTIVITY",
    "SMALL_RESEARCH_ACTIVITY",
    "SMALL_STEP",
    "SmallOutcome",
    "SmallQuestion",
    "embedded",
    "small_refine",
    "small_research",
    "small_step",
]

SMALL_RESEARCH_ACTIVITY = "agentport.research.small"
SMALL_REFINE_ACTIVITY = "agentport.refine.small"
#: the longest a small-model question may run on one worker
SMALL_STEP = timedelta(hours=2)


class SmallQuestion(Closed):
    """One small-model question: research over `corpus` (a folder) or refine against
    `graph` (a graph.json), both under the worker's roots; `config` is the research's
    `ResearchConfig` as data (validated by `small_research`)."""

    question: Annotated[str, Field(max_length=100_000)]
    backend: BackendName
    corpus: PathText = ""
    graph: PathText = ""
    config: dict[str, Any] = Field(default_factory=dict)
    settings: CallSettings = CallSettings()
    call_id: Label = ""


@dataclass
class SmallOutcome:
    """What the question produced: research `ok` / `text` / `error` / `budget` (the
    `Outcome` fields), or a refine loop as `loop` (`loop_to_data`) or `error`."""

    ok: bool = False
    text: str | None = None
    error: str | None = None
    budget: str | None = None
    loop: dict[str, Any] | None = None


def _adapter(data: SmallQuestion) -> Any:
    from ..factory import create_llm_adapter
    from ._activities import _SERVED

    try:
        members = set(_canonical(data.backend))
    except ProviderError:
        members = {data.backend}
    if _SERVED is not None and not members <= _SERVED:
        raise ApplicationError(
            f"refused small-model input: this worker does not serve backend {data.backend!r}",
            type=REFUSED_INPUT,
            non_retryable=True,
        )
    overrides: dict[str, Any] = {}
    if data.settings.model is not None:
        overrides["model"] = data.settings.model
    try:
        return create_llm_adapter(data.backend, **overrides)
    except ProviderError as exc:
        raise ApplicationError(
            str(exc), error_to_dict(exc), type=REFUSED_INPUT, non_retryable=True
        ) from None


async def _beating(run: Any) -> Any:
    async def beat() -> None:
        while True:
            activity.heartbeat()
            await anyio.sleep(2.0)

    async with anyio.create_task_group() as group:
        group.start_soon(beat)
        result = await run()
        group.cancel_scope.cancel()
    return result


@activity.defn(name=SMALL_RESEARCH_ACTIVITY)
async def small_research(raw: RawValue) -> SmallOutcome:
    """One small-model research question over its corpus folder (the whole run, in this
    worker's process). Refused input is a non-retryable `ApplicationError`."""
    from returns.result import Failure

    from ..workflows.batch import research_one
    from ..workflows.deep_research import ResearchConfig, load_corpus
    from ._inputs import validate

    data = parse(SmallQuestion, raw, "small-model research")
    try:
        config = validate(ResearchConfig, data.config, "small-model research")
    except ValueError as exc:
        raise ApplicationError(str(exc), type=REFUSED_INPUT, non_retryable=True) from None
    folder = _inside(data.corpus, "corpus", "dir")
    adapter = _adapter(data)
    loaded = await anyio.to_thread.run_sync(
        lambda: load_corpus(folder, max_passage_chars=config.max_passage_chars)
    )
    if isinstance(loaded, Failure):
        return SmallOutcome(error=loaded.failure().message.split("\n")[0])
    corpus = loaded.unwrap()
    outcome = await _beating(lambda: research_one(data.question, adapter, config, corpus))
    return SmallOutcome(outcome.ok, outcome.text, outcome.error, outcome.budget)


@activity.defn(name=SMALL_REFINE_ACTIVITY)
async def small_refine(raw: RawValue) -> SmallOutcome:
    """One small-model DeepRefine loop against its graph.json (in this worker's process):
    the loop as data, or its one-line error. Refused input is a non-retryable
    `ApplicationError`."""
    from ..workflows.batch import loop_to_data, refine_one

    data = parse(SmallQuestion, raw, "small-model refine")
    layout = _graph(data.graph)
    adapter = _adapter(data)
    loop = await _beating(lambda: refine_one(data.question, adapter, layout.graph))
    if isinstance(loop, str):
        return SmallOutcome(error=loop)
    return SmallOutcome(ok=True, loop=loop_to_data(loop))


# -- workflow side -------------------------------------------------------------------------
_RETRY = RetryPolicy(maximum_attempts=3)  # a worker that died mid-question: run it again


def embedded(backend: str) -> bool:
    """Whether *backend* (any member of a chain) is the embedded model: small-model mode."""
    try:
        return any(get_capability(n).kind is BackendKind.local for n in _canonical(backend))
    except ProviderError:
        return False


async def small_step(
    name: str, job: "ResearchJob | RefineJob", *, corpus: str = "", graph: str = "",
    config: dict[str, Any] | None = None,
) -> SmallOutcome:  # fmt: skip
    """Run small-model question activity *name* on the backend's own queue (`_small`)."""
    step = SmallQuestion(
        question=job.question, backend=job.backend, corpus=corpus, graph=graph,
        config=config or {}, settings=job.settings, call_id=f"{workflow.info().workflow_id}.small",
    )  # fmt: skip
    got: SmallOutcome = await workflow.execute_activity(
        name,
        wire(step),
        result_type=SmallOutcome,
        task_queue=queue_for(job.backend, job.prefix),
        start_to_close_timeout=SMALL_STEP,
        heartbeat_timeout=timedelta(seconds=max(job.heartbeat_s, 30.0)),
        retry_policy=_RETRY,
    )
    return got


#: registered next to `complete` on every backend queue
SMALL_ACTIVITIES = [small_research, small_refine]
