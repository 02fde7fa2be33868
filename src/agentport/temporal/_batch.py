"""The batch's file steps as activities, and the data that crosses Temporal's wire.

Workflow code never touches a file: reading graph.json, writing a report, saving and
reviewing a refinement, applying it and writing `batch.json` / `summary.md` are activities on
the workflow task queue (`workflow_queue(prefix)`), so the worker(s) serving that queue must
see the batch's `--out` folder and the graph (one machine, or a shared folder). They are the
same functions the local batch calls (`agentport.workflows.batch`), so both paths write the
same files. Model calls are the `complete` activity on each backend's own queue.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..transport._fs import atomic_write
from ..workflows.batch import (
    BatchState,
    Item,
    Outcome,
    Question,
    apply_saved,
    loop_from_data,
    save_and_review,
    summary_markdown,
)

__all__ = [
    "ApplyItem",
    "BatchJob",
    "BatchResult",
    "FinishBatch",
    "ItemResult",
    "RefineJob",
    "ResearchJob",
    "SaveReview",
    "WriteReport",
    "apply_item",
    "confine_to",
    "finish_batch",
    "item_status",
    "report_suffix",
    "save_review",
    "write_report",
]

T = TypeVar("T")
_ROOTS: tuple[Path, ...] | None = None


def confine_to(roots: Sequence[Path] | None) -> None:
    """The folders this process's file activities may read and write (`agentport worker
    --root`, default the worker's working folder); None = anywhere (an embedding that
    registers `_workflows.ACTIVITIES` itself decides). Workflow input names the paths, and any
    client of the namespace can write workflow input."""
    global _ROOTS
    _ROOTS = None if roots is None else tuple(Path(os.path.realpath(r)) for r in roots)


def _inside(path: str | Path, what: str) -> Path:
    """*path* when it lies under one of the roots (symlinks resolved), else a non-retryable
    `ApplicationError` naming it."""
    if _ROOTS is None:
        return Path(path)
    real = Path(os.path.realpath(path))
    if any(real == root or root in real.parents for root in _ROOTS):
        return Path(path)
    roots = ", ".join(map(str, _ROOTS))
    raise ApplicationError(
        f"{what} {path} is outside this worker's roots ({roots}); start the worker with "
        "--root FOLDER to allow it",
        type="agentport.batch.outside_roots",
        non_retryable=True,
    )


@dataclass(frozen=True)
class ResearchJob:
    """One research question: `item_id` names its report `<item_id>.md` in `out`; `config`
    is a `ResearchConfig.model_dump(mode="json")`; `settings` are `[llm]` overrides for
    the workers' adapters."""

    question: str
    item_id: str
    backend: str
    out: str
    config: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    prefix: str = "agentport"
    heartbeat_s: float = 30.0
    cluster_concurrency: dict[str, int] = field(default_factory=dict)  # backend -> cluster cap
    allowance: dict[str, Any] | None = None  # a share of the batch budget (temporal._budget)
    # the client's [web] table (`_web.web_input`): agentport's own search and fetch
    web: dict[str, Any] = field(default_factory=dict)
    # corpus mode: a folder the workflow workers can read (under their --root), or ""
    corpus: str = ""


@dataclass(frozen=True)
class RefineJob:
    """One DeepRefine question against `graph` (a path the workflow workers can read);
    the loop only: saving, review and apply are the parent's steps."""

    question: str
    item_id: str
    backend: str
    out: str
    graph: str
    settings: dict[str, Any] = field(default_factory=dict)
    prefix: str = "agentport"
    heartbeat_s: float = 30.0
    cluster_concurrency: dict[str, int] = field(default_factory=dict)  # backend -> cluster cap
    allowance: dict[str, Any] | None = None  # a share of the batch budget (temporal._budget)


@dataclass(frozen=True)
class BatchJob:
    """A batch: `kind` `research` or `refine`, `items` as `[id, line, question]` (a refine
    item reviewed by an earlier dry batch: `[id, line, question, trace, actions]`, applied
    without running its loop again when `apply`), at most
    `jobs` questions at once; `heartbeat_s`: a model call whose worker is silent this long
    (a dead worker) is handed to another worker; the other fields as in `ResearchJob` /
    `RefineJob`."""

    kind: str
    items: list[list[Any]]
    backend: str
    out: str
    jobs: int = 4
    config: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    prefix: str = "agentport"
    graph: str = ""
    apply: bool = False
    allow_low: bool = False
    heartbeat_s: float = 30.0
    cluster_concurrency: dict[str, int] = field(default_factory=dict)  # backend -> cluster cap
    budget: dict[str, Any] = field(default_factory=dict)  # the batch budget (temporal._budget)
    web: dict[str, Any] = field(default_factory=dict)  # research: as in ResearchJob
    corpus: str = ""  # research: as in ResearchJob


@dataclass
class ItemResult:
    """One question's result (the fields of `agentport.workflows.batch.Item`)."""

    id: str
    line: int
    question: str
    status: str = "pending"
    report: str | None = None
    error: str | None = None
    trace: str | None = None
    actions: str | None = None
    applied: bool | None = None
    spent: dict[str, Any] | None = None  # under a batch budget: what its calls spent


@dataclass
class BatchResult:
    """The batch's end: counts and every item (`partial` / `not_run`: under a batch
    budget, questions a ceiling stopped / kept from starting)."""

    done: int
    failed: int
    items: list[ItemResult]
    partial: int = 0
    not_run: int = 0


@dataclass(frozen=True)
class WriteReport:
    out: str
    name: str
    text: str


@dataclass(frozen=True)
class SaveReview:
    graph: str
    out: str
    item_id: str
    loop: dict[str, Any]


@dataclass(frozen=True)
class ApplyItem:
    graph: str
    out: str
    item_id: str
    trace: str
    actions: str
    allow_low: bool = False


@dataclass(frozen=True)
class FinishBatch:
    out: str
    kind: str
    items: list[ItemResult]
    budget: dict[str, Any] = field(default_factory=dict)  # batch.json's extra["budget"]


def item_status(outcome: Outcome) -> str:
    """`done`, `failed`, or under a batch budget `partial` (a report) / `not_run` (none)."""
    if outcome.budget is not None:
        return "partial" if outcome.text is not None else "not_run"
    return "done" if outcome.ok else "failed"


def report_suffix(outcome: Outcome) -> str:
    """The report file's suffix: `.md`, `.partial.md` (budget) or `.failed.md`."""
    return ".md" if outcome.ok else ".partial.md" if outcome.budget else ".failed.md"


async def _in_thread(fn: Callable[[], T]) -> T:
    """Run the blocking file step *fn* in a thread while heartbeating every second, so a
    step whose worker died is retried elsewhere after the heartbeat timeout (not after the
    5-minute start-to-close timeout)."""

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await anyio.sleep(1.0)

    async with anyio.create_task_group() as group:
        group.start_soon(beat)
        result = await anyio.to_thread.run_sync(fn)
        group.cancel_scope.cancel()
    return result


@activity.defn(name="agentport.batch.write_report")
async def write_report(data: WriteReport) -> None:
    """Write one report atomically (`<out>/<name>`)."""
    target = _inside(Path(data.out) / data.name, "report")
    await _in_thread(lambda: atomic_write(target, data.text))


@activity.defn(name="agentport.batch.save_review")
async def save_review(data: SaveReview) -> ItemResult:
    """Save the loop's trace and actions, review them, write `<out>/<id>.md` (no apply)."""
    _inside(data.graph, "graph")
    _inside(data.out, "output folder")

    def run() -> ItemResult:
        outcome = save_and_review(Path(data.graph), loop_from_data(data.loop))
        result = ItemResult(data.item_id, 0, "", item_status(outcome))
        result.error, result.trace, result.actions = outcome.error, outcome.trace, outcome.actions
        result.applied = outcome.applied
        if outcome.budget is not None and outcome.error is None:
            result.error = f"{result.status.replace('_', ' ')} (budget: {outcome.budget})"
        if outcome.text is not None:
            name = f"{data.item_id}{report_suffix(outcome)}"
            atomic_write(Path(data.out) / name, outcome.text)
            result.report = name
        return result

    return await _in_thread(run)


@activity.defn(name="agentport.batch.apply")
async def apply_item(data: ApplyItem) -> ItemResult:
    """Apply one reviewed actions file (graph lock, re-read, review, backup, atomic write)
    and append what was applied to `<out>/<id>.md`."""
    for path, what in ((data.graph, "graph"), (data.out, "output folder")):
        _inside(path, what)
    for path in (data.trace, data.actions):
        if path:
            _inside(path, "state file")

    def run() -> ItemResult:
        applied, text, error = apply_saved(
            Path(data.graph), data.trace, data.actions, allow_low=data.allow_low
        )
        report = Path(data.out) / f"{data.item_id}.md"
        if text:
            before = report.read_text(encoding="utf-8") if report.exists() else ""
            atomic_write(report, before + text)
        result = ItemResult(data.item_id, 0, "", "done" if error is None else "failed")
        result.error, result.trace, result.actions, result.applied = (
            error,
            data.trace,
            data.actions,
            applied,
        )
        result.report = report.name
        return result

    return await _in_thread(run)


@activity.defn(name="agentport.batch.finish")
async def finish_batch(data: FinishBatch) -> str:
    """Write `<out>/batch.json` and `<out>/summary.md` as the local batch does; returns
    the summary's path."""
    out = _inside(data.out, "output folder")

    def run() -> str:
        questions = [Question(i.line, i.question, i.id) for i in data.items]
        state = BatchState.open(out, data.kind, questions, ".md")
        for result in data.items:
            fields = {k: v for k, v in asdict(result).items() if k in Item.__dataclass_fields__}
            state.items[result.id] = Item(**fields)
        if data.budget:
            state.extra["budget"] = data.budget
        state.save()
        summary = out / "summary.md"
        atomic_write(summary, summary_markdown(state, questions))
        return str(summary)

    return await _in_thread(run)
