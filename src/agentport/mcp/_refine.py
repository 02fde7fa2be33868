"""The DeepRefine tools of `agentport mcp`: `refine` (run the loop, dry), `review` (the
verdicts) and `apply` (write graph.json only for the exact reviewed action set, approved).

Same files as `agentport refine` / `deeprefine`: the trace and actions under `.deeprefine/`,
apply under the graph lock with an atomic write and an exact pre-image backup
(`apply_refinement`), then `finish` marks the query refined.
"""

import hashlib
from pathlib import Path
from typing import Annotated, Any, cast

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field, StrictBool
from returns.result import Failure

from ..core import ErrorKind
from ..workflows.deeprefine import (
    Layout,
    LoopResult,
    LoopSettings,
    Review,
    ReviewContext,
    apply_refinement,
    finish,
    load_graph,
    load_trace,
    partial_trace_path,
    review,
    run_loop,
    save_loop,
    save_partial,
    validate_trace,
)
from ._errors import Progress, Roots, ToolFailure, describe, guarded, tool_hints
from ._outputs import ApplyOutcome, ApplyResult, RefineResult, ReviewItem, ReviewResult
from ._tools import AdapterFactory, BackendArg, BudgetArg, run_budget

__all__ = ["RefineTools"]

GraphArg = Annotated[
    str,
    Field(
        description="Path of a graphify graph.json (usually <project>/graphify-out/graph.json), "
        "inside the server's --root folders."
    ),
]
QueryArg = Annotated[
    str, Field(description="The query_id returned by `refine` (names the trace and actions).")
]


def action_set_id(texts: list[str]) -> str:
    """A short digest naming an exact, ordered action set (what `apply` must repeat)."""
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]


def _review_payload(reviewed: Review) -> ReviewResult:
    texts = [item.text for item in reviewed.items]

    def count(c: str) -> int:
        return sum(1 for i in reviewed.items if i.confidence == c)

    return {
        "actions": texts,
        "action_set_id": action_set_id(texts),
        "counts": {"HIGH": count("HIGH"), "MEDIUM": count("MEDIUM"), "LOW": count("LOW")},
        "review": cast(list[ReviewItem], reviewed.as_json()),
        "markdown": reviewed.markdown(),
    }


def _partial(layout: Layout, loop: LoopResult) -> RefineResult:
    """A loop its budget stopped: the trace so far is written, no actions (`agentport
    refine` exits 3 for the same outcome)."""
    trace_path = save_partial(layout, loop)
    steps = len(loop.trace.get("interaction_history") or [])
    return {
        "query_id": loop.query_id,
        "early_exit": False,
        "partial": True,
        "budget_reached": loop.budget_reached,
        "message": f"budget reached ({loop.budget_reached}): the loop is partial "
        f"({steps} step(s)); no actions, graph.json was not modified",
        "trace_file": str(trace_path),
        "actions_file": None,
        "trace": loop.trace,
        "actions": [],
        "action_set_id": None,
        "review": [],
    }


