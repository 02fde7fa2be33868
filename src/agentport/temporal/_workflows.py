"""Durable workflows: deep research (one question), DeepRefine (one question against one
graph) and a batch over many questions, on Temporal.

How the pipelines stay inside Temporal's rules (deterministic workflow code):

- Every model call is an activity. `ActivityAdapter` is an `LLMAdapter` whose `complete()`
  runs the `complete` activity (`execute_complete`) on the backend's task queue, so the
  research pipeline (`run_research`) and the DeepRefine loop (`run_loop`) run unchanged in
  the workflow; their web search and fetch are the agent's own tools inside those calls,
  or, for a backend without web tools, agentport's own: each search and each page fetch
  is an activity on `<prefix>.web` (`_web`), injected into `run_research`.
  Every file the jobs touch (graph.json, the reports, the trace, the actions, apply) is an
  activity too (`_batch`); workflow code does no I/O.
- Concurrency: the pipeline's task groups, its single `PriorityLimiter` and its events are
  anyio on asyncio, and a Temporal workflow runs on Temporal's own deterministic asyncio
  event loop: tasks start in program order, and activity results are delivered in history
  order, so a replay schedules the same calls in the same order. The research phases (scope,
  search -> fetch+extract with no barrier, verify waves, synthesis) are unchanged.
- Deterministic ids: a call's activity id is `<workflow id>.<n>` where n counts the calls
  in the order the workflow code makes them; a question's child workflow id is
  `<batch id>.<question id>` (the question id is a hash of its text).
- No wall clock in decisions: the pipeline reads `time.monotonic()` only for the report's
  `durationS` statistic (data, never a branch); timers are not used.
- Sandbox: the workflow sandbox re-imports workflow modules per run; agentport and its pure
  dependencies (pydantic, anyio, returns) are passed through (`workflow_runner()`), which is
  safe because the workflow code paths above do no I/O. Workers should run with a fixed
  `PYTHONHASHSEED` so any set iteration is the same in every worker process.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

with workflow.unsafe.imports_passed_through():
    from returns.result import Failure, Result

    from ..core import (
        ClosableAdapter,
        CompletionConfig,
        CompletionResponse,
        Message,
        ProviderError,
    )
    from ..workflows.batch import loop_to_data, research_outcome
    from ..workflows.deep_research import (
        Passage,
        SearchedPassages,
        check_web_search,
        run_research,
    )
    from ..workflows.deeprefine import Graph, InputError, Triple, run_loop
    from ..workflows.deeprefine import triple_from_row as _triple
    from ..workflows.deeprefine import triple_row as _row
    from ._activities import execute_complete
    from ._batch import (
        APPLY_ACTIVITY,
        FINISH_ACTIVITY,
        SAVE_REVIEW_ACTIVITY,
        WRITE_REPORT_ACTIVITY,
        ApplyItem,
        BatchJob,
        BatchResult,
        FinishBatch,
        ItemResult,
        ItemRow,
        LoopData,
        RefineJob,
        ResearchJob,
        SaveReview,
        WriteReport,
        apply_item,
        finish_batch,
        item_status,
        report_suffix,
        save_review,
        write_report,
    )
    from ._budget import BudgetPool, budget_error, metered, spent_if_metered  # batch budget
    from ._corpus import READ_CORPUS_ACTIVITY, CorpusRead, CorpusReadResult, read_corpus
    from ._data import failure_line
    from ._graph import READ_GRAPH_ACTIVITY, GraphRead, GraphReadResult, read_graph
    from ._inputs import parse, wire
    from ._queues import workflow_queue
    from ._semaphore import SEMAPHORE_ACTIVITIES, SemaphoreWorkflow  # the cluster-wide caps
    from ._small import SMALL_REFINE_ACTIVITY, SMALL_RESEARCH_ACTIVITY, embedded, small_step
    from ._web import activity_web  # agentport's own search and fetch as activities

__all__ = [
    "ACTIVITIES",
    "WORKFLOWS",
    "ActivityAdapter",
    "BatchWorkflow",
    "RefineWorkflow",
    "ResearchWorkflow",
    "workflow_runner",
]

_FILE_STEP = timedelta(minutes=5)  # a file activity: read, write, review or apply
# a file step that fails three times (a folder that cannot be written) fails its question
_FILE_RETRY = RetryPolicy(maximum_attempts=3)
# file steps heartbeat every second: a dead worker's step moves on after this much silence
_FILE_HEARTBEAT = timedelta(seconds=10)


class ActivityAdapter(ClosableAdapter):
    """An `LLMAdapter` for workflow code: each `complete()` is one `complete` activity on
    *backend*'s queue, with the deterministic activity id `<id_prefix>.<n>`."""

    def __init__(
        self,
        backend: str,
        settings: dict[str, Any],
        prefix: str,
        id_prefix: str,
        heartbeat_s: float = 30.0,
        cluster_concurrency: dict[str, int] | None = None,
    ) -> None:
        self._heartbeat = timedelta(seconds=heartbeat_s)
        self._cluster_caps = cluster_concurrency or {}  # [temporal] cluster_concurrency
        self._backend = backend
        self._settings = settings
        self._prefix = prefix
        self._id_prefix = id_prefix
        self.calls = 0

    @property
    def backend(self) -> str:
        return self._backend

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        self.calls += 1
        out = await execute_complete(
            self._backend,
            list(messages),
            config,
            call_id=f"{self._id_prefix}.{self.calls}",
            settings=self._settings,
            prefix=self._prefix,
            heartbeat_timeout=self._heartbeat,
            cluster_concurrency=self._cluster_caps,
        )
        return out.to_result(config.output_schema if config is not None else None)


