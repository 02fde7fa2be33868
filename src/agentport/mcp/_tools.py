"""The `complete`, `backends` and deep-research job tools of `agentport mcp`."""

import json
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field
from returns.result import Failure

from ..catalog import all_backends, get_capability
from ..core import (
    BackendKind,
    CompletionConfig,
    ErrorKind,
    LLMAdapter,
    Message,
    ProviderError,
    json_schema_problem,
    redact,
)
from ..workflows.deep_research import (
    ResearchConfig,
    load_corpus,
    run_research,
    to_json,
    to_markdown,
)
from ._errors import Roots, ToolFailure, guarded
from ._jobs import Job, Jobs

__all__ = ["AdapterFactory", "CoreTools"]

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


def _nonempty(value: str, field: str) -> str:
    text = value.strip()
    if not text:
        raise ToolFailure(ErrorKind.invalid_request, f"{field}: is empty")
    return text


def _research_config(backend: str) -> ResearchConfig:
    """The CLI's choice: small-model mode and its caps for the embedded model."""
    try:
        local = get_capability(backend).kind is BackendKind.local
    except ProviderError:
        local = False
    return ResearchConfig.for_small_model() if local else ResearchConfig()


class CoreTools:
    """Tools that call a backend (`complete`) or the research workflow; *adapter_for* makes
    the adapter for a backend name (None = the configured default)."""

    def __init__(self, roots: Roots, jobs: Jobs, adapter_for: AdapterFactory) -> None:
        self.roots, self.jobs, self.adapter_for = roots, jobs, adapter_for

    def register(self, server: Any) -> None:
        for fn, title in (
            (self.complete, "Ask a model once"),
            (self.backends, "List agentport backends"),
            (self.research_start, "Start a deep-research job"),
            (self.research_status, "Deep-research job status"),
            (self.research_wait, "Wait for a deep-research job"),
            (self.research_result, "Deep-research report"),
            (self.research_cancel, "Cancel a deep-research job"),
        ):
            server.add_tool(guarded(fn), name=fn.__name__, title=title, structured_output=True)
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
    ) -> dict[str, Any]:
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
        result = await adapter.complete(messages, config)
        if isinstance(result, Failure):
            raise result.failure()
        response = result.unwrap()
        parsed = response.parsed
        if parsed is not None and hasattr(parsed, "model_dump"):
            parsed = parsed.model_dump(mode="json")
        out: dict[str, Any] = json.loads(
            redact(
                json.dumps(
                    {
                        "content": response.content,
                        "parsed": parsed,
                        "backend": response.backend,
                        "model": response.model,
                        "warnings": list(response.warnings),
                        "duration_s": response.duration_s,
                    }
                )
            )
        )
        return out

    async def backends(self) -> dict[str, Any]:
        """List agentport's backends: name, aliases, kind (cli/api/local/test), whether it
        is installed on the server's machine, the CLI version it was verified against, and
        whether it can run agent sessions. Use a `name` as the `backend` of other tools."""
        from ..factory import is_installed

        rows = [
            {
                "name": cap.name,
                "aliases": list(cap.aliases),
                "kind": cap.kind.value,
                "summary": cap.summary,
                "installed": is_installed(cap) if cap.name != "acp" else None,
                "verified_against": cap.verified_against,
                "supports_runtime": cap.supports_runtime,
            }
            for cap in all_backends()
        ]
        return {"backends": rows}

    async def research_start(
        self,
        question: Annotated[str, Field(description="The research question (not empty).")],
        corpus: Annotated[
            str,
            Field(
                description="Folder of documents (md, txt, rst, html) to research, inside the "
                "server's --root folders. Web research is not available over MCP yet."
            ),
        ],
        backend: BackendArg = None,
    ) -> dict[str, Any]:
        """Start deep research on a local folder and return {job_id} at once.

        The job scopes the question, searches the corpus, extracts claims with quotes,
        verifies each claim by a 3-vote quorum and writes a report. Then call
        `research_wait` (blocks, with progress notifications) or `research_status` (poll),
        then `research_result`; `research_cancel` stops it. Refused: an empty question, a
        corpus outside the roots or with no readable documents, web mode."""
        q = _nonempty(question, "question")
        if not corpus or not corpus.strip():
            raise ToolFailure(
                ErrorKind.unsupported,
                "corpus: required; web research is not available over MCP yet (give a folder)",
            )
        folder = self.roots.check(corpus, "corpus")
        adapter = self.adapter_for(backend)
        config = _research_config(adapter.backend)
        loaded = load_corpus(folder, max_passage_chars=config.max_passage_chars)
        if isinstance(loaded, Failure):
            raise ToolFailure(ErrorKind.invalid_request, f"corpus: {loaded.failure().message}")
        docs = loaded.unwrap()

        async def run(job: Job) -> None:
            report = await run_research(
                q, adapter, config=config, corpus=docs, on_event=job.on_event
            )
            job.report = report
            if report.error and not (report.sources or report.claims):
                job.state, job.error = "failed", report.error
            else:
                job.state = "done"

        job = self.jobs.start(q, str(folder), run)
        return {"job_id": job.id, "state": job.state}

    async def research_status(self, job_id: JobArg) -> dict[str, Any]:
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
    ) -> dict[str, Any]:
        """Wait until the job ends or *timeout_s* passes, sending MCP progress
        notifications (calls done of calls expected, with the phase) when the request
        carries a progressToken; returns the same status as `research_status`."""
        job = self.jobs.get(job_id)
        with anyio.move_on_after(timeout_s):
            while job.state == "running":
                await ctx.report_progress(
                    job.done, job.expected or None, f"{job.phase}: {job.message}"
                )
                changed = job.changed
                with anyio.move_on_after(5):
                    await changed.wait()
        if job.state != "running":
            await ctx.report_progress(job.done, job.done or None, job.state)
        return job.status()

    async def research_result(self, job_id: JobArg) -> dict[str, Any]:
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

    async def research_cancel(self, job_id: JobArg) -> dict[str, Any]:
        """Cancel a running job; returns once it has stopped (its agent processes are
        ended). Errors for an unknown id or a job that already ended."""
        job = self.jobs.cancel(job_id)
        with anyio.move_on_after(30):
            await job.finished.wait()
        return job.status()
