"""`agentport research "QUESTION"`: the deep-research workflow from the command line.

Every expected failure (empty question, missing or empty corpus folder, a backend without
web tools, a model whose answers never validate) prints one line `agentport: ...` on stderr
and exits non-zero; whatever report could be salvaged is still printed or written.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import anyio
from returns.result import Failure

from ..catalog import get_capability
from ..core import (
    BackendKind,
    LLMAdapter,
    ProviderError,
    printable,
    redact,
)
from ..policies import Budget, workflow_span
from ..transport import check_writable
from ..workflows.deep_research import (
    CallCache,
    Corpus,
    ResearchConfig,
    ResearchEvent,
    ResearchReport,
    atomic_write_text,
    budget_plan,
    load_corpus,
    plan_research,
    run_research,
    to_json,
    to_markdown,
    uses_own_web,
    web_mode_refusal,
)
from ._app import app, fail, fail_error
from ._budget import PARTIAL_EXIT, budget_lines, resolve_budget
from ._out import echo
from ._research_options import (
    _AsJson,
    _Backend,
    _Batch,
    _BatchId,
    _BudgetSpec,
    _Concurrency,
    _Corpus,
    _Debug,
    _Detach,
    _EarlyQuorum,
    _Jobs,
    _Model,
    _Namespace,
    _Out,
    _Plan,
    _Question,
    _Quiet,
    _Resume,
    _Rounds,
    _SmallModel,
    _Temporal,
)
from ._run_config import research_config, resolved_backend

__all__ = ["cache_folder", "research"]


def cache_folder(question: str, backend: str, model: str | None, corpus: Path | None) -> Path:
    """Where a run's finished calls are kept for `--resume`:
    `$XDG_CACHE_HOME/agentport/research/<hash of question, backend, model, corpus>`."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = json.dumps([question, backend, model, str(corpus.resolve()) if corpus else None])
    return root / "agentport" / "research" / hashlib.sha256(key.encode()).hexdigest()[:20]


def _web_refusal(backend: str) -> str | None:
    """Why web mode cannot run on *backend* (no web tools and no search engine configured
    for agentport's own, docs/web.md), or None."""
    return web_mode_refusal(backend)


def _own_web(backend: str | None) -> bool:
    """True when agentport's own web tools will search for *backend* (small-model web)."""
    return backend is not None and uses_own_web(backend)


def _no_web_in_small_mode(target: str | None) -> str:
    """Why small-model research without --corpus cannot run, with what can make it run:
    never `--full-model` for the embedded model (refused too), and the web extra when an
    engine is configured but the extra is missing."""
    from ..workflows.deep_research import check_web_search, own_web_refusal

    local = target is not None and get_capability(target).kind is BackendKind.local
    full = "" if local else " (or --full-model for web research)"
    refusal = check_web_search(target) if target is not None else None
    why = own_web_refusal(refusal) if refusal is not None else None
    if why is not None and "agentport[web]" in why:  # an engine is set, the extra is not
        return f"small-model mode researches a local folder: add --corpus DIR{full}; {why}"
    return (
        f"small-model mode researches a local folder: add --corpus DIR{full}, or configure "
        "a search engine for agentport's own web tools: [web] searxng_url (docs/web.md)"
    )


def _check_out(out: Path) -> None:
    """Fail (exit 2) before any model call when *out* cannot be written."""
    if out.is_dir():
        fail(f"{out}: is a folder; --out takes a file path", 2)
    if out.exists() and not out.is_file():  # a pipe or device would be replaced, not written
        fail(f"{out}: is not a regular file; --out takes a file path", 2)
    parent = out.parent
    if not parent.is_dir():
        why = "is not a folder" if parent.exists() else "does not exist"
        fail(f"{out}: cannot write the report: {str(parent)!r} {why}", 2)
    try:
        check_writable(parent)
    except OSError as exc:
        fail(f"{out}: cannot write the report in {str(parent)!r}: {exc.strerror or exc}", 2)