class ActivityGraph:
    """A `GraphSource` for workflow code: each read of graph.json at *path* is one
    `read_graph` activity on the workflow queue (`_graph`), so history holds the triples a
    hop kept, never the graph. A graph that stops loading raises `InputError` (one line)."""

    def __init__(self, path: str, prefix: str) -> None:
        self._path = path
        self._prefix = prefix

    @property
    def path(self) -> Path:
        return Path(self._path)

    @property
    def graph(self) -> Graph | None:
        return None

    async def read(self, op: str, **fields: Any) -> GraphReadResult:
        got: GraphReadResult = await workflow.execute_activity(
            READ_GRAPH_ACTIVITY,
            wire(GraphRead(graph=self._path, op=op, **fields)),
            result_type=GraphReadResult,
            task_queue=workflow_queue(self._prefix),
            start_to_close_timeout=_FILE_STEP,
            retry_policy=_FILE_RETRY,
            heartbeat_timeout=_FILE_HEARTBEAT,
        )
        if got.error:
            raise InputError(self.path, "", got.error)
        return got

    async def match(self, question: str, cap: int) -> tuple[list[Triple], str]:
        got = await self.read("match", question=question, cap=cap)
        return [_triple(r) for r in got.triples], got.text

    async def expand(
        self, question: str, previous: list[Triple], cap: int
    ) -> tuple[list[Triple], str]:
        rows = [_row(t) for t in previous]
        got = await self.read("expand", question=question, previous=rows, cap=cap)
        return [_triple(r) for r in got.triples], got.text

    async def source_hints(self, triples: list[Triple]) -> str:
        return (await self.read("hints", previous=[_row(t) for t in triples])).text


