"""`agentport refine "QUESTION"`: the whole DeepRefine loop with agentport's own LLM calls.

Dry run by default (seed "Default safety policy"): runs the hops, abduction and refinement,
writes the trace and actions under `.deeprefine/`, validates, reviews and prints the review,
and stops. `--apply --yes` is the only way to write graph.json (LOW actions still need
`--allow-low-confidence`). Early-exit questions are finished (marked refined) at once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import anyio
import typer
from returns.result import Failure

from ..core import LLMAdapter, ProviderError, redact
from ..workflows.deeprefine import (
    InputError,
    Layout,
    LoopSettings,
    ReviewContext,
    apply_refinement,
    find_layout,
    finish,
    load_graph,
    review,
    run_loop,
    save_loop,
    validate_trace,
)
from ._app import app, fail

__all__ = ["refine", "run_refine"]

Echo = Callable[[str], object]


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
) -> int:
    """Run the loop for one question; returns the exit code. Never raises for bad input."""
    layout = Layout.for_graph(graph_path)
    try:
        graph = load_graph(graph_path)
        if adapter is None:
            from ..factory import create_llm_adapter

            adapter = create_llm_adapter(backend)
    except InputError as exc:
        err(str(exc))
        return 1
    except ProviderError as exc:
        err(str(exc))
        return 2
    settings = LoopSettings(on_step=lambda step: out(f"[Step: {step}]"))
    try:
        result = anyio.run(run_loop, adapter, graph, question, settings)
    except KeyboardInterrupt:
        err("interrupted; graph.json was not modified")
        return 130
    if isinstance(result, Failure):
        err(str(result.failure()))
        return 1
    loop = result.unwrap()
    try:
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
            out(reviewed.markdown(str(trace_path), str(actions_path)))
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
        out(report.review.markdown(str(trace_path), str(actions_path)))
        if report.refused:
            err("refusing to apply: LOW-confidence action(s); pass --allow-low-confidence")
            return 1
        for item, outcome, reason in report.outcomes:
            out(f"  - {outcome}: {item.text}" + (f" ({reason})" if reason else ""))
        out(f"Applied {report.applied} action(s); graph.json written: {report.written}")
        for line in finish(layout, trace_path, actions_path):
            out(line)
    except InputError as exc:
        err(str(exc))
        return 1
    return 0


@app.command()
def refine(
    question: Annotated[str, typer.Argument(help="The question to refine the graph for.")],
    graph: Annotated[
        Path | None, typer.Option("--graph", help="graph.json (default: graphify-out/graph.json).")
    ] = None,
    backend: Annotated[
        str | None, typer.Option("--backend", "-b", help="Backend or alias.")
    ] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Write graph.json (needs --yes).")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm --apply.")] = False,
    allow_low: Annotated[
        bool, typer.Option("--allow-low-confidence", help="Also apply LOW actions.")
    ] = False,
) -> None:
    """Run the DeepRefine loop on a graphify graph; dry run unless --apply --yes."""
    if not question.strip():
        fail("the question is empty", 2)
    if apply and not yes:
        fail("--apply writes graph.json; add --yes to confirm (nothing was run)", 2)
    graph_path = graph or find_layout().graph

    def err(message: str) -> None:
        typer.echo(f"agentport: {redact(message)}", err=True)

    code = run_refine(question, graph_path, backend, apply, typer.echo, err, allow_low=allow_low)
    if code:
        raise typer.Exit(code)
