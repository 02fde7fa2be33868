"""The two local batches: `research_batch` and `refine_batch` (what `agentport research
--batch` and `agentport refine --batch` run without `--temporal`).

A batch budget (`budget=`) is one `BudgetAdapter` shared by every question of the batch: its
ceilings are the whole batch's. Once one is reached no new question starts ("not run
(budget)"), the questions in flight end partial (their model calls are refused, as in one
run), and the batch ends. What the batch spent is kept in `batch.json`, so a rerun counts
on from there: resume with a bigger budget to continue (`wall` counts from each run's first
call)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

import anyio
from returns.result import Result

from ...core import CompletionConfig, CompletionResponse, LLMAdapter, Message, ProviderError, Usage
from ...policies import Budget, BudgetAdapter
from ..deep_research import Corpus, ResearchConfig
from ._jobs import apply_saved, refine_one, research_one, save_and_review
from ._local import Outcome, ProgressCallback, Summary, run_batch
from ._questions import Question, QuestionsFile
from ._state import BatchState, Item

__all__ = ["BatchBudget", "refine_batch", "research_batch"]


class BatchBudget(BudgetAdapter):
    """The batch's budget over *inner*: counts on from what *state* says the batch spent
    in earlier runs and keeps `state.extra["budget"]` current (saved with the state)."""

    def __init__(self, inner: LLMAdapter, budget: Budget, state: BatchState) -> None:
        super().__init__(inner, budget)
        self._state = state
        spent = dict((state.extra.get("budget") or {}).get("spent") or {})
        self.calls = int(spent.pop("calls", 0) or 0)
        fields = {k: v for k, v in spent.items() if k in Usage.model_fields}
        self.spent = Usage.model_validate(fields)
        self._record()

    def _record(self) -> None:
        ceilings = {k: v for k, v in asdict(self.budget).items() if v is not None}
        usage = self.spent.model_dump(mode="json", exclude={"cached_tokens"})
        spent = {"calls": self.calls, **usage}
        self._state.extra["budget"] = {"ceilings": ceilings, "spent": spent}

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        try:
            return await super().complete(messages, config)
        finally:
            self._record()


def _metered(
    adapter: LLMAdapter, budget: Budget | None, state: BatchState
) -> tuple[LLMAdapter, Callable[[], str | None] | None]:
    """The adapter every question uses and the gate asked before a question starts. A
    batch that had a budget before keeps counting what it spends without one."""
    if budget is None and not state.extra.get("budget"):
        return adapter, None
    if budget is None:
        return BatchBudget(adapter, Budget(), state), None
    meter = BatchBudget(adapter, budget, state)
    return meter, meter.reached


async def research_batch(
    questions: QuestionsFile,
    out: Path,
    adapter: LLMAdapter,
    config: ResearchConfig,
    *,
    corpus: Corpus | None = None,
    jobs: int = 4,
    on_progress: ProgressCallback | None = None,
    budget: Budget | None = None,
) -> Summary:
    """Research every question into `<out>/<id>.md`; resumable (see `run_batch`); *budget*
    is the whole batch's (see the module). Raises `BatchInputError` for an unusable *out*."""
    state = BatchState.open(out, "research", questions.questions, ".md")
    metered, gate = _metered(adapter, budget, state)

    async def work(q: Question, item: Item) -> Outcome:
        return await research_one(q.text, metered, config, corpus)

    return await run_batch(
        state,
        questions.questions,
        work,
        jobs=jobs,
        suffix=".md",
        on_progress=on_progress,
        gate=gate,
    )


async def refine_batch(
    questions: QuestionsFile,
    out: Path,
    adapter: LLMAdapter,
    graph_path: Path,
    *,
    apply: bool = False,
    allow_low: bool = False,
    jobs: int = 4,
    on_progress: ProgressCallback | None = None,
    budget: Budget | None = None,
) -> Summary:
    """Run the DeepRefine loop for every question (*budget*: the whole batch's, see the
    module; a loop it stops keeps its partial trace, nothing applied); the review of each goes to
    `<out>/<id>.md` before anything is applied. With *apply*, the reviewed actions are
    applied one question at a time (one writer per graph: an in-process lock plus the
    graph's own file lock), each against the graph as the previous apply left it; a
    question reviewed by an earlier dry batch is applied from its saved actions without
    running its loop again."""
    state = BatchState.open(out, "refine", questions.questions, ".md")
    metered, gate = _metered(adapter, budget, state)
    writer = anyio.Lock()

    async def apply_one(item: Item, review_text: str) -> Outcome:
        assert item.trace is not None
        assert item.actions is not None
        async with writer:
            applied, text, error = await anyio.to_thread.run_sync(
                lambda: apply_saved(
                    graph_path, str(item.trace), str(item.actions), allow_low=allow_low
                )
            )
        return Outcome(
            error is None,
            review_text + text if error is None else None,  # a refusal keeps the review
            error=error,
            trace=item.trace,
            actions=item.actions,
            applied=applied,
        )

    async def work(q: Question, item: Item) -> Outcome:
        report = out / f"{q.id}.md"
        if apply and item.actions and item.applied is False and report.exists():
            return await apply_one(item, report.read_text(encoding="utf-8"))
        loop = await refine_one(q.text, metered, graph_path)
        if isinstance(loop, str):
            return Outcome(False, error=loop)
        reviewed = await anyio.to_thread.run_sync(lambda: save_and_review(graph_path, loop))
        if not (apply and reviewed.ok and reviewed.actions):
            return reviewed
        item.trace, item.actions = reviewed.trace, reviewed.actions
        return await apply_one(item, reviewed.text or "")

    def redo(item: Item) -> bool:
        return apply and bool(item.actions) and item.applied is False

    return await run_batch(
        state,
        questions.questions,
        work,
        jobs=jobs,
        suffix=".md",
        on_progress=on_progress,
        redo=redo,
        gate=gate,
    )
