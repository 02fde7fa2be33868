"""The local batch: many questions on one machine, no Temporal.

`run_batch` runs at most `jobs` questions at once (each research run keeps its own call cap,
`ResearchConfig.CONCURRENCY`), writes one report per question into the output folder, keeps
`batch.json` current (atomic writes), reports progress (done / failed / running) through a
callback and ends with `summary.md`. A question whose report is already in the folder is not
run again, so rerunning the same command resumes an interrupted batch; a failed question is
retried on the next run.

Under a batch budget (`gate`, see `_commands`): once the gate says a ceiling is reached no
new question starts (it is `not_run`, "not run (budget)"); a question the ceiling stopped
while it ran is `partial` (its partial report is `<id>.partial<suffix>`, never taken for a
finished one); both run again on the next run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from ...transport import atomic_write
from ._questions import Question
from ._state import BatchState, Item

__all__ = ["Outcome", "Progress", "ProgressCallback", "Summary", "run_batch", "summary_markdown"]


@dataclass(frozen=True)
class Outcome:
    """What one question produced: `ok`, the report `text` (written to `<id><suffix>` when
    given), a one-line `error`, refine-only `trace` / `actions` / `applied`, and `budget`:
    the ceiling that stopped it (e.g. "calls 20/20"; then `ok` is False and the question is
    `partial` with a text, `not_run` without)."""

    ok: bool
    text: str | None = None
    error: str | None = None
    trace: str | None = None
    actions: str | None = None
    applied: bool | None = None
    budget: str | None = None


@dataclass(frozen=True)
class Progress:
    """A progress event: the counts after *item* changed to *item.status*."""

    item: Item
    done: int
    failed: int
    running: int
    pending: int
    total: int


ProgressCallback = Callable[[Progress], None]
Work = Callable[[Question, Item], Awaitable[Outcome]]


@dataclass(frozen=True)
class Summary:
    """The end of a batch: counts, how many were already done (skipped), the file of
    the summary, and under a budget how many ended `partial` or were `not_run` and the
    ceiling reached (None when none was)."""

    done: int
    failed: int
    skipped: int
    total: int
    summary_file: Path
    partial: int = 0
    not_run: int = 0
    budget_reached: str | None = None


async def run_batch(
    state: BatchState,
    questions: list[Question],
    work: Work,
    *,
    jobs: int,
    suffix: str,
    on_progress: ProgressCallback | None = None,
    redo: Callable[[Item], bool] | None = None,
    gate: Callable[[], str | None] | None = None,
) -> Summary:
    """Run *work* for every question of *questions* not done yet (or for which *redo* says
    so), at most *jobs* at once. *gate* (the batch budget) is asked before each question
    starts: a reason (e.g. "calls 20/20") means no new question starts. Never raises for a
    failed question (its error is in the state); cancellation propagates after the state is
    saved."""
    reached: list[str] = []
    todo = [
        q
        for q in questions
        if state.items[q.id].status != "done" or (redo and redo(state.items[q.id]))
    ]
    skipped = len(questions) - len(todo)
    limiter = anyio.CapacityLimiter(max(1, jobs))
    total = len(questions)

    def report(item: Item) -> None:
        state.save()
        if on_progress is not None:
            c = state.counts()
            on_progress(Progress(item, c["done"], c["failed"], c["running"], c["pending"], total))

    async def one(q: Question) -> None:
        item = state.items[q.id]
        async with limiter:
            why = gate() if gate is not None else None
            if why is not None:
                reached.append(why)
                item.status, item.error = "not_run", f"not run (budget: {why})"
                report(item)
                return
            item.status, item.error = "running", None
            report(item)
            try:
                outcome = await work(q, item)
            except Exception as exc:  # a bug in one question must not stop the batch
                outcome = Outcome(False, error=f"{type(exc).__name__}: {exc}".split("\n")[0])
            if outcome.budget is not None:
                reached.append(outcome.budget)
            _record(state, q, item, outcome, suffix)
            report(item)

    state.save()
    try:
        async with anyio.create_task_group() as tg:
            for q in todo:
                tg.start_soon(one, q)
    finally:
        for item in state.items.values():
            if item.status == "running":
                item.status = "pending"
        state.save()
    c = state.counts()
    summary = state.out / "summary.md"
    atomic_write(summary, summary_markdown(state, questions))
    return Summary(
        c["done"],
        c["failed"],
        skipped,
        total,
        summary,
        c["partial"],
        c["not_run"],
        reached[0] if reached else None,
    )


def _record(state: BatchState, q: Question, item: Item, outcome: Outcome, suffix: str) -> None:
    """*outcome* into *item*: its report file written, its status and error."""
    if outcome.text is not None:
        kind = "" if outcome.ok else ".partial" if outcome.budget else ".failed"
        name = f"{q.id}{kind}{suffix}"
        atomic_write(state.out / name, outcome.text)
        item.report = name
    item.status = "done" if outcome.ok else "failed"
    if outcome.budget is not None:
        item.status = "partial" if outcome.text is not None else "not_run"
    item.error = outcome.error
    if outcome.budget is not None and outcome.error is None:
        partial = item.status == "partial"
        item.error = f"{'partial' if partial else 'not run'} (budget: {outcome.budget})"
    item.trace = outcome.trace or item.trace
    item.actions = outcome.actions or item.actions
    item.applied = outcome.applied if outcome.applied is not None else item.applied


def summary_markdown(state: BatchState, questions: list[Question]) -> str:
    """`summary.md`: one row per question of this run (line, status, report, error); a
    question the batch budget kept from starting reads "not run (budget)"."""
    c = state.counts()
    budget = ""
    if c["partial"] or c["not_run"]:
        budget = f", {c['partial']} partial, {c['not_run']} not run (budget)"
    spent = (state.extra.get("budget") or {}).get("spent")
    lines = [
        f"# Batch summary ({state.kind})",
        "",
        f"{c['done']} done, {c['failed']} failed, {c['pending']} pending{budget} of "
        f"{len(questions)}.",
        "",
    ]
    if spent:
        numbers = {k: v for k, v in spent.items() if isinstance(v, int | float) and v}
        shown = ", ".join(f"{k} {v:g}" for k, v in numbers.items())
        if "cost_usd" in numbers and spent.get("cost_state") in ("lower_bound", "unpriced"):
            shown += " (cost a lower bound: a call had no price)"
        lines += [f"Budget: spent so far {shown or 'nothing'}.", ""]
    lines += [
        "| line | status | question | report | error |",
        "|---:|---|---|---|---|",
    ]
    for q in questions:
        item = state.items[q.id]
        cells = [
            str(q.line),
            _STATUS_TEXT.get(item.status, item.status) + (" (applied)" if item.applied else ""),
            _cell(q.text),
            f"[{item.report}]({item.report})" if item.report else "",
            _cell(item.error or ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_STATUS_TEXT = {"not_run": "not run (budget)", "partial": "partial (budget)"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:300]


def write_text(path: Path, text: str) -> None:
    atomic_write(path, text)