def _run_with_progress(
    question: str,
    adapter: LLMAdapter,
    config: ResearchConfig,
    corpus: Corpus | None,
    cache: CallCache,
    quiet: bool,
    debug: bool = False,
    budget: Budget | None = None,
) -> ResearchReport:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(stderr=True)
    progress = Progress(
        TextColumn("[bold]{task.fields[phase]:<9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
        disable=quiet or not console.is_terminal,
    )
    task = progress.add_task("", total=None, phase="start")

    def on_event(event: ResearchEvent) -> None:
        fields: dict[str, Any] = {"completed": event.done, "total": max(event.expected, 1)}
        if event.kind == "phase":  # the message may quote the question: no controls, no markup
            shown = escape(printable(event.message, newlines=False))
            fields |= {"phase": event.phase, "description": shown}
        elif event.kind == "call_finished" and not event.ok:
            fields["description"] = f"{event.phase} call failed"
        progress.update(task, **fields)
        if debug and (line := _debug_line(event)) is not None:
            console.print(printable(line), markup=False, highlight=False, soft_wrap=True)

    async def go() -> ResearchReport:
        with workflow_span("deep_research", mode="corpus" if corpus is not None else "web"):
            return await run_research(
                question,
                adapter,
                config=config,
                corpus=corpus,
                on_event=on_event,
                cache=cache,
                budget=budget,
            )

    with progress:
        return anyio.run(go)


def _debug_line(event: ResearchEvent) -> str | None:
    """`--debug`: one stderr entry per finished model call with its raw answer."""
    if event.kind != "call_finished" or event.cached:
        return None
    status = "ok" if event.ok else f"failed: {event.message}"
    raw = event.raw if len(event.raw) <= 2000 else event.raw[:2000] + " …"
    return redact(f"agentport: debug: {event.phase} call {status}\n  raw answer: {raw!r}")


def _emit(report: ResearchReport, as_json: bool, out: Path | None) -> None:
    text = redact(to_json(report) if as_json else to_markdown(report))
    if out is None:
        echo(text, nl=False)
        return
    try:
        atomic_write_text(out, text)
    except OSError as exc:
        echo(text, nl=False)  # the run's work is not lost: the report goes to stdout
        fail(
            f"{out}: cannot write the report ({exc.strerror or exc}); it was printed to "
            "stdout instead; rerun with --resume to replay the finished calls and write it",
            1,
        )
    echo(f"agentport: report written to {out}", err=True)


@app.command()
def research(
    question: _Question = None,
    backend: _Backend = None,
    model: _Model = None,
    corpus: _Corpus = None,
    as_json: _AsJson = False,
    out: _Out = None,
    early_quorum: _EarlyQuorum = False,
    concurrency: _Concurrency = None,
    rounds: _Rounds = None,
    plan: _Plan = False,
    resume: _Resume = False,
    quiet: _Quiet = False,
    small_model: _SmallModel = None,
    debug: _Debug = False,
    budget_spec: _BudgetSpec = None,
    batch: _Batch = None,
    jobs: _Jobs = 4,
    temporal: _Temporal = None,
    namespace: _Namespace = "default",
    batch_id: _BatchId = None,
    detach: _Detach = False,
) -> None:
    """Research a question: scope, search, fetch, 3-vote adversarial verification, synthesis.

    Web mode uses the agent's own web tools; --corpus DIR searches a local folder instead
    (works with any backend, including the embedded local model). --budget stops the run at
    a ceiling with a partial report. Exit codes: 0 done, 1 failed, 2 bad input, 3 partial
    (a budget ceiling was reached; the report holds what was finished), 130 interrupted.
    --batch FILE --out DIR researches one question per line into DIR (see docs/deployment.md);
    with --batch, --budget bounds the whole batch (exit 3: questions partial or not run)."""
    if batch is not None or question is None:
        from ._batch import refuse_with_batch, research_batch_command

        refuse_with_batch(plan=plan, resume=resume, json=as_json, debug=debug)
        research_batch_command(
            question,
            batch,
            out,
            backend=backend,
            model=model,
            corpus=corpus,
            early_quorum=early_quorum,
            concurrency=concurrency,
            small_model=small_model,
            jobs=jobs,
            quiet=quiet,
            temporal=temporal,
            namespace=namespace,
            batch_id=batch_id,
            detach=detach,
            budget_spec=budget_spec,
        )
        return
    q = question.strip()
    if not q:
        fail("the research question is empty", 2)
    knobs = (early_quorum, concurrency, small_model, rounds)
    target, config, budget = _settings(backend, knobs, budget_spec)
    if config.small_model and corpus is None and not plan and not _own_web(target):
        fail(_no_web_in_small_mode(target), 2)
    loaded = _load(corpus, config)
    if plan:
        _print_plan(config, budget, loaded, target)
        return
    adapter, config, loaded = _adapter(backend, model, target, config, knobs, corpus, loaded)
    if out is not None:
        _check_out(out)
    if loaded is None and (refusal := _web_refusal(adapter.backend)) is not None:
        fail(refusal, 2)
    cache = CallCache(cache_folder(q, adapter.backend, model, corpus), replay=resume)
    if not resume:
        cache.clear()
    try:
        report = _run_with_progress(q, adapter, config, loaded, cache, quiet, debug, budget)
    except KeyboardInterrupt:
        fail("interrupted; finished calls are kept: rerun with --resume to continue", 130)
    _finish(report, cache, as_json, out)


def _settings(
    backend: str | None, knobs: _Knobs, budget_spec: str | None
) -> tuple[str | None, ResearchConfig, Budget | None]:
    """(the backend a run would use, its research settings, the `--budget`); exit 2 on a
    bad configuration or budget spec."""
    try:
        target = resolved_backend(backend)
        return target, research_config(target, *knobs), resolve_budget(budget_spec)
    except ProviderError as exc:
        fail_error(exc)
    except ValueError as exc:  # a bad --budget spec
        fail(str(exc), 2)


def _adapter(
    backend: str | None,
    model: str | None,
    target: str | None,
    config: ResearchConfig,
    knobs: _Knobs,
    corpus: Path | None,
    loaded: Corpus | None,
) -> tuple[LLMAdapter, ResearchConfig, Corpus | None]:
    """The run's adapter, and the settings and corpus of the backend it resolved to."""
    from ..factory import create_llm_adapter

    try:  # every call's config is merged over the configured settings by the adapter
        adapter = create_llm_adapter(backend, model=model)
    except ProviderError as exc:
        fail_error(exc)
    if backend is None and adapter.backend != target:
        # the configured backend resolved to another one (e.g. `auto`): its config applies
        config = research_config(adapter.backend, *knobs)
        if loaded is not None:
            loaded.close()
            loaded = _load(corpus, config)
    return adapter, config, loaded


# --early-quorum, --concurrency, --small-model/--full-model, --rounds
_Knobs = tuple[bool, int | None, bool | None, int | None]


def _load(corpus: Path | None, config: ResearchConfig) -> Corpus | None:
    """The `--corpus` folder loaded (None without one); exit 2 when it cannot be read."""
    if corpus is None:
        return None
    result = load_corpus(corpus, max_passage_chars=config.max_passage_chars)
    if isinstance(result, Failure):
        fail(result.failure().message, 2)
    return result.unwrap()


def _print_plan(
    config: ResearchConfig, budget: Budget | None, loaded: Corpus | None, target: str | None
) -> None:
    """`--plan`: the call budget and limits (and whether a budget fits), no call made."""
    the_plan = plan_research(config, corpus=loaded)
    fit = budget_lines(budget, *budget_plan(the_plan, config.max_tokens))
    for line in the_plan.lines() + fit:
        echo(line)
    if loaded is not None:
        echo(f"corpus: {loaded.documents} documents, {len(loaded.passages)} passages")
    elif target is not None and (refusal := _web_refusal(target)) is not None:
        echo(f"note: {refusal}")


def _finish(report: ResearchReport, cache: CallCache, as_json: bool, out: Path | None) -> None:
    """The report out (what could be salvaged too), its warnings on stderr, the exit code:
    1 failed, 3 partial (budget)."""
    salvaged = bool(report.sources or report.claims)
    if report.error and not salvaged:
        fail(report.error, 1)
    for warning in report.warnings:
        echo(f"agentport: warning: {redact(warning)}", err=True)
    if cache.hits:
        echo(f"agentport: resumed {cache.hits} finished call(s) from {cache.folder}", err=True)
    _emit(report, as_json, out)
    if report.budget_reached is not None:
        fail(f"budget reached ({report.budget_reached}): the report is partial", PARTIAL_EXIT)
    if report.error:
        fail(report.error, 1)
