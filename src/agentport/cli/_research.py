"""`agentport research "QUESTION"`: the deep-research workflow from the command line.

Every expected failure (empty question, missing or empty corpus folder, a backend without
web tools, a model whose answers never validate) prints one line `agentport: ...` on stderr
and exits non-zero; whatever report could be salvaged is still printed or written.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from returns.result import Failure, Result

from ..catalog import get_capability
from ..config import LLMSettings
from ..core import (
    BackendKind,
    CompletionConfig,
    CompletionResponse,
    LLMAdapter,
    Message,
    ProviderError,
)
from ..workflows.deep_research import (
    CallCache,
    Corpus,
    ResearchConfig,
    ResearchEvent,
    ResearchReport,
    atomic_write_text,
    check_web_search,
    load_corpus,
    plan_research,
    run_research,
    to_json,
    to_markdown,
)
from ._app import app, fail, fail_error

__all__ = ["SettingsAdapter", "cache_folder", "research", "resolved_backend"]


class SettingsAdapter:
    """Applies the configured `llm.*_timeout_s`, `on_ignored` and model to every call a
    workflow makes (workflows build their own per-call `CompletionConfig`s, which would
    otherwise carry the library defaults)."""

    def __init__(self, inner: LLMAdapter, llm: LLMSettings) -> None:
        self.inner = inner
        self.llm = llm

    @property
    def backend(self) -> str:
        return self.inner.backend

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        update: dict[str, Any] = {
            "startup_timeout_s": self.llm.startup_timeout_s,
            "idle_timeout_s": self.llm.idle_timeout_s,
            "total_timeout_s": self.llm.total_timeout_s,
            "on_ignored": self.llm.on_ignored,
        }
        if config is None:
            config = self.llm.completion_config()
        elif config.model is None and self.llm.model is not None:
            update["model"] = self.llm.model
        return await self.inner.complete(messages, config.model_copy(update=update))


def resolved_backend(backend: str | None) -> str | None:
    """The canonical backend a run would use (`--backend`, else `llm.backend`), without
    creating an adapter; *backend* when no backend resolves. Raises `ProviderError` for a
    bad configuration."""
    from ..config import load_settings
    from ..factory import resolve_auto, resolve_backend

    name = load_settings(backend=backend).llm.backend
    try:
        return resolve_auto() if name.strip().lower() == "auto" else resolve_backend(name)
    except ProviderError:
        return backend


def cache_folder(question: str, backend: str, model: str | None, corpus: Path | None) -> Path:
    """Where a run's finished calls are kept for `--resume`:
    `$XDG_CACHE_HOME/agentport/research/<hash of question, backend, model, corpus>`."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = json.dumps([question, backend, model, str(corpus.resolve()) if corpus else None])
    return root / "agentport" / "research" / hashlib.sha256(key.encode()).hexdigest()[:20]


def _is_local(backend: str) -> bool:
    try:
        return get_capability(backend).kind is BackendKind.local
    except ProviderError:
        return False


def _config(backend: str | None, early_quorum: bool, concurrency: int | None) -> ResearchConfig:
    # A local (small) model gets the small-context caps; the limits stay overridable.
    overrides: dict[str, Any] = {"early_quorum": early_quorum}
    if concurrency is not None:
        overrides["CONCURRENCY"] = concurrency
    if backend is not None and _is_local(backend):
        return ResearchConfig.for_small_model(**overrides)
    return ResearchConfig(**overrides)


def _run_with_progress(
    question: str,
    adapter: LLMAdapter,
    config: ResearchConfig,
    corpus: Corpus | None,
    cache: CallCache,
    quiet: bool,
) -> ResearchReport:
    from rich.console import Console
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
        if event.kind == "phase":
            fields |= {"phase": event.phase, "description": event.message}
        elif event.kind == "call_finished" and not event.ok:
            fields["description"] = f"{event.phase} call failed"
        progress.update(task, **fields)

    async def go() -> ResearchReport:
        return await run_research(
            question, adapter, config=config, corpus=corpus, on_event=on_event, cache=cache
        )

    with progress:
        return anyio.run(go)


def _emit(report: ResearchReport, as_json: bool, out: Path | None) -> None:
    text = to_json(report) if as_json else to_markdown(report)
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        atomic_write_text(out, text)
    except OSError as exc:
        fail(f"{out}: cannot write the report: {exc.strerror or exc}", 2)
    typer.echo(f"agentport: report written to {out}", err=True)


@app.command()
def research(
    question: Annotated[str, typer.Argument(help="The research question.")],
    backend: Annotated[
        str | None, typer.Option("--backend", "-b", help="Backend or alias (default: config).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model id.")] = None,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus", help="Research this folder (md, txt, rst, html) instead of the web."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Emit the report as JSON.")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the report to this file.")
    ] = None,
    early_quorum: Annotated[
        bool,
        typer.Option("--early-quorum", help="Stop voting once a claim's outcome is settled."),
    ] = False,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", min=1, help="Agent calls in flight (10).")
    ] = None,
    plan: Annotated[
        bool, typer.Option("--plan", help="Print the call budget and limits, then exit.")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Reuse the finished calls of an interrupted run.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Research a question: scope, search, fetch, 3-vote adversarial verification, synthesis.

    Web mode uses the agent's own web tools; --corpus DIR searches a local folder instead
    (works with any backend, including the embedded local model)."""
    q = question.strip()
    if not q:
        fail("the research question is empty", 2)
    try:
        target = resolved_backend(backend)
        config = _config(target, early_quorum, concurrency)
    except ProviderError as exc:
        fail_error(exc)
    loaded: Corpus | None = None
    if corpus is not None:
        result = load_corpus(corpus, max_passage_chars=config.max_passage_chars)
        if isinstance(result, Failure):
            fail(result.failure().message, 2)
        loaded = result.unwrap()
    if plan:
        for line in plan_research(config, corpus=loaded).lines():
            typer.echo(line)
        if loaded is not None:
            typer.echo(f"corpus: {loaded.documents} documents, {len(loaded.passages)} passages")
        elif target is not None and (refusal := check_web_search(target)) is not None:
            typer.echo(f"note: {refusal}")
        return
    from ..config import load_settings
    from ..factory import create_llm_adapter

    try:
        llm = load_settings(backend=backend, model=model).llm
        inner = create_llm_adapter(backend, model=model) if model else create_llm_adapter(backend)
    except ProviderError as exc:
        fail_error(exc)
    adapter: LLMAdapter = SettingsAdapter(inner, llm)
    if backend is None and _is_local(adapter.backend):
        config = _config(adapter.backend, early_quorum, concurrency)
    if loaded is None and (refusal := check_web_search(adapter.backend)) is not None:
        fail(refusal, 2)
    cache = CallCache(cache_folder(q, adapter.backend, model, corpus), replay=resume)
    if not resume:
        cache.clear()
    try:
        report = _run_with_progress(q, adapter, config, loaded, cache, quiet)
    except KeyboardInterrupt:
        fail("interrupted; finished calls are kept: rerun with --resume to continue", 130)
    salvaged = bool(report.sources or report.claims)
    if report.error and not salvaged:
        fail(report.error, 1)
    for warning in report.warnings:
        typer.echo(f"agentport: warning: {warning}", err=True)
    if cache.hits:
        typer.echo(
            f"agentport: resumed {cache.hits} finished call(s) from {cache.folder}", err=True
        )
    _emit(report, as_json, out)
    if report.error:
        fail(report.error, 1)
