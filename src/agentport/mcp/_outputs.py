"""What each tool of `agentport mcp` returns, as typed dicts: the SDK turns each into the
tool's `outputSchema` (MCP 2025-06-18 "Structured content": a client may validate
`structuredContent` against it) and validates the returned value against it.

Field names are the ones the tools have always returned (docs/mcp.md "Tools"). The research
report and the DeepRefine trace are schemas of their own (the research report's camelCase
JSON, docs/deep-research.md; the loop trace of docs/deeprefine.md), carried as objects.
"""

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

from ..core import BackendKind

__all__ = [
    "ApplyOutcome",
    "ApplyResult",
    "BackendRow",
    "BackendsResult",
    "CompleteResult",
    "JobStarted",
    "JobStatus",
    "RefineResult",
    "ResearchResult",
    "ReviewItem",
    "ReviewResult",
]

Confidence = Literal["HIGH", "MEDIUM", "LOW"]


class CompleteResult(TypedDict):
    content: Annotated[str, Field(description="The model's answer text.")]
    parsed: Annotated[
        Any, Field(description="The validated object when a schema was given, else null.")
    ]
    backend: Annotated[str, Field(description="The backend that answered.")]
    model: Annotated[str | None, Field(description="The model id the backend reported.")]
    warnings: Annotated[list[str], Field(description="Parameters ignored or translated.")]
    duration_s: Annotated[float, Field(description="Wall time of the call, seconds.")]


class BackendRow(TypedDict):
    name: Annotated[str, Field(description="Pass this as `backend` to the other tools.")]
    aliases: list[str]
    kind: Annotated[BackendKind, Field(description="How it runs: an agent CLI, HTTP, ...")]
    summary: str
    installed: Annotated[
        bool | None, Field(description="Found on the server's machine (null: not knowable).")
    ]
    verified_against: Annotated[
        str | None, Field(description="The CLI version the contract tests ran against.")
    ]
    supports_runtime: Annotated[bool, Field(description="Can run multi-turn agent sessions.")]


class BackendsResult(TypedDict):
    backends: list[BackendRow]


class JobStarted(TypedDict):
    job_id: Annotated[str, Field(description="Pass to research_wait / _status / _result.")]
    state: Literal["running", "done", "failed", "cancelled"]


class JobStatus(TypedDict):
    job_id: str
    state: Literal["running", "done", "failed", "cancelled"]
    question: str
    mode: Literal["web", "corpus"]
    corpus: Annotated[str | None, Field(description="The corpus folder; null for the web.")]
    phase: Annotated[str, Field(description="The workflow phase (scope, search, ...).")]
    calls_done: int
    calls_expected: Annotated[int, Field(description="Agent calls expected so far (grows).")]
    message: str
    elapsed_s: float
    error: str | None
    partial: Annotated[bool, Field(description="True when a budget ceiling ended the run.")]
    budget_reached: Annotated[str | None, Field(description="The ceiling, e.g. 'calls 10/10'.")]


class ResearchResult(TypedDict):
    status: JobStatus
    report: Annotated[
        dict[str, Any],
        Field(
            description="The report (camelCase): question, summary, findings, caveats, "
            "openQuestions, refuted, unverified, sources, stats, claims, warnings."
        ),
    ]
    markdown: Annotated[str, Field(description="The same report as Markdown.")]


class ReviewItem(TypedDict):
    action: Annotated[str, Field(description="The action text, as `apply` takes it.")]
    confidence: Confidence
    effect: Annotated[Literal["change", "skip", "reject"], Field(description="What apply does.")]
    evidence: list[str]
    warnings: list[str]
    suggested_replacement: str | None
    node_ids: Annotated[
        list[str | None], Field(description="The node id per argument; null for a new name.")
    ]


class Counts(TypedDict):
    HIGH: int
    MEDIUM: int
    LOW: int


class ReviewResult(TypedDict):
    actions: Annotated[list[str], Field(description="Pass exactly this list to `apply`.")]
    action_set_id: Annotated[str, Field(description="Digest naming that exact list.")]
    counts: Counts
    review: list[ReviewItem]
    markdown: Annotated[str, Field(description="The review to show the user.")]


class RefineResult(TypedDict):
    query_id: Annotated[str, Field(description="Names the trace; pass it to review / apply.")]
    early_exit: Annotated[bool, Field(description="The graph already answers: no actions.")]
    partial: Annotated[bool, Field(description="A budget ceiling stopped the loop.")]
    budget_reached: NotRequired[str | None]
    message: NotRequired[str]
    trace_file: str
    actions_file: str | None
    trace: Annotated[dict[str, Any], Field(description="The loop trace (DeepRefine schema).")]
    actions: list[str]
    action_set_id: str | None
    counts: NotRequired[Counts]
    review: list[ReviewItem]
    markdown: NotRequired[str]


class ApplyOutcome(TypedDict):
    action: str
    outcome: Literal["applied", "skipped", "rejected"]
    reason: str


class ApplyResult(TypedDict):
    applied: Annotated[int, Field(description="Actions that changed graph.json.")]
    written: Annotated[bool, Field(description="graph.json was rewritten.")]
    graph_file: str
    backup_file: Annotated[str | None, Field(description="The exact pre-image of graph.json.")]
    outcomes: list[ApplyOutcome]