class ActivityCorpus:
    """A `CorpusSource` for workflow code: each search and quote check of the corpus
    folder at *path* is one `read_corpus` activity on the workflow queue (`_corpus`), so
    history holds the passages a search returned, never the corpus. A read that fails (the
    folder stopped indexing) finds nothing and keeps its one line in `error`: the question
    then fails with it."""

    def __init__(self, path: str, max_passage_chars: int, prefix: str) -> None:
        self._path = path
        self._chars = max_passage_chars
        self._prefix = prefix
        self._searched = SearchedPassages()
        self.skipped: list[str] = []
        self.error = ""

    async def read(self, op: str, **fields: Any) -> CorpusReadResult:
        got: CorpusReadResult = await workflow.execute_activity(
            READ_CORPUS_ACTIVITY,
            wire(CorpusRead(corpus=self._path, op=op, max_passage_chars=self._chars, **fields)),
            result_type=CorpusReadResult,
            task_queue=workflow_queue(self._prefix),
            start_to_close_timeout=_FILE_STEP,
            retry_policy=_FILE_RETRY,
            heartbeat_timeout=_FILE_HEARTBEAT,
        )
        self.error = self.error or got.error
        if op == "open":
            self.skipped = got.skipped
        return got

    def passage(self, url: str) -> Passage | None:
        return self._searched.by_url.get(url)

    async def search(self, query: str, k: int, *, exclude: Sequence[str] = ()) -> list[Passage]:
        got = await self.read("search", query=query, k=k, exclude=list(exclude))
        return self._searched.keep(got.passages)

    async def grounded(self, quote_text: str, url: str) -> bool:
        return (await self.read("grounded", quote=quote_text, url=url)).found


RESEARCH_WORKFLOW = "agentport.research"
REFINE_WORKFLOW = "agentport.refine"
BATCH_WORKFLOW = "agentport.batch"

#: `ApplicationError.type` of a question's workflow that ended FAILED (`ended`)
QUESTION_FAILED = "agentport.question_failed"


def ended(result: ItemResult) -> ItemResult:
    """*result* as a question workflow's return value; a failed question instead ends its
    workflow FAILED (non-retryable `ApplicationError` of type `QUESTION_FAILED`, the
    `ItemResult` as its details), so Temporal's own status finds failures: the UI's filter,
    `temporal workflow list --query 'ExecutionStatus="Failed"'`. The batch reads the
    details back (`BatchWorkflow`); `partial` / `not_run` under a budget are not failures."""
    if result.status == "failed":
        raise ApplicationError(
            result.error or "failed",
            dataclasses.asdict(result),
            type=QUESTION_FAILED,
            non_retryable=True,
        )
    return result


@workflow.defn(name=RESEARCH_WORKFLOW, failure_exception_types=[Exception])
class ResearchWorkflow:
    """One research question: `run_research` with every model call an activity; the
    report (the same Markdown as the local batch) is written by an activity."""

    @workflow.run
    async def run(self, raw: RawValue) -> ItemResult:
        return ended(await self._question(parse(ResearchJob, raw, RESEARCH_WORKFLOW)))

    async def _question(self, job: ResearchJob) -> ItemResult:
        adapter = ActivityAdapter(
            job.backend, job.settings.model_dump(exclude_none=True), job.prefix,
            workflow.info().workflow_id, job.heartbeat_s,
            cluster_concurrency=job.cluster_concurrency,
        )  # fmt: skip
        config = job.config
        if config.small_model:  # the whole question on the model's own worker (_small)
            return await _small_research(job)
        corpus = None
        if job.corpus:  # corpus mode: the folder stays on the workers' disk (_corpus)
            corpus = ActivityCorpus(job.corpus, config.max_passage_chars, job.prefix)
            if (await corpus.read("open")).error:
                return _failed(job, corpus.error)
        refusal = (
            None if config.assume_web_tools or corpus is not None else check_web_search(job.backend)
        )
        # a backend without web tools: agentport's own search and fetch, as activities (_web)
        tools = (
            None
            if refusal is None
            else activity_web(
                job.web, refusal, job.prefix, workflow.info().workflow_id, job.heartbeat_s
            )
        )
        if isinstance(tools, str):  # no search engine in the job's [web] table
            return _failed(job, tools)
        share = metered(adapter, job.allowance)  # a share of the batch budget (_budget)
        report = await run_research(
            job.question, share, config=config, corpus=corpus, web_tools=tools
        )
        if corpus is not None and corpus.error:
            return _failed(job, corpus.error)
        outcome = research_outcome(report)
        result = ItemResult(job.item_id, 0, job.question, item_status(outcome))
        result.error = budget_error(result.status, outcome.error, outcome.budget)
        result.spent = spent_if_metered(share)
        if outcome.text is not None:
            name = f"{job.item_id}{report_suffix(outcome)}"
            await workflow.execute_activity(
                WRITE_REPORT_ACTIVITY,
                wire(WriteReport(out=job.out, name=name, text=outcome.text)),
                task_queue=workflow_queue(job.prefix),
                start_to_close_timeout=_FILE_STEP,
                retry_policy=_FILE_RETRY,
                heartbeat_timeout=_FILE_HEARTBEAT,
            )
            result.report = name
        return result


