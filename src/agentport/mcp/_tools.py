"""The `complete`, `backends` and deep-research job tools of `agentport mcp`."""

import json
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field
from returns.result import Failure

from ..catalog import all_backends
from ..core import (
    CompletionConfig,
    ErrorKind,
    LLMAdapter,
    Message,
    json_schema_problem,
    redact,
)
from ..policies import Budget
from ..workflows.deep_research import (
    Corpus,
    load_corpus,
    research_config_for,
    run_research,
    to_json,
    to_markdown,
    web_mode_refusal,
)
from ._errors import Progress, Roots, ToolFailure, describe, guarded, tool_hints
from ._jobs import Job, Jobs
from ._outputs import (
    BackendRow,
    BackendsResult,
    CompleteResult,
    JobStarted,
    JobStatus,
    ResearchResult,
)

__all__ = ["AdapterFactory", "BudgetArg", "CoreTools", "run_budget"]

AdapterFactory = Callable[[str | None], LLMAdapter]

#: longest a `research_wait` call blocks (seconds)
MAX_WAIT_S = 300.0

BackendArg = Annotated[
    str | None,
    Field(
        description="Backend name or alias from the `backends` tool (e.g. 'claude', "
        "'codex', 'local'); omit to use the server's configured default."
    ),
]
JobArg = Annotated[str, Field(description="The job id returned by research_start.")]
BudgetArg = Annotated[
    str | None,
    Field(
        description="Ceilings for this run, like `agentport research --budget`: e.g. "
        "'calls=40,output_tokens=20000,usd=0.50,wall=10m' (keys: calls, input_tokens, "
        "output_tokens, usd, wall), key by key over the server's [budget] table; 'none' "
        "drops the table. At a ceiling the run ends with a partial result (budget reached)."
    ),
]


def run_budget(spec: str | None) -> Budget | None:
    """The run's budget: *spec* over the configured `[budget]` table (`agentport.config.
    run_budget`); a bad spec is an `invalid_request` naming `budget` and the key."""
    from ..config import run_budget as resolve

    try:
        return resolve(spec, source="budget")
    except ValueError as exc:
        raise ToolFailure(ErrorKind.invalid_request, str(exc)) from None


def _nonempty(value: str, field: str) -> str:
    text = value.strip()
    if not text:
        raise ToolFailure(ErrorKind.invalid_request, f"{field}: is empty")
    return text


