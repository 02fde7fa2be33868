"""The batch's file steps as activities, and the data that crosses Temporal's wire.

Workflow code never touches a file: reading graph.json, writing a report, saving and
reviewing a refinement, applying it and writing `batch.json` / `summary.md` are activities on
the workflow task queue (`workflow_queue(prefix)`), so the worker(s) serving that queue must
see the batch's `--out` folder and the graph (one machine, or a shared folder). They are the
same functions the local batch calls (`agentport.workflows.batch`), so both paths write the
same files. Model calls are the `complete` activity on each backend's own queue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
from pydantic import Field, NonNegativeInt, PositiveInt
from temporalio import activity
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from ..transport import PathRefused, Rooted, Roots
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
from ..workflows.deep_research import ResearchConfig
from ..workflows.deeprefine import Layout
from ._data import CallSettings
from ._inputs import (
    BackendName,
    Closed,
    FileId,
    PathText,
    Prefix,
    ReportName,
    Seconds,
    WebRequest,
    parse,
)

__all__ = [
    "ApplyItem",
    "BatchJob",
    "BatchResult",
    "FinishBatch",
    "ItemResult",
    "ItemRow",
    "LoopData",
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
_ROOTS: Roots | None = None
WRITE_REPORT_ACTIVITY = "agentport.batch.write_report"
SAVE_REVIEW_ACTIVITY = "agentport.batch.save_review"
APPLY_ACTIVITY = "agentport.batch.apply"
FINISH_ACTIVITY = "agentport.batch.finish"
#: `ApplicationError.type` of a path the path authority refuses (never retried)
OUTSIDE_ROOTS = "agentport.batch.outside_roots"


def confine_to(roots: Sequence[Path] | None) -> None:
    """The folders this process's file activities may read and write (`agentport worker
    --root`); None = none (the file activities refuse every path until a worker says).
    Workflow input names the paths, and any client of the namespace writes workflow input."""
    global _ROOTS
    _ROOTS = None if roots is None else Roots.of(roots)


def _located(path: str | Path, what: str) -> Rooted:
    """*path* under one of this worker's roots (`Roots.locate`: absolute, normalised), else
    a non-retryable `ApplicationError` naming it."""
    if _ROOTS is None:
        raise ApplicationError(
            f"{what} {path}: this process serves no folders; start the worker with --root FOLDER",
            type=OUTSIDE_ROOTS,
            non_retryable=True,
        )
    try:
        return _ROOTS.locate(str(path), what)
    except PathRefused as exc:
        raise ApplicationError(
            f"{exc}; start the worker with --root FOLDER to allow a folder",
            type=OUTSIDE_ROOTS,
            non_retryable=True,
        ) from None


def _checked(rooted: Rooted, what: str, kind: str = "any") -> Path:
    """`Rooted.check` (no symbolic link on the way), refusals as `_located`'s."""
    try:
        return rooted.check(kind=kind)
    except PathRefused as exc:
        raise ApplicationError(f"{what} {exc}", type=OUTSIDE_ROOTS, non_retryable=True) from None


def _inside(path: str | Path, what: str, kind: str = "any") -> Path:
    """*path* located under the roots and walked without following a link (`_checked`)."""
    return _checked(_located(path, what), what, kind)


def _graph(path: str) -> Layout:
    """The DeepRefine layout of graph.json at *path*: the graph, its project folder (review
    reads source files there) and its state folder (`.deeprefine/`, traces and actions)
    all under the roots, none through a symbolic link."""
    graph = _inside(path, "graph", "file")
    layout = Layout.for_graph(graph)
    _inside(layout.root, "graph's project folder", "dir")
    _inside(layout.state, "graph's state folder")
    return layout


def _state_file(layout: Layout, path: str, what: str) -> Path:
    """A trace or actions file: a file in the graph's own state folder."""
    rooted = _located(path, what)
    if not rooted.within(_located(layout.state, "graph's state folder")):
        raise ApplicationError(
            f"{what} {path} is not in the graph's state folder {layout.state}",
            type=OUTSIDE_ROOTS,
            non_retryable=True,
        )
    return _checked(rooted, what, "file")


# -- what crosses the wire (closed types, `_inputs`) ------------------------------------------
class ResearchJob(Closed):
    """One research question: `item_id` names its report `<item_id>.md` in `out`; `config`
    is a `ResearchConfig`; `settings` may name the workers' model (`CallSettings`)."""

    question: str = Field(max_length=100_000)
    item_id: FileId
    backend: BackendName
    out: PathText
    config: ResearchConfig = ResearchConfig()
    settings: CallSettings = CallSettings()
    prefix: Prefix = "agentport"
    heartbeat_s: Seconds = 30.0
    cluster_concurrency: dict[BackendName, PositiveInt] = Field(default_factory=dict)
    allowance: dict[str, Any] | None = None  # a share of the batch budget (temporal._budget)
    # the client's [web] table (`_web.web_input`): narrows the worker's own search and fetch
    web: WebRequest = WebRequest()
    # corpus mode: a folder the workflow workers can read (under their --root), or ""
    corpus: PathText = ""


class RefineJob(Closed):
    """One DeepRefine question against `graph` (a path the workflow workers can read);
    the loop only: saving, review and apply are the parent's steps."""

    question: str = Field(max_length=100_000)
    item_id: FileId
    backend: BackendName
    out: PathText
    graph: PathText
    settings: CallSettings = CallSettings()
    prefix: Prefix = "agentport"
    heartbeat_s: Seconds = 30.0
    cluster_concurrency: dict[BackendName, PositiveInt] = Field(default_factory=dict)
    allowance: dict[str, Any] | None = None  # a share of the batch budget (temporal._budget)


#: a batch item: `[id, line, question]`, or reviewed by an earlier dry batch
#: `[id, line, question, trace, actions]` (applied without running its loop again)
BatchItem = (
    tuple[FileId, NonNegativeInt, Annotated[str, Field(max_length=100_000)]]
    | tuple[
        FileId,
        NonNegativeInt,
        Annotated[str, Field(max_length=100_000)],
        PathText | None,
        PathText | None,
    ]
)


class BatchJob(Closed):
    """A batch: `kind` `research` or `refine`, `items` (`BatchItem`), at most `jobs`
    questions at once; `heartbeat_s`: a model call whose worker is silent this long (a dead
    worker) is handed to another worker; the other fields as in `ResearchJob` /
    `RefineJob`."""

    kind: Literal["research", "refine"]
    items: list[BatchItem] = Field(max_length=100_000)
    backend: BackendName
    out: PathText
    jobs: Annotated[int, Field(ge=1, le=1000)] = 4
    config: ResearchConfig = ResearchConfig()
    settings: CallSettings = CallSettings()
    prefix: Prefix = "agentport"
    graph: PathText = ""
    apply: bool = False
    allow_low: bool = False
    heartbeat_s: Seconds = 30.0
    cluster_concurrency: dict[BackendName, PositiveInt] = Field(default_factory=dict)
    budget: dict[str, Any] = Field(default_factory=dict)  # the batch budget (temporal._budget)
    web: WebRequest = WebRequest()  # research: as in ResearchJob
    corpus: PathText = ""  # research: as in ResearchJob


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


class WriteReport(Closed):
    out: PathText
    name: ReportName
    text: str


class LoopData(Closed):
    """`loop_to_data`: the parts of a DeepRefine loop that `save_and_review` needs."""

    trace: dict[str, Any]
    early_exit: bool
    raw: str | None = None
    budget_reached: str | None = None


class SaveReview(Closed):
    graph: PathText
    out: PathText
    item_id: FileId
    loop: LoopData


class ApplyItem(Closed):
    graph: PathText
    out: PathText
    item_id: FileId
    trace: PathText
    actions: PathText
    allow_low: bool = False


class ItemRow(Closed):
    """An `ItemResult` as the `finish` step's input."""

    id: FileId
    line: NonNegativeInt
    question: str
    status: Literal["pending", "running", "done", "failed", "partial", "not_run"] = "pending"
    report: ReportName | None = None
    error: str | None = None
    trace: PathText | None = None
    actions: PathText | None = None
    applied: bool | None = None
    spent: dict[str, Any] | None = None


class FinishBatch(Closed):
    out: PathText
    kind: Literal["research", "refine"]
    items: list[ItemRow]
    budget: dict[str, Any] = Field(default_factory=dict)  # batch.json's extra["budget"]


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

    def caught() -> tuple[T | None, ApplicationError | None]:
        try:  # a refusal leaves the task group as itself, not inside an ExceptionGroup
            return fn(), None
        except ApplicationError as exc:
            return None, exc

    async with anyio.create_task_group() as group:
        group.start_soon(beat)
        result, refused = await anyio.to_thread.run_sync(caught)
        group.cancel_scope.cancel()
    if refused is not None:
        raise refused
    return result  # type: ignore[return-value]


@activity.defn(name=WRITE_REPORT_ACTIVITY)
async def write_report(raw: RawValue) -> None:
    """Write one report atomically (`<out>/<name>`), through the path authority."""
    data = parse(WriteReport, raw, "write_report")
    target = _located(data.out, "output folder").child(data.name)
    await _in_thread(lambda: _write(target, data.text))


def _write(target: Rooted, text: str) -> None:
    try:
        target.write_text(text)
    except PathRefused as exc:
        raise ApplicationError(str(exc), type=OUTSIDE_ROOTS, non_retryable=True) from None


@activity.defn(name=SAVE_REVIEW_ACTIVITY)
async def save_review(raw: RawValue) -> ItemResult:
    """Save the loop's trace and actions, review them, write `<out>/<id>.md` (no apply)."""
    data = parse(SaveReview, raw, "save_review")
    layout = _graph(data.graph)
    out = _located(data.out, "output folder")
    loop = loop_from_data(data.loop.model_dump())

    def run() -> ItemResult:
        outcome = save_and_review(layout.graph, loop)
        result = ItemResult(data.item_id, 0, "", item_status(outcome))
        result.error, result.trace, result.actions = outcome.error, outcome.trace, outcome.actions
        result.applied = outcome.applied
        if outcome.budget is not None and outcome.error is None:
            result.error = f"{result.status.replace('_', ' ')} (budget: {outcome.budget})"
        if outcome.text is not None:
            name = f"{data.item_id}{report_suffix(outcome)}"
            _write(out.child(name), outcome.text)
            result.report = name
        return result

    return await _in_thread(run)


@activity.defn(name=APPLY_ACTIVITY)
async def apply_item(raw: RawValue) -> ItemResult:
    """Apply one reviewed actions file (graph lock, re-read, review, backup, atomic write)
    and append what was applied to `<out>/<id>.md`."""
    data = parse(ApplyItem, raw, "apply")
    layout = _graph(data.graph)
    trace = _state_file(layout, data.trace, "trace")
    actions = _state_file(layout, data.actions, "actions file")
    report = _located(data.out, "output folder").child(f"{data.item_id}.md")

    def run() -> ItemResult:
        applied, text, error = apply_saved(
            layout.graph, str(trace), str(actions), allow_low=data.allow_low
        )
        if text:
            try:
                before = report.read_text() or ""
            except PathRefused as exc:
                raise ApplicationError(str(exc), type=OUTSIDE_ROOTS, non_retryable=True) from None
            _write(report, before + text)
        result = ItemResult(data.item_id, 0, "", "done" if error is None else "failed")
        result.error, result.trace, result.actions, result.applied = (
            error,
            data.trace,
            data.actions,
            applied,
        )
        result.report = report.parts[-1]
        return result

    return await _in_thread(run)


@activity.defn(name=FINISH_ACTIVITY)
async def finish_batch(raw: RawValue) -> str:
    """Write `<out>/batch.json` and `<out>/summary.md` as the local batch does; returns
    the summary's path."""
    data = parse(FinishBatch, raw, "finish")
    folder = _located(data.out, "output folder")
    out = _checked(folder, "output folder")

    def run() -> str:
        questions = [Question(i.line, i.question, i.id) for i in data.items]
        state = BatchState.open(out, data.kind, questions, ".md")
        for row in data.items:
            fields = {k: v for k, v in row.model_dump().items() if k in Item.__dataclass_fields__}
            state.items[row.id] = Item(**fields)
        if data.budget:
            state.extra["budget"] = data.budget
        state.save()
        summary = folder.child("summary.md")
        _write(summary, summary_markdown(state, questions))
        return str(summary)

    return await _in_thread(run)