def _failed(job: ResearchJob, error: str) -> ItemResult:
    failed = ItemResult(job.item_id, 0, job.question, "failed")
    failed.error = error
    return failed


@workflow.defn(name=REFINE_WORKFLOW, failure_exception_types=[Exception])
class RefineWorkflow:
    """One DeepRefine question: the loop, its graph reads and model calls activities
    (graph.json stays on the workers' disk: `ActivityGraph`), then save the trace and
    actions and review them (activity). Nothing is applied here: the batch applies, one
    question at a time."""

    @workflow.run
    async def run(self, raw: RawValue) -> ItemResult:
        return ended(await self._question(parse(RefineJob, raw, REFINE_WORKFLOW)))

    async def _question(self, job: RefineJob) -> ItemResult:
        result = ItemResult(job.item_id, 0, job.question, "failed")
        graph = ActivityGraph(job.graph, job.prefix)
        try:
            await graph.read("open")  # a graph that does not load fails here, in one line
        except InputError as exc:
            result.error = str(exc)
            return result
        if embedded(job.backend):  # small-model mode: the loop on the model's worker (_small)
            small = await small_step(SMALL_REFINE_ACTIVITY, job, graph=job.graph)
            if small.loop is None:
                result.error = small.error or "the small-model loop returned nothing"
                return result
            return await _save_review(job, LoopData.model_validate(small.loop), None)
        adapter = ActivityAdapter(
            job.backend, job.settings.model_dump(exclude_none=True), job.prefix,
            workflow.info().workflow_id, job.heartbeat_s,
            cluster_concurrency=job.cluster_concurrency,
        )  # fmt: skip
        share = metered(adapter, job.allowance)  # a share of the batch budget (_budget)
        try:
            loop = await run_loop(share, graph, job.question)
        except InputError as exc:  # graph.json changed into one that does not load
            result.error = str(exc)
            return result
        result.spent = spent_if_metered(share)
        if isinstance(loop, Failure):
            result.error = str(loop.failure()).split("\n")[0]
            return result
        loop_data = LoopData.model_validate(loop_to_data(loop.unwrap()))
        return await _save_review(job, loop_data, result.spent)


async def _save_review(job: RefineJob, loop: LoopData, spent: dict[str, Any] | None) -> ItemResult:
    review = SaveReview(graph=job.graph, out=job.out, item_id=job.item_id, loop=loop)
    saved: ItemResult = await workflow.execute_activity(
        SAVE_REVIEW_ACTIVITY,
        wire(review),
        result_type=ItemResult,
        task_queue=workflow_queue(job.prefix),
        start_to_close_timeout=_FILE_STEP,
        retry_policy=_FILE_RETRY,
        heartbeat_timeout=_FILE_HEARTBEAT,
    )
    saved.question, saved.spent = job.question, spent
    return saved


async def _small_research(job: ResearchJob) -> ItemResult:
    if not job.corpus:
        return _failed(job, "small-model mode researches a local folder: add --corpus DIR")
    small = await small_step(
        SMALL_RESEARCH_ACTIVITY, job, corpus=job.corpus, config=job.config.model_dump(mode="json")
    )
    result = ItemResult(job.item_id, 0, job.question, "done" if small.ok else "failed")
    result.error = small.error
    if small.text is not None:
        name = f"{job.item_id}{'.md' if small.ok else '.failed.md'}"
        await workflow.execute_activity(
            WRITE_REPORT_ACTIVITY,
            wire(WriteReport(out=job.out, name=name, text=small.text)),
            task_queue=workflow_queue(job.prefix),
            start_to_close_timeout=_FILE_STEP,
            retry_policy=_FILE_RETRY,
            heartbeat_timeout=_FILE_HEARTBEAT,
        )
        result.report = name
    return result


