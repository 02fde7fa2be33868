"""`agentport research --batch`, `agentport refine --batch` and `agentport batch status`.

Locally (no `--temporal`): bounded concurrency (`--jobs`), one report per question in
`--out DIR`, `DIR/batch.json` and `DIR/summary.md`, resumable by rerunning the command.
`--budget` (over the `[budget]` table) is the whole batch's: at a ceiling no new question
starts, the running ones end partial, the rest are "not run (budget)", exit code 3; the
batch's spending is kept in `batch.json`, so rerunning with a bigger budget continues.
With `--temporal HOST:PORT` the batch is submitted to the cluster as a workflow; the client
follows it (Ctrl-C or `--detach` leave it running) and `agentport batch status ID` follows it
later. Every expected failure is one line `agentport: ...` and a non-zero exit.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import typer
from returns.result import Failure

from ..core import ProviderError
from ..policies import Budget
from ..workflows.batch import BatchInputError, Progress, QuestionsFile, Summary, read_questions
from ._app import app, fail, fail_error
from ._budget import PARTIAL_EXIT, resolve_budget
from ._out import echo

if TYPE_CHECKING:
    from ..workflows.batch import BatchState
    from ..workflows.deep_research import ResearchConfig

__all__ = ["batch_app", "refine_batch_command", "refuse_with_batch", "research_batch_command"]

batch_app = typer.Typer(help="Follow batches that run on a Temporal cluster.", no_args_is_help=True)
app.add_typer(batch_app, name="batch")


def refuse_with_batch(**options: bool) -> None:
    """Exit 2 (one line) when an option that applies to one question only is combined
    with --batch (the batch's per-question settings are its own: --jobs, --out)."""
    given = [f"--{name}" for name, on in options.items() if on]
    if given:
        fail(f"{', '.join(given)} cannot be combined with --batch (one question only)", 2)


def _questions(question: str | None, batch: Path | None, out: Path | None) -> QuestionsFile:
    if question is not None and batch is not None:
        fail("give a question or --batch FILE, not both", 2)
    if batch is None:
        fail("missing the question (or --batch QUESTIONS_FILE --out DIR)", 2)
    if out is None:
        fail("--batch needs --out DIR (the folder of the reports)", 2)
    if out.exists() and not out.is_dir():
        fail(f"{out}: is a file; with --batch, --out is a folder", 2)
    try:
        parsed = read_questions(batch)
    except BatchInputError as exc:
        fail(str(exc), 2)
    for line, first in parsed.duplicates:
        echo(f"agentport: warning: {batch}:{line}: duplicate of line {first}; skipped", err=True)
    return parsed


def _progress(quiet: bool) -> Any:
    def show(p: Progress) -> None:
        if quiet or p.item.status == "running":
            return
        what = p.item.status + (f" ({p.item.error})" if p.item.error else "")
        echo(
            f"agentport: [{p.done} done, {p.failed} failed, {p.running} running of {p.total}] "
            f"line {p.item.line}: {what}",
            err=True,
        )

    return show


def _budget(spec: str | None) -> Budget | None:
    """The batch's budget: `--budget` over `[budget]` (exit 2 for a bad spec)."""
    try:
        return resolve_budget(spec)
    except ProviderError as exc:
        fail_error(exc)
    except ValueError as exc:  # a bad --budget spec
        fail(str(exc), 2)


def _end(summary: Summary) -> None:
    already = f" ({summary.skipped} already done)" if summary.skipped else ""
    budget = ""
    if summary.partial or summary.not_run:
        budget = f", {summary.partial} partial, {summary.not_run} not run (budget)"
    echo(
        f"agentport: batch: {summary.done} done{already}, {summary.failed} failed{budget} of "
        f"{summary.total}; summary: {summary.summary_file}",
        err=True,
    )
    if summary.failed:
        raise typer.Exit(1)
    if summary.partial or summary.not_run:
        echo(
            f"agentport: budget reached ({summary.budget_reached}): the batch is partial; "
            "rerun with a bigger --budget to continue",
            err=True,
        )
        raise typer.Exit(PARTIAL_EXIT)


# Small-model mode on Temporal runs each question whole on the model's worker
# (agentport.temporal._small): its calls are not metered against a batch budget there.
_SMALL_BUDGET = (
    "--budget cannot meter small-model mode on --temporal (each question runs whole on the "
    "embedded model's worker); run without --budget, or the batch locally"
)


def research_batch_command(
    question: str | None,
    batch: Path | None,
    out: Path | None,
    *,
    backend: str | None,
    model: str | None,
    corpus: Path | None,
    early_quorum: bool,
    concurrency: int | None,
    small_model: bool | None,
    jobs: int,
    quiet: bool,
    temporal: str | None,
    namespace: str,
    batch_id: str | None,
    detach: bool,
    budget_spec: str | None = None,
) -> None:
    """`agentport research --batch FILE --out DIR [--budget SPEC]`."""
    from ._run_config import research_config, resolved_backend

    parsed = _questions(question, batch, out)
    assert out is not None
    budget = _budget(budget_spec)
    try:
        target = resolved_backend(backend)
        config = research_config(target, early_quorum, concurrency, small_model)
    except ProviderError as exc:
        fail_error(exc)
    if temporal is not None:
        _research_on_temporal(
            parsed,
            out,
            target,
            config,
            budget,
            corpus,
            model,
            jobs,
            quiet,
            temporal,
            namespace,
            batch_id,
            detach,
        )
        return
    _research_locally(parsed, out, backend, model, config, corpus, jobs, quiet, budget)


def _research_locally(
    parsed: QuestionsFile,
    out: Path,
    backend: str | None,
    model: str | None,
    config: ResearchConfig,
    corpus: Path | None,
    jobs: int,
    quiet: bool,
    budget: Budget | None,
) -> None:
    """`research --batch` on this machine (`workflows.batch.research_batch`)."""
    from ..factory import create_llm_adapter
    from ..workflows.batch import research_batch
    from ..workflows.deep_research import Corpus, load_corpus
    from ..workflows.deep_research import web_mode_refusal as web_refusal

    try:
        adapter = create_llm_adapter(backend, model=model)
    except ProviderError as exc:
        fail_error(exc)
    loaded: Corpus | None = None
    if corpus is not None:
        result = load_corpus(corpus, max_passage_chars=config.max_passage_chars)
        if isinstance(result, Failure):
            fail(result.failure().message, 2)
        loaded = result.unwrap()
    elif (refusal := web_refusal(adapter.backend)) is not None and not config.assume_web_tools:
        fail(refusal, 2)
    if config.small_model and loaded is None:
        fail("small-model mode researches a local folder: add --corpus DIR", 2)

    async def go() -> Summary:
        return await research_batch(
            parsed,
            out,
            adapter,
            config,
            corpus=loaded,
            jobs=jobs,
            on_progress=_progress(quiet),
            budget=budget,
        )

    try:
        summary = anyio.run(go)
    except BatchInputError as exc:
        fail(str(exc), 2)
    except KeyboardInterrupt:
        fail("interrupted; finished reports are kept: rerun the same command to continue", 130)
    _end(summary)


def _research_on_temporal(
    parsed: QuestionsFile,
    out: Path,
    target: str | None,
    config: ResearchConfig,
    budget: Budget | None,
    corpus: Path | None,
    model: str | None,
    jobs: int,
    quiet: bool,
    temporal: str,
    namespace: str,
    batch_id: str | None,
    detach: bool,
) -> None:
    """`research --batch --temporal`: checked here, then submitted to the cluster."""
    from ..workflows.deep_research import uses_own_web
    from ..workflows.deep_research import web_mode_refusal as web_refusal

    if corpus is not None and not corpus.is_dir():
        fail(f"corpus {str(corpus)!r} is not a folder", 2)
    if target is None:
        fail("--temporal needs a named backend (--backend or llm.backend)", 2)
    if config.small_model and corpus is None:
        fail("small-model mode researches a local folder: add --corpus DIR", 2)
    if config.small_model and budget is not None:
        fail(_SMALL_BUDGET, 2)
    web_ok = config.assume_web_tools or corpus is not None  # the model needs no web tools
    if (refusal := web_refusal(target)) is not None and not web_ok:
        fail(refusal, 2)
    settings = {"model": model} if model else {}
    web: dict[str, Any] = {}
    if not web_ok and uses_own_web(target):
        web = _web_input()  # agentport's own search and fetch run on the workers
    _submit(
        "research",
        parsed,
        out,
        target,
        temporal,
        namespace,
        batch_id,
        detach,
        quiet,
        config=config.model_dump(mode="json"),
        settings=settings,
        jobs=jobs,
        web=web,
        budget=_research_budget(budget, config),
        # the workers index the folder themselves (temporal._corpus): it must be under
        # their --root, at the same path
        corpus="" if corpus is None else str(corpus.resolve()),
    )


def _web_input() -> dict[str, Any]:
    """This client's `[web]` table as batch input (`agentport.temporal._web.web_input`)."""
    from ..config import load_settings

    try:
        from ..temporal import web_input
    except ImportError:
        fail("--temporal needs the temporal extra: pip install 'agentport[temporal]'", 2)
    try:
        return web_input(load_settings().web)
    except ProviderError as exc:
        fail_error(exc)


def _embedded(backend: str) -> bool:
    """Whether *backend* (or a member of its chain) is the embedded model."""
    from .._chain import parse_chain
    from ..catalog import get_capability
    from ..core import BackendKind

    try:
        return any(get_capability(n).kind is BackendKind.local for n in parse_chain(backend))
    except (ProviderError, ValueError):
        return False


def refine_batch_command(
    question: str | None,
    batch: Path | None,
    out: Path | None,
    *,
    graph: Path | None,
    backend: str | None,
    apply: bool,
    allow_low: bool,
    jobs: int,
    quiet: bool,
    temporal: str | None,
    namespace: str,
    batch_id: str | None,
    detach: bool,
    budget_spec: str | None = None,
) -> None:
    """`agentport refine --batch FILE --out DIR [--apply --yes] [--budget SPEC]`."""
    from ..workflows.deeprefine import InputError, find_layout, load_graph

    parsed = _questions(question, batch, out)
    assert out is not None
    budget = _budget(budget_spec)
    graph_path = graph or find_layout().graph
    try:
        load_graph(graph_path, lean=True)  # fail before any model call
    except InputError as exc:
        fail(str(exc), 2)
    if temporal is not None:
        _refine_on_temporal(
            parsed,
            out,
            graph_path,
            backend,
            budget,
            apply,
            allow_low,
            jobs,
            quiet,
            temporal,
            namespace,
            batch_id,
            detach,
        )
        return
    from ..factory import create_llm_adapter
    from ..workflows.batch import refine_batch

    try:
        adapter = create_llm_adapter(backend)
    except ProviderError as exc:
        fail_error(exc)

    async def go() -> Summary:
        return await refine_batch(
            parsed,
            out,
            adapter,
            graph_path,
            apply=apply,
            allow_low=allow_low,
            jobs=jobs,
            on_progress=_progress(quiet),
            budget=budget,
        )

    try:
        summary = anyio.run(go)
    except BatchInputError as exc:
        fail(str(exc), 2)
    except KeyboardInterrupt:
        fail("interrupted; finished reviews are kept: rerun the same command to continue", 130)
    _end(summary)


def _refine_on_temporal(
    parsed: QuestionsFile,
    out: Path,
    graph_path: Path,
    backend: str | None,
    budget: Budget | None,
    apply: bool,
    allow_low: bool,
    jobs: int,
    quiet: bool,
    temporal: str,
    namespace: str,
    batch_id: str | None,
    detach: bool,
) -> None:
    """`refine --batch --temporal`: checked here, then submitted to the cluster."""
    from ..workflows.deeprefine import plan_refine
    from ._run_config import resolved_backend

    try:
        target = resolved_backend(backend)
    except ProviderError as exc:
        fail_error(exc)
    if target is None:
        fail("--temporal needs a named backend (--backend or llm.backend)", 2)
    if _embedded(target) and budget is not None:
        fail(_SMALL_BUDGET, 2)
    _submit(
        "refine",
        parsed,
        out,
        target,
        temporal,
        namespace,
        batch_id,
        detach,
        quiet,
        graph=str(graph_path.resolve()),
        apply=apply,
        allow_low=allow_low,
        jobs=jobs,
        budget=None if budget is None else (budget, plan_refine().upper_bound_calls),
    )


def _submit(
    kind: str,
    parsed: QuestionsFile,
    out: Path,
    backend: str,
    address: str,
    namespace: str,
    batch_id: str | None,
    detach: bool,
    quiet: bool,
    budget: tuple[Budget, int] | None = None,
    **fields: Any,
) -> None:
    """Submit the questions whose report is not in *out* yet, then follow (or detach).
    *budget*: the batch's budget and one question's worst case of calls; the batch
    workflow grants each question a share (`agentport.temporal._budget`)."""
    from ..config import load_settings

    try:  # the cluster-wide caps travel as workflow input (docs/deployment.md)
        fields["cluster_concurrency"] = dict(load_settings().temporal.cluster_concurrency)
    except ProviderError as exc:
        fail_error(exc)
    try:
        from ..temporal import BatchJob
        from ..temporal._client import connect, default_batch_id, follow, start_batch
    except ImportError:
        fail("--temporal needs the temporal extra: pip install 'agentport[temporal]'", 2)
    from ..workflows.batch import BatchState

    try:
        state = BatchState.open(out.resolve(), kind, parsed.questions, ".md")
    except BatchInputError as exc:
        fail(str(exc), 2)
    todo = _todo(parsed, state, bool(fields.get("apply")))
    if not todo:
        echo(f"agentport: batch: all {len(parsed.questions)} reports are in {out}", err=True)
        return
    ident = batch_id or default_batch_id(kind, out.resolve().name)
    if budget is None and state.extra.get("budget"):
        budget = (Budget(), 1)  # no ceiling, but the batch keeps counting what it spends
    if budget is not None:
        from ..temporal import budget_data

        spent = (state.extra.get("budget") or {}).get("spent")
        fields["budget"] = budget_data(budget[0], spent, budget[1])
    from pydantic import ValidationError

    from ..temporal import one_line

    try:  # the closed type the workers parse: refused here in one line, not on the cluster
        job = BatchJob(kind=kind, items=todo, backend=backend, out=str(out.resolve()), **fields)
    except ValidationError as exc:
        fail(f"--temporal: this batch cannot be sent: {one_line(exc)}", 2)

    async def go() -> Any:
        client = await connect(address, namespace)
        await start_batch(client, job, ident)
        echo(ident)
        echo(
            f"agentport: batch {ident} submitted ({len(todo)} question(s)); follow it with "
            f"`agentport batch status {ident} --temporal {address}`",
            err=True,
        )
        if detach:
            return None
        return await follow(client, ident, None if quiet else _status_line)

    try:
        final = anyio.run(go)
    except BatchInputError as exc:
        fail(str(exc), 2)
    except KeyboardInterrupt:
        fail(f"stopped following; batch {ident} keeps running on the cluster", 130)
    if final is not None:
        _followed(ident, final)


def _todo(parsed: QuestionsFile, state: BatchState, apply: bool) -> list[list[Any]]:
    """The batch input's items: each question without its report, and (with *apply*) each
    reviewed one whose actions were not applied yet."""
    todo: list[list[Any]] = []
    for q in parsed.questions:
        item = state.items[q.id]
        if item.status != "done":
            todo.append([q.id, q.line, q.text])
        elif apply and item.actions and item.trace and item.applied is False:
            todo.append([q.id, q.line, q.text, item.trace, item.actions])  # reviewed: apply
    return todo


def _followed(ident: str, final: Any) -> None:
    """The end of a followed batch: its line, and exit 1 (failed) or 3 (partial)."""
    echo(f"agentport: batch {ident}: {final.line()}", err=True)
    progress = final.progress
    if final.state != "completed" or progress is None or progress.failed:
        raise typer.Exit(1)
    if progress.partial or progress.not_run:
        echo(
            "agentport: budget reached: the batch is partial; rerun with a bigger "
            "--budget to continue",
            err=True,
        )
        raise typer.Exit(PARTIAL_EXIT)


def _research_budget(budget: Budget | None, config: Any) -> tuple[Budget, int] | None:
    """The batch budget and one research question's worst case of calls (its plan)."""
    if budget is None:
        return None
    from ..workflows.deep_research import budget_plan, plan_research

    return budget, budget_plan(plan_research(config), config.max_tokens)[0]


def _status_line(status: Any) -> None:
    echo(f"agentport: {status.line()}", err=True)


@batch_app.command("status")
def batch_status(
    batch_id: Annotated[str, typer.Argument(help="The batch id printed at submission.")],
    temporal: Annotated[str, typer.Option("--temporal", help="The Temporal cluster (HOST:PORT).")],
    namespace: Annotated[str, typer.Option("--namespace", help="Temporal namespace.")] = "default",
    wait: Annotated[bool, typer.Option("--wait", help="Follow until the batch ends.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Every item as JSON.")] = False,
) -> None:
    """Show a batch's progress (done / failed / running) on the cluster, by id."""
    import dataclasses
    import json

    try:
        from ..temporal._client import connect, follow, status
    except ImportError:
        fail("--temporal needs the temporal extra: pip install 'agentport[temporal]'", 2)

    async def go() -> Any:
        client = await connect(temporal, namespace)
        if wait:
            return await follow(client, batch_id, _status_line)
        return await status(client, batch_id)

    try:
        now = anyio.run(go)
    except BatchInputError as exc:
        fail(str(exc), 2)
    if as_json and now.progress is not None:
        echo(json.dumps({"state": now.state, **dataclasses.asdict(now.progress)}, indent=2))
    else:
        echo(f"{batch_id}: {now.line()}")