class CoreTools:
    """Tools that call a backend (`complete`) or the research workflow; *adapter_for* makes
    the adapter for a backend name (None = the configured default)."""

    def __init__(
        self, roots: Roots, jobs: Jobs, adapter_for: AdapterFactory, max_calls: int = 4
    ) -> None:
        self.roots, self.jobs, self.adapter_for = roots, jobs, adapter_for
        # model calls of `complete` running at once, over every client of the server
        self.calls = anyio.CapacityLimiter(max_calls)

    def register(self, server: Any) -> None:
        reads, waits = tool_hints(read_only=True, idempotent=True), tool_hints(read_only=True)
        for fn, title, hints in (
            # a model call changes nothing here but reaches a model (the open world)
            (self.complete, "Ask a model once", tool_hints(read_only=True, open_world=True)),
            (self.backends, "List agentport backends", reads),
            (self.research_start, "Start a deep-research job", tool_hints(open_world=True)),
            (self.research_status, "Deep-research job status", reads),
            (self.research_wait, "Wait for a deep-research job", waits),
            (self.research_result, "Deep-research report", reads),
            (
                self.research_cancel,
                "Cancel a deep-research job",
                tool_hints(destructive=True, idempotent=True),
            ),
        ):
            server.add_tool(
                guarded(fn),
                name=fn.__name__,
                title=title,
                description=describe(fn),
                annotations=hints,
                structured_output=True,
            )
        server.resource(
            "agentport://research/{job_id}",
            name="research_report",
            title="Deep-research report",
            description="The Markdown report of a finished research job (research_start's id).",
            mime_type="text/markdown",
        )(self.report_resource)

    async def complete(
        self,
        prompt: Annotated[str, Field(description="The question or instruction for the model.")],
        schema: Annotated[
            dict[str, Any] | None,
            Field(
                description="Optional JSON Schema (an object) the answer must match; the "
                "validated object comes back as `parsed`."
            ),
        ] = None,
        backend: BackendArg = None,
        system: Annotated[str | None, Field(description="Optional system prompt.")] = None,
    ) -> CompleteResult:
        """Ask one model one question through agentport and return its answer.

        Returns {content, parsed (when a schema was given), backend, model, warnings,
        duration_s}. The model gets no tools and a read-only sandbox. Errors are
        `<kind>: <message>` (kinds: not_installed, auth_required, rate_limited, timeout,
        schema_mismatch, ...); check `backends` for what is installed."""
        text = _nonempty(prompt, "prompt")
        if schema is not None and (problem := json_schema_problem(schema)):
            raise ToolFailure(
                ErrorKind.invalid_request, f"schema: not a valid JSON schema: {problem}"
            )
        adapter = self.adapter_for(backend)
        messages = ([Message.system(system)] if system else []) + [Message.user(text)]
        config = CompletionConfig(**({"output_schema": schema} if schema is not None else {}))
        async with self.calls:
            result = await adapter.complete(messages, config)
        if isinstance(result, Failure):
            raise result.failure()
        response = result.unwrap()
        parsed = response.parsed
        if parsed is not None and hasattr(parsed, "model_dump"):
            parsed = parsed.model_dump(mode="json")
        out = CompleteResult(
            content=response.content,
            parsed=parsed,
            backend=response.backend,
            model=response.model,
            warnings=list(response.warnings),
            duration_s=response.duration_s,
        )
        redacted: CompleteResult = json.loads(redact(json.dumps(out)))
        return redacted

    async def backends(self) -> BackendsResult:
        """List agentport's backends: name, aliases, kind (cli/http/local/test), whether it
        is installed on the server's machine, the CLI version it was verified against, and
        whether it can run agent sessions. Use a `name` as the `backend` of other tools."""
        from ..factory import is_installed

        rows = [
            BackendRow(
                name=cap.name,
                aliases=list(cap.aliases),
                kind=cap.kind,
                summary=cap.summary,
                installed=is_installed(cap) if cap.name != "acp" else None,
                verified_against=cap.verified_against,
                supports_runtime=cap.supports_runtime,
            )
            for cap in all_backends()
        ]
        return {"backends": rows}

    async def research_start(
        self,
        question: Annotated[str, Field(description="The research question (not empty).")],
        corpus: Annotated[
            str | None,
            Field(
                description="Folder of documents (md, txt, rst, html) to research, inside the "
                "server's --root folders. Omit it to research the web: with the agent's own "
                "web tools (codex, claude, gemini) or, on other backends, agentport's own "
                "search and fetch when the server's [web] table names a search engine."
            ),
        ] = None,
        backend: BackendArg = None,
        budget: BudgetArg = None,
    ) -> JobStarted:
        """Start deep research on a local folder or the web and return {job_id} at once.

        The job scopes the question, searches (the corpus, or the web), extracts claims
        with quotes, verifies each claim by a 3-vote quorum and writes a report. Then call
        `research_wait` (blocks, with progress notifications) or `research_status` (poll),
        then `research_result`; `research_cancel` stops it. With a `budget`, a run that
        reaches a ceiling ends with a partial report (status `partial: true`, message
        "budget reached ..."). Refused: an empty question, a bad budget, a corpus outside
        the roots or with no readable documents, web research on a backend without web
        tools when no search engine is configured (the line says how to configure one)."""
        q = _nonempty(question, "question")
        spent = run_budget(budget)
        adapter = self.adapter_for(backend)
        config = research_config_for(adapter.backend)
        docs: Corpus | None = None
        where: str | None = None
        if corpus is None or not corpus.strip():
            refusal = web_mode_refusal(adapter.backend, small_model=config.small_model)
            if refusal is not None:
                raise ToolFailure(ErrorKind.unsupported, refusal)
        else:
            folder = self.roots.check(corpus, "corpus")
            loaded = load_corpus(folder, max_passage_chars=config.max_passage_chars)
            if isinstance(loaded, Failure):
                raise ToolFailure(ErrorKind.invalid_request, f"corpus: {loaded.failure().message}")
            docs = loaded.unwrap()
            where = str(folder)

        async def run(job: Job) -> None:
            try:
                report = await run_research(
                    q, adapter, config=config, corpus=docs, on_event=job.on_event, budget=spent
                )
            finally:
                if docs is not None:
                    docs.close()
            job.report, job.budget_reached = report, report.budget_reached
            if report.error and not (report.sources or report.claims):
                job.state, job.error = "failed", report.error
            else:
                job.state = "done"

        try:
            job = self.jobs.start(q, where, run)
        except ToolFailure:  # too many jobs: the loaded corpus is not used
            if docs is not None:
                docs.close()
            raise
        return {"job_id": job.id, "state": job.state}

    async def research_status(self, job_id: JobArg) -> JobStatus:
        """A job's state (running/done/failed/cancelled), phase, agent calls done and
        expected, elapsed seconds, and the error of a failed job. Cheap; poll it."""
        return self.jobs.get(job_id).status()

    async def research_wait(
        self,
        job_id: JobArg,
        ctx: Context,
        timeout_s: Annotated[
            float,
            Field(ge=0, le=MAX_WAIT_S, description="Longest to wait, seconds (0-300)."),
        ] = 60.0,
    ) -> JobStatus:
        """Wait until the job ends or *timeout_s* passes, sending MCP progress
        notifications (agent calls done, with the phase and the most calls still planned;
        the total once the job has ended) when the request carries a progressToken;
        returns the same status as `research_status`."""
        job = self.jobs.get(job_id)
        progress = Progress(ctx)
        with anyio.move_on_after(timeout_s):
            while job.state == "running":
                planned = f"{job.done} calls done, at most {job.expected} planned"
                await progress.report(job.done, f"{job.phase}: {job.message} ({planned})")
                changed = job.changed
                with anyio.move_on_after(5):
                    await changed.wait()
        if job.state != "running":
            ended = f"{job.state}: {job.message}" if job.budget_reached else job.state
            await progress.finish(job.done, ended)
        return job.status()

    async def research_result(self, job_id: JobArg) -> ResearchResult:
        """The finished job's report: {status, report (summary, findings, claims with
        their votes and quotes, confirmed/refuted/unverified, sources, stats, warnings),
        markdown}. Errors while the job runs, and for a cancelled job."""
        job = self.jobs.get(job_id)
        if job.state == "running":
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"job_id {job_id!r}: still running ({job.phase}, {job.done}/{job.expected} "
                "calls); call research_wait first",
            )
        if job.report is None:
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"job_id {job_id!r}: {job.state}, no report ({job.error})",
            )
        return {
            "status": job.status(),
            "report": json.loads(to_json(job.report)),
            "markdown": redact(to_markdown(job.report)),
        }

    async def report_resource(self, job_id: str) -> str:
        """`agentport://research/{job_id}`: a finished job's report as Markdown."""
        from mcp.server.mcpserver.exceptions import ResourceNotFoundError

        try:
            job = self.jobs.get(job_id)
        except ToolFailure as exc:
            raise ResourceNotFoundError(str(exc)) from None
        if job.report is None:
            raise ResourceNotFoundError(f"job_id {job_id!r}: {job.state}, no report yet")
        return redact(to_markdown(job.report))

    async def research_cancel(self, job_id: JobArg) -> JobStatus:
        """Cancel a running job; returns once it has stopped (its agent processes are
        ended). Errors for an unknown id or a job that already ended."""
        job = self.jobs.cancel(job_id)
        with anyio.move_on_after(30):
            await job.finished.wait()
        return job.status()
