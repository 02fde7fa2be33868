"""`agentport refine "QUESTION"`: the whole DeepRefine loop with agentport's own LLM calls.

Dry run by default (the DeepRefine skill's "Default safety policy"): runs the hops, abduction
and refinement, writes the trace and actions under `.deeprefine/`, validates, reviews and
prints the review, and stops. `--apply --yes` is the only way to write graph.json (LOW actions
still need `--allow-low-confidence`). Early-exit questions are finished (marked refined) at once.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated

import anyio
import typer
from returns.result import Failure, Result

from ..core import LLMAdapter, ProviderError, redact
from ..policies import Budget, workflow_span
from ..workflows.deeprefine import (
    Graph,
    InputError,
    Layout,
    LoopResult,
    LoopSettings,
    ReviewContext,
    apply_refinement,
    find_layout,
    finish,
    load_graph,
    plan_refine,
    review,
    run_loop,
    save_loop,
    save_partial,
    validate_trace,
)
from ._app import app, fail, fail_error
from ._budget import BUDGET_HELP, PARTIAL_EXIT, budget_lines, resolve_budget
from ._out import echo

__all__ = ["refine", "run_refine"]

Echo = Callable[[str], object]


def _writable(layout: Layout, graph: Path, apply: bool) -> None:
    """`OSError` naming the folder unless the trace, the actions (`.deeprefine/`) and, with
    *apply*, the new graph.json can be written there."""
    from ..transport import check_writable
    from ..workflows.deeprefine import ensure_state

    check_writable(ensure_state(layout.state))
    if apply:
        check_writable(graph.parent)


async def _traced_loop(
    adapter: LLMAdapter,
    graph: Graph,
    question: str,
    settings: LoopSettings,
    *,
    budget: Budget | None,
) -> Result[LoopResult, ProviderError]:
    """`run_loop` as one `deeprefine` span (OpenTelemetry, when the extra is installed)."""
    with workflow_span("deeprefine"):
        return await run_loop(adapter, graph, question, settings, budget=budget)


def run_refine(
    question: str,
    graph_path: Path,
    backend: str | None,
    apply: bool,
    out: Echo,
    err: Echo,
    *,
    allow_low: bool = False,
    adapter: LLMAdapter | None = None,
    budget: Budget | None = None,
) -> int:
    """Run the loop for one question; returns the exit code (3 = a *budget* ceiling stopped
    the loop: the partial trace is written, nothing applied). Never raises for bad input."""
    layout = Layout.for_graph(graph_path)
    opened = _open(layout, graph_path, backend, apply, adapter, err)
    if isinstance(opened, int):
        return opened
    graph, adapter = opened
    settings = LoopSettings(on_step=lambda step: out(f"[Step: {step}]"))
    try:
        result = anyio.run(partial(_traced_loop, budget=budget), adapter, graph, question, settings)
    except KeyboardInterrupt:
        err("interrupted; graph.json was not modified")
        return 130
    if isinstance(result, Failure):
        err(str(result.failure()))
        return 1
    loop = result.unwrap()
    if loop.budget_reached is not None:
        return _partial(layout, loop, out, err)
    try:
        return _conclude(layout, loop, graph, graph_path, apply, allow_low, out, err)
    except InputError as exc:
        err(str(exc))
        return 1


def _open(
    layout: Layout,
    graph_path: Path,
    backend: str | None,
    apply: bool,
    adapter: LLMAdapter | None,
    err: Echo,
) -> tuple[Graph, LLMAdapter] | int:
    """The graph and the adapter, before any call; or exit code 2 (said on *err*)."""
    try:
        graph = load_graph(graph_path)
        _writable(layout, graph_path, apply)
        if adapter is None:
            from ..factory import create_llm_adapter

            adapter = create_llm_adapter(backend)
    except InputError as exc:
        err(str(exc))
        return 2
    except OSError as exc:  # a read-only graphify-out/ or .deeprefine/: before any call
        err(f"{exc.filename or layout.state}: cannot write there ({exc.strerror or exc})")
        return 2
    except ProviderError as exc:
        err(str(exc))
        return 2
    return graph, adapter


def _conclude(
    layout: Layout,
    loop: LoopResult,
    graph: Graph,
    graph_path: Path,
    apply: bool,
    allow_low: bool,
    out: Echo,
    err: Echo,
) -> int:
    """A finished loop: its trace saved and checked, then (not an early exit) its actions
    reviewed (a dry run) or applied; the exit code. Raises `InputError`."""
    trace_path, actions_path = save_loop(layout, loop)
    out(f"Trace: {trace_path}")
    errors = validate_trace(loop.trace, trace_path, layout, actions_path)
    if errors:
        for error in errors:
            err(f"{trace_path}: {error}")
        return 1
    if loop.early_exit:
        out("Early exit: the first hop was answerable; no refinement.")
        for line in finish(layout, trace_path, None):
            out(line)
        return 0
    assert actions_path is not None
    text = actions_path.read_text(encoding="utf-8")
    out(f"Actions: {actions_path}")
    if not apply:
        reviewed = review(text, graph, ReviewContext.from_trace(loop.trace, graph, layout.root))
        out(reviewed.markdown(str(trace_path), str(actions_path), next_step=False))
        out("Dry run: graph.json was not modified. Re-run with --apply --yes to write it.")
        return 0
    report = apply_refinement(
        layout,
        text,
        graph_path=graph_path,
        trace=loop.trace,
        allow_low=allow_low,
        refinement_file=actions_path,
    )
    out(report.review.markdown(str(trace_path), str(actions_path), next_step=False))
    if report.refused:
        err("refusing to apply: LOW-confidence action(s); pass --allow-low-confidence")
        return 1
    for item, outcome, reason in report.outcomes:
        out(f"  - {outcome}: {item.text}" + (f" ({reason})" if reason else ""))
    out(f"Applied {report.applied} action(s); graph.json written: {report.written}")
    for line in finish(layout, trace_path, actions_path):
        out(line)
    return 0


def _partial(layout: Layout, loop: LoopResult, out: Echo, err: Echo) -> int:
    """A loop its budget stopped: the trace so far is written, nothing is applied."""
    try:
        path = save_partial(layout, loop)
    except InputError as exc:
        err(str(exc))
        return 1
    steps = len(loop.trace["interaction_history"])
    out(f"Partial trace ({steps} step(s)): {path}")
    out("Budget reached: no action file, graph.json was not modified.")
    err(f"budget reached ({loop.budget_reached}): the loop is partial; nothing applied")
    return PARTIAL_EXIT


# the options of `refine`, one name each (typer reads the annotations)
_RefineQuestion = Annotated[
    str | None, typer.Argument(help="The question to refine the graph for (not with --batch).")
]
_RefineGraph = Annotated[
    Path | None, typer.Option("--graph", help="graph.json (default: graphify-out/graph.json).")
]
_RefineBackend = Annotated[str | None, typer.Option("--backend", "-b", help="Backend or alias.")]
_RefineApply = Annotated[bool, typer.Option("--apply", help="Write graph.json (needs --yes).")]
_RefineYes = Annotated[bool, typer.Option("--yes", help="Confirm --apply.")]
_RefineAllowLow = Annotated[
    bool, typer.Option("--allow-low-confidence", help="Also apply LOW actions.")
]
_RefineBatch = Annotated[
    Path | None,
    typer.Option("--batch", help="Refine for every line of this file; --out is a folder."),
]
_RefineOut = Annotated[
    Path | None, typer.Option("--out", "-o", help="Batch: the folder of the reviews.")
]
_RefineJobs = Annotated[int, typer.Option("--jobs", min=1, help="Batch: questions in flight (4).")]
_RefineTemporal = Annotated[
    str | None,
    typer.Option("--temporal", help="Batch: run on this Temporal cluster (HOST:PORT)."),
]
_RefineNamespace = Annotated[str, typer.Option("--namespace", help="Batch: Temporal namespace.")]
_RefineBatchId = Annotated[
    str | None, typer.Option("--batch-id", help="Batch: Temporal workflow id.")
]
_RefineDetach = Annotated[
    bool, typer.Option("--detach", help="Batch: submit to Temporal and exit.")
]
_RefineQuiet = Annotated[bool, typer.Option("--quiet", "-q", help="Batch: no progress.")]
_RefineBudgetSpec = Annotated[str | None, typer.Option("--budget", help=BUDGET_HELP)]
_RefinePlan = Annotated[
    bool, typer.Option("--plan", help="Print the worst case against the budget, then exit.")
]


@app.command()
def refine(
    question: _RefineQuestion = None,
    graph: _RefineGraph = None,
    backend: _RefineBackend = None,
    apply: _RefineApply = False,
    yes: _RefineYes = False,
    allow_low: _RefineAllowLow = False,
    batch: _RefineBatch = None,
    out: _RefineOut = None,
    jobs: _RefineJobs = 4,
    temporal: _RefineTemporal = None,
    namespace: _RefineNamespace = "default",
    batch_id: _RefineBatchId = None,
    detach: _RefineDetach = False,
    quiet: _RefineQuiet = False,
    budget_spec: _RefineBudgetSpec = None,
    plan: _RefinePlan = False,
) -> None:
    """Run the DeepRefine loop on a graphify graph; dry run unless --apply --yes.

    --budget stops the loop at a ceiling: the trace so far is written, nothing is applied.
    Exit codes: 0 done, 1 failed, 2 bad input, 3 partial (a budget ceiling was reached),
    130 interrupted.

    --batch FILE --out DIR refines for one question per line, a review per question in DIR;
    with --apply --yes the reviewed actions are applied one at a time (one writer); with
    --batch, --budget bounds the whole batch (exit 3: questions partial or not run)."""
    if batch is not None or question is None:
        from ._batch import refine_batch_command, refuse_with_batch

        refuse_with_batch(plan=plan)
        if apply and not yes:
            fail("--apply writes graph.json; add --yes to confirm (nothing was run)", 2)

        refine_batch_command(
            question,
            batch,
            out,
            graph=graph,
            backend=backend,
            apply=apply,
            allow_low=allow_low,
            jobs=jobs,
            quiet=quiet,
            temporal=temporal,
            namespace=namespace,
            batch_id=batch_id,
            detach=detach,
            budget_spec=budget_spec,
        )
        return
    if not question.strip():
        fail("the question is empty", 2)
    if apply and not yes:
        fail("--apply writes graph.json; add --yes to confirm (nothing was run)", 2)
    try:
        budget = resolve_budget(budget_spec)
    except ProviderError as exc:
        fail_error(exc)
    except ValueError as exc:  # a bad --budget spec
        fail(str(exc), 2)
    if plan:
        worst = plan_refine()
        fit = budget_lines(
            budget, worst.upper_bound_calls, worst.typical_calls, worst.upper_bound_output_tokens
        )
        for line in worst.lines() + fit:
            echo(line)
        return
    graph_path = graph or find_layout().graph

    def err(message: str) -> None:
        echo(f"agentport: {redact(message)}", err=True)

    code = run_refine(
        question, graph_path, backend, apply, echo, err, allow_low=allow_low, budget=budget
    )
    if code:
        raise typer.Exit(code)
