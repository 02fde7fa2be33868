"""What one question of a batch does, split so the local batch and the Temporal workflows
share every step that touches files or renders text.

Research: `run_research` -> `research_text` (the redacted Markdown report, the same bytes on
both paths). Refine: `run_loop` (model calls only) -> `save_and_review` (trace, actions,
review; no graph write) -> `apply_saved` (under the graph lock: re-read graph.json, review
against those bytes, atomic write with the pre-image backup, log, mark refined). Applying is
separate from the loop so a batch's reviews are on disk before anything is applied, and so
one writer per graph can apply them in turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from returns.result import Failure

from ...core import LLMAdapter, redact
from ..deep_research import Corpus, ResearchConfig, ResearchReport, run_research, to_markdown
from ..deeprefine import (
    InputError,
    Layout,
    LoopResult,
    ReviewContext,
    apply_refinement,
    finish,
    load_graph,
    load_trace,
    review,
    run_loop,
    save_loop,
    validate_trace,
)
from ._local import Outcome

__all__ = [
    "apply_saved",
    "loop_from_data",
    "loop_to_data",
    "refine_one",
    "research_one",
    "research_outcome",
    "save_and_review",
]


def research_outcome(report: ResearchReport) -> Outcome:
    """A report that answers is `ok` (its Markdown is the report file); one with an error
    is failed (its salvaged part, if any, goes to `<id>.failed.md`); one a budget ceiling
    stopped is partial (`Outcome.budget`; its report goes to `<id>.partial.md`), or not run
    when the ceiling left it nothing (no source, no claim)."""
    text = redact(to_markdown(report))
    if report.budget_reached is not None:
        salvaged = bool(report.sources or report.claims)
        return Outcome(False, text if salvaged else None, budget=report.budget_reached)
    if report.error:
        salvaged = bool(report.sources or report.claims)
        return Outcome(False, text if salvaged else None, error=report.error.split("\n")[0])
    return Outcome(True, text)


async def research_one(
    question: str,
    adapter: LLMAdapter,
    config: ResearchConfig,
    corpus: Corpus | None = None,
) -> Outcome:
    """One research question on the local path (no cache: a batch resumes by question)."""
    report = await run_research(question, adapter, config=config, corpus=corpus)
    return research_outcome(report)


def loop_to_data(loop: LoopResult) -> dict[str, Any]:
    """The parts of a `LoopResult` that `save_and_review` needs, as JSON-able data."""
    return {
        "trace": loop.trace,
        "early_exit": loop.early_exit,
        "raw": loop.refinement_raw,
        "budget_reached": loop.budget_reached,
    }


def loop_from_data(data: dict[str, Any]) -> LoopResult:
    return LoopResult(
        trace=data["trace"],
        early_exit=data["early_exit"],
        refinement_raw=data["raw"],
        budget_reached=data.get("budget_reached"),
    )


def save_and_review(graph_path: Path, loop: LoopResult) -> Outcome:
    """Write the trace and actions under `.deeprefine/` and review the actions against the
    current graph.json (nothing is applied). An early exit is finished (marked refined) at
    once. A loop a budget stopped saves its partial trace only (`Outcome.budget`). Never
    raises for bad input (the outcome fails with one line)."""
    layout = Layout.for_graph(graph_path)
    try:
        if loop.budget_reached is not None:
            return _save_partial(layout, loop)
        trace_path, actions_path = save_loop(layout, loop)
        errors = validate_trace(loop.trace, trace_path, layout, actions_path)
        if errors:
            return Outcome(False, error=f"{trace_path}: {errors[0]}", trace=str(trace_path))
        lines = [f"Trace: {trace_path}"]
        if loop.early_exit:
            lines.append("Early exit: the first hop was answerable; no refinement.")
            lines += finish(layout, trace_path, None)
            return Outcome(True, "\n".join(lines) + "\n", trace=str(trace_path), applied=False)
        assert actions_path is not None
        text = actions_path.read_text(encoding="utf-8")
        graph = load_graph(graph_path)
        reviewed = review(text, graph, ReviewContext.from_trace(loop.trace, graph, layout.root))
        lines += [f"Actions: {actions_path}", reviewed.markdown(str(trace_path), str(actions_path))]
        return Outcome(
            True,
            redact("\n".join(lines) + "\n"),
            trace=str(trace_path),
            actions=str(actions_path),
            applied=False,
        )
    except (InputError, OSError) as exc:
        return Outcome(False, error=str(exc).split("\n")[0])


def _save_partial(layout: Layout, loop: LoopResult) -> Outcome:
    """A loop the budget stopped: its partial trace is saved (nothing to review or apply);
    a loop stopped before its first step is not run."""
    why = loop.budget_reached
    steps = len(loop.trace.get("interaction_history") or [])
    if not steps:
        return Outcome(False, budget=why)
    trace_path, _ = save_loop(layout, loop)
    text = (
        f"Partial trace ({steps} step(s)): {trace_path}\n"
        f"Budget reached ({why}): no action file, graph.json was not modified.\n"
    )
    return Outcome(False, redact(text), trace=str(trace_path), budget=why)


def apply_saved(
    graph_path: Path, trace_file: str, actions_file: str, *, allow_low: bool = False
) -> tuple[bool, str, str | None]:
    """Apply a reviewed actions file (`apply_refinement`: graph lock, re-read, review against
    the current bytes, backup then atomic write, apply log) and finish the query.
    Returns `(applied, text to append to the report, error or None)`."""
    layout = Layout.for_graph(graph_path)
    try:
        trace = load_trace(Path(trace_file))
        actions = Path(actions_file)
        text = actions.read_text(encoding="utf-8")
        report = apply_refinement(
            layout,
            text,
            graph_path=graph_path,
            trace=trace,
            allow_low=allow_low,
            refinement_file=actions,
        )
        if report.refused:
            return (
                False,
                "",
                "refusing to apply: LOW-confidence action(s); pass --allow-low-confidence",
            )
        lines = ["", "## Applied", ""]
        for item, outcome, reason in report.outcomes:
            lines.append(f"- {outcome}: {item.text}" + (f" ({reason})" if reason else ""))
        lines.append(f"Applied {report.applied} action(s); graph.json written: {report.written}")
        lines += finish(layout, Path(trace_file), actions)
        return True, redact("\n".join(lines) + "\n"), None
    except (InputError, OSError) as exc:
        return False, "", str(exc).split("\n")[0]


async def refine_one(question: str, adapter: LLMAdapter, graph_path: Path) -> LoopResult | str:
    """The loop for one question against the current graph.json: the `LoopResult` (with
    `budget_reached` set when *adapter* is a `BudgetAdapter` whose ceiling stopped it), or
    the one-line error."""
    try:
        graph = load_graph(graph_path)
    except InputError as exc:
        return str(exc)
    result = await run_loop(adapter, graph, question)
    if isinstance(result, Failure):
        return str(result.failure()).split("\n")[0]
    return result.unwrap()