@workflow.defn(name=BATCH_WORKFLOW)
class BatchWorkflow:
    """Many questions: one child workflow per question (`<batch id>.<question id>`), at
    most `jobs` at once; a refine batch with `apply` applies each reviewed question in
    turn (one writer per graph). `progress` (query) reports every item's status while it
    runs; at the end `batch.json` and `summary.md` are written (activity)."""

    def __init__(self) -> None:
        self._items: dict[str, ItemResult] = {}

    @workflow.query
    def progress(self) -> BatchResult:
        items = list(self._items.values())
        done = sum(1 for i in items if i.status == "done")
        failed = sum(1 for i in items if i.status == "failed")
        partial = sum(1 for i in items if i.status == "partial")
        not_run = sum(1 for i in items if i.status == "not_run")
        return BatchResult(done, failed, items, partial, not_run)

    @workflow.run
    async def run(self, raw: RawValue) -> BatchResult:
        job = parse(BatchJob, raw, BATCH_WORKFLOW)
        reviewed: dict[str, ItemResult] = {}
        for item_id, line, question, *saved in job.items:
            self._items[str(item_id)] = ItemResult(str(item_id), int(line), str(question))
            if len(saved) == 2 and saved[0] and saved[1]:  # reviewed by an earlier batch
                done = ItemResult(str(item_id), int(line), str(question), "done")
                done.trace, done.actions, done.report = saved[0], saved[1], f"{item_id}.md"
                reviewed[str(item_id)] = done
        slots = asyncio.Semaphore(max(1, job.jobs))
        writer = asyncio.Lock()
        base = workflow.info().workflow_id
        queue = workflow_queue(job.prefix)

        # the batch budget: a child starts with an allowance from the pool (_budget)
        pool = BudgetPool(job.budget, lambda: workflow.now().timestamp(), workflow.wait_condition)

        async def one(item: ItemResult) -> None:
            async with slots:
                allowance = None
                if job.budget and item.id not in reviewed:
                    allowance = await pool.acquire()
                    if allowance is None:  # a ceiling is reached: no new question starts
                        item.status = "not_run"
                        item.error = budget_error("not_run", None, pool.reached)
                        return
                item.status = "running"
                try:
                    got = reviewed.get(item.id) or await self._child(
                        job, item, f"{base}.{item.id}", queue, allowance
                    )
                except ChildWorkflowError as exc:
                    got = _failed_child(exc, item)
                else:
                    got.spent = got.spent or {}
                if allowance is not None:
                    pool.release(allowance, got.spent)
            if job.apply and got.status == "done" and got.actions and got.trace:
                async with writer:
                    got = await self._apply(job, item, got, queue)
            item.status, item.error, item.report = got.status, got.error, got.report
            item.trace, item.actions, item.applied = got.trace, got.actions, got.applied

        await asyncio.gather(*(one(item) for item in self._items.values()))
        finish = FinishBatch(
            out=job.out,
            kind=job.kind,
            items=[ItemRow.model_validate(dataclasses.asdict(i)) for i in self._items.values()],
            budget=pool.data() if job.budget else {},
        )
        await workflow.execute_activity(
            FINISH_ACTIVITY,
            wire(finish),
            task_queue=queue,
            start_to_close_timeout=_FILE_STEP,
            retry_policy=_FILE_RETRY,
            heartbeat_timeout=_FILE_HEARTBEAT,
        )
        return self.progress()

    @staticmethod
    async def _apply(job: BatchJob, item: ItemResult, got: ItemResult, queue: str) -> ItemResult:
        assert got.trace is not None
        assert got.actions is not None
        try:
            step = ApplyItem(
                graph=job.graph, out=job.out, item_id=item.id, trace=got.trace,
                actions=got.actions, allow_low=job.allow_low,
            )  # fmt: skip
            applied: ItemResult = await workflow.execute_activity(
                APPLY_ACTIVITY,
                wire(step),
                result_type=ItemResult,
                task_queue=queue,
                start_to_close_timeout=_FILE_STEP,
                retry_policy=_FILE_RETRY,
                heartbeat_timeout=_FILE_HEARTBEAT,
            )
        except ActivityError as exc:
            got.status, got.error = "failed", f"apply: {failure_line(exc)}"
            return got
        return applied

    @staticmethod
    async def _child(
        job: BatchJob,
        item: ItemResult,
        child_id: str,
        queue: str,
        allowance: dict[str, Any] | None = None,  # a share of the batch budget (_budget)
    ) -> ItemResult:
        if job.kind == "research":
            research = ResearchJob(
                question=item.question, item_id=item.id, backend=job.backend, out=job.out,
                config=job.config, settings=job.settings, prefix=job.prefix,
                heartbeat_s=job.heartbeat_s, cluster_concurrency=job.cluster_concurrency,
                web=job.web, allowance=allowance, corpus=job.corpus,
            )  # fmt: skip
            done: ItemResult = await workflow.execute_child_workflow(
                RESEARCH_WORKFLOW, wire(research), id=child_id, task_queue=queue,
                result_type=ItemResult,
            )  # fmt: skip
            return done
        refine = RefineJob(
            question=item.question, item_id=item.id, backend=job.backend, out=job.out,
            graph=job.graph, settings=job.settings, prefix=job.prefix,
            heartbeat_s=job.heartbeat_s, cluster_concurrency=job.cluster_concurrency,
            allowance=allowance,
        )  # fmt: skip
        reviewed: ItemResult = await workflow.execute_child_workflow(
            REFINE_WORKFLOW, wire(refine), id=child_id, task_queue=queue, result_type=ItemResult
        )
        return reviewed