class RefineTools:
    """refine / review / apply over graphs inside *roots*."""

    def __init__(self, roots: Roots, adapter_for: AdapterFactory) -> None:
        self.roots, self.adapter_for = roots, adapter_for

    def register(self, server: Any) -> None:
        for fn, title, hints in (
            # refine writes its trace and actions under .deeprefine/ (never graph.json) and
            # calls a model; review only reads; apply rewrites graph.json
            (self.refine, "DeepRefine: run the loop (dry run)", tool_hints(open_world=True)),
            (self.review, "DeepRefine: review proposed actions", tool_hints(read_only=True)),
            (self.apply, "DeepRefine: apply reviewed actions", tool_hints(destructive=True)),
        ):
            server.add_tool(
                guarded(fn),
                name=fn.__name__,
                title=title,
                description=describe(fn),
                annotations=hints,
                structured_output=True,
            )

    def _layout(self, graph: str) -> tuple[Path, Layout]:
        path = self.roots.check(graph, "graph")
        if not path.is_file():
            raise ToolFailure(ErrorKind.invalid_request, f"graph: {graph}: no such file")
        layout = Layout.for_graph(path)
        self.roots.check(str(layout.state), "graph state folder")  # .deeprefine/ is written
        return path, layout

    def _files(self, layout: Layout, qid: str) -> tuple[Path, Path, dict[str, Any]]:
        if not qid or not all(c.isalnum() or c in "-_" for c in qid):
            raise ToolFailure(ErrorKind.invalid_request, f"query_id: {qid!r} is not a query id")
        trace_path = layout.trace_path(qid)
        if not trace_path.is_file() and partial_trace_path(layout, qid).is_file():
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"query_id: {qid}: the loop was stopped by its budget (partial trace only): "
                "nothing to review or apply; run `refine` again with a larger budget",
            )
        if not trace_path.is_file():
            raise ToolFailure(
                ErrorKind.invalid_request, f"query_id: {qid}: no trace for it; run `refine` first"
            )
        trace = load_trace(trace_path)
        actions_path = layout.actions_path(qid)
        if not actions_path.is_file():
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"query_id: {qid}: early exit, no actions to review or apply",
            )
        return trace_path, actions_path, trace

    async def refine(
        self,
        question: Annotated[str, Field(description="The question the graph should answer.")],
        graph: GraphArg,
        ctx: Context,
        backend: BackendArg = None,
        budget: BudgetArg = None,
    ) -> RefineResult:
        """Run the DeepRefine loop (judge -> k-hop retrieval -> abduction -> refinement) for
        a question on a graphify graph. A dry run: writes the trace and proposed actions
        under .deeprefine/ and never touches graph.json. Returns {query_id, early_exit,
        partial, trace, actions, action_set_id, review, trace_file, actions_file}; sends a
        progress notification per hop. Next: show the review to the user, then `apply`.
        With a `budget`, a loop that reaches a ceiling returns `partial: true`, a "budget
        reached" message and the trace so far (written as loop_trace_<id>.partial.json),
        with no actions: nothing can be applied."""
        q = question.strip()
        if not q:
            raise ToolFailure(ErrorKind.invalid_request, "question: is empty")
        spent = run_budget(budget)
        path, layout = self._layout(graph)
        loaded = load_graph(path)
        adapter = self.adapter_for(backend)
        send, receive = anyio.create_memory_object_stream[int](16)

        progress = Progress(ctx)

        async def forward() -> None:
            async with receive:
                async for step in receive:
                    await progress.report(step, f"hop {step}")

        settings = LoopSettings(on_step=lambda step: send.send_nowait(step))
        async with anyio.create_task_group() as tg:
            tg.start_soon(forward)
            async with send:
                result = await run_loop(adapter, loaded, q, settings, budget=spent)
        if isinstance(result, Failure):
            raise result.failure()
        loop = result.unwrap()
        if loop.budget_reached is not None:
            return _partial(layout, loop)
        trace_path, actions_path = save_loop(layout, loop)
        errors = validate_trace(loop.trace, trace_path, layout, actions_path)
        if errors:
            raise ToolFailure(ErrorKind.bad_output, f"trace invalid: {'; '.join(errors)}")
        out: RefineResult = {
            "query_id": loop.query_id,
            "early_exit": loop.early_exit,
            "partial": False,
            "trace_file": str(trace_path),
            "actions_file": str(actions_path) if actions_path else None,
            "trace": loop.trace,
            "actions": [],
            "action_set_id": None,
            "review": [],
        }
        if loop.early_exit:
            finish(layout, trace_path, None)
            return out
        assert actions_path is not None
        text = actions_path.read_text(encoding="utf-8")
        reviewed = review(text, loaded, ReviewContext.from_trace(loop.trace, loaded, layout.root))
        return {**out, **_review_payload(reviewed)}

    async def review(self, graph: GraphArg, query_id: QueryArg) -> ReviewResult:
        """Review a refine run's proposed actions against the current graph.json and the
        project's source files: each action gets HIGH / MEDIUM / LOW confidence, its
        effect (change / skip / reject) and the evidence. Returns {actions, action_set_id,
        counts, review, markdown}; pass `graph`, `query_id` and `actions` (the exact list,
        same order) back to `apply` with `approve` true once the user approved them."""
        path, layout = self._layout(graph)
        _, actions_path, trace = self._files(layout, query_id)
        loaded = load_graph(path)
        text = actions_path.read_text(encoding="utf-8")
        return _review_payload(
            review(text, loaded, ReviewContext.from_trace(trace, loaded, layout.root))
        )

    async def apply(
        self,
        graph: GraphArg,
        query_id: QueryArg,
        actions: Annotated[
            list[str],
            Field(
                description="The exact action list `review` returned (same texts, same "
                "order): apply refuses anything else."
            ),
        ],
        approve: Annotated[
            StrictBool,
            Field(description="JSON true only: the user approved these actions."),
        ],
        allow_low: Annotated[
            bool,
            Field(description="Also apply LOW-confidence actions (refused otherwise)."),
        ] = False,
    ) -> ApplyResult:
        """Apply reviewed DeepRefine actions to graph.json: only when `approve` is true and
        `actions` is exactly the reviewed set; LOW-confidence actions are refused unless
        `allow_low`. Writes atomically under the graph lock after saving an exact
        pre-image (.deeprefine/graph.json.bak), then marks the query refined. Returns
        {applied, written, outcomes, backup_file}."""
        if approve is not True:
            raise ToolFailure(
                ErrorKind.invalid_request,
                "approve: must be true; apply only what the user approved after the review",
            )
        path, layout = self._layout(graph)
        trace_path, actions_path, trace = self._files(layout, query_id)
        text = actions_path.read_text(encoding="utf-8")
        current = load_graph(path)
        reviewed = review(text, current, ReviewContext.from_trace(trace, current, layout.root))
        expected = [item.text for item in reviewed.items]
        if list(actions) != expected:
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"actions: not the reviewed set ({len(actions)} given, {len(expected)} reviewed, "
                f"action_set_id {action_set_id(expected)}); call review and pass its actions",
            )
        report = apply_refinement(
            layout, text, graph_path=path, trace=trace, allow_low=allow_low,
            refinement_file=actions_path,
        )  # fmt: skip
        if report.refused:
            low = "; ".join(i.text for i in report.review.low)
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"refused: LOW-confidence action(s) ({low}); graph.json not modified; "
                "pass allow_low=true only if the user accepts them",
            )
        finish(layout, trace_path, actions_path)
        return {
            "applied": report.applied,
            "written": report.written,
            "graph_file": str(path),
            "backup_file": str(report.backup_path) if report.backup_path else None,
            "outcomes": [
                cast(ApplyOutcome, {"action": item.text, "outcome": outcome, "reason": reason})
                for item, outcome, reason in report.outcomes
            ],
        }