def _failed_child(exc: ChildWorkflowError, item: ItemResult) -> ItemResult:
    """The `ItemResult` of a question workflow that ended FAILED: its own (`ended`), or for
    any other failure (a crash, a termination) one line of the cause, spent unknown."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type == QUESTION_FAILED and cause.details:
        fields = cause.details[0]
        if isinstance(fields, dict):
            known = {k: v for k, v in fields.items() if k in ItemResult.__dataclass_fields__}
            got = ItemResult(**known)
            got.line, got.status = item.line, "failed"
            got.spent = got.spent or {}  # counted by the question itself
            return got
    got = ItemResult(item.id, item.line, item.question, "failed")
    got.error = failure_line(exc)
    got.spent = None  # unknown: the pool counts the child's whole share
    return got


#: the workflows a worker on the workflow queue registers
WORKFLOWS: list[type] = [ResearchWorkflow, RefineWorkflow, BatchWorkflow, SemaphoreWorkflow]
#: the batch's file activities, registered on the workflow queue next to `WORKFLOWS`
ACTIVITIES: list[Any] = [write_report, read_graph, read_corpus, save_review, apply_item,
                         finish_batch, *SEMAPHORE_ACTIVITIES]  # fmt: skip


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox for agentport's workflows: Temporal's default restrictions, with agentport
    and the pure libraries its workflow code paths use passed through (not re-imported
    per run; they do no I/O on those paths), and reading `os.environ` allowed: secret
    redaction (`agentport.core.redact`) masks the values of secret-named variables in every
    text it builds, which changes no decision of the workflow."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(
        "agentport", "pydantic", "pydantic_core", "anyio", "sniffio", "returns", "rich",
        "typing_extensions", "annotated_types",
    )  # fmt: skip
    members = restrictions.invalid_module_members
    os_rule = members.children["os"]
    os_rule = dataclasses.replace(os_rule, exclude=os_rule.exclude | {"environ"})
    members = dataclasses.replace(members, children={**members.children, "os": os_rule})
    return SandboxedWorkflowRunner(
        restrictions=dataclasses.replace(restrictions, invalid_module_members=members)
    )
