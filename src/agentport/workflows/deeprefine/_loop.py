"""The DeepRefine loop on any `LLMAdapter` (DeepRefine skill "Control flow", flow A).

For step 1..MAX_HOPS: retrieve (hop 1 match, then k-hop expansion), judge, append the step,
stop on Yes. One step -> early exit, no refinement. More than one step -> ALWAYS error
abduction over the last HISTORY_HORIZON steps, then refinement actions on the last hop's
triples, even when the last hop said Yes (the skill's "Critical refinement rule"). Every call is a
fresh single-shot system+user pair with the skill's verbatim prompts and a `label`
(`judge`, `abduction`, `refinement`). Answers that do not parse get a bounded number of
re-prompts (the original reply plus a one-line format reminder).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from returns.result import Failure, Result, Success

from ...catalog import get_capability
from ...core import (
    BackendKind,
    CompletionConfig,
    ErrorKind,
    LLMAdapter,
    Message,
    Param,
    ParamSupport,
    ProviderError,
    ToolPolicy,
)
from ...policies import Budget, BudgetAdapter, BudgetLimit
from ...transport import WORKFLOW_WARM, with_warm_processes
from ._actions import Parsed, extract_block, parse_refinement
from ._constants import (
    ABDUCTION_RETRY,
    ABDUCTION_SYSTEM,
    ABDUCTION_USER,
    BASE_TOP_K,
    HISTORY_HORIZON,
    INCREMENT_HOP,
    JUDGE_RETRY,
    JUDGE_SYSTEM,
    JUDGE_USER,
    MAX_HOPS,
    REFINEMENT_RETRY,
    REFINEMENT_SYSTEM,
    REFINEMENT_USER,
)
from ._graph import Graph
from ._retrieval import (
    Triple,
    render_triples,
    source_hints,
    step_cap,
    uncovered_terms,
)
from ._small import (
    ABDUCTION_HINT,
    REFINEMENT_HINT,
    SMALL_MAX_ACTIONS,
    abduction_schema,
    build_choices,
    parse_abduction_choice,
    parse_refinement_choice,
    refinement_schema,
)
from ._source import GraphSource, InMemoryGraph
from ._trace import query_id, trace_template

__all__ = [
    "JUDGE_CHOICES",
    "LoopResult",
    "LoopSettings",
    "format_history",
    "parse_judge",
    "run_loop",
]

#: the only two answers the skill's judge prompt allows
JUDGE_CHOICES = ("<judge>Yes</judge>", "<judge>No</judge>")

_JUDGE_LOOSE = re.compile(r"<judge>\s*(yes|no)\b", re.IGNORECASE)
_YES = re.compile(r"\byes\b", re.IGNORECASE)
_NO = re.compile(r"\bno\b", re.IGNORECASE)
_ABDUCTION = re.compile(r"<abduction>(.*?)</abduction>", re.IGNORECASE | re.DOTALL)
_ABDUCTION_OPEN = re.compile(r"<abduction>(.*)", re.IGNORECASE | re.DOTALL)


def parse_judge(text: str) -> bool | None:
    """`<judge>Yes|No</judge>` (case/space tolerant, closed or not), else exactly one of
    yes/no in the first 200 characters; None when undecidable.

    An answer holding both a Yes and a No tag (the instruction echoed back, "<judge>Yes</judge>
    or <judge>No</judge>") is undecidable, never Yes."""
    tags = {m.lower() for m in _JUDGE_LOOSE.findall(text)}
    if tags:
        return tags.pop() == "yes" if len(tags) == 1 else None
    head = text[:200]
    yes, no = bool(_YES.search(head)), bool(_NO.search(head))
    return yes if yes != no else None


def _parse_abduction(text: str) -> str | None:
    match = _ABDUCTION.search(text) or _ABDUCTION_OPEN.search(text)
    reason = (match.group(1) if match else "").strip()
    return reason or None


def format_history(steps: list[dict[str, Any]]) -> str:
    """The skill's `{interaction_history}`: `Step<i>:` then the bracketed record, the triple
    dicts as Python reprs (DeepRefine's format), steps separated by a blank line."""
    blocks = []
    for i, step in enumerate(steps, start=1):
        content = [
            {k: t[k] for k in ("subject", "relation", "object")} for t in step["retrieved_subgraph"]
        ]
        blocks.append(
            f"Step{i}:\n['Query': {step['query']}, 'Subgraph_hop': {step['num_hops']}, "
            f"'Subgraph_content': {content!r}, 'Answerable': {step['answerable']}]"
        )
    return "\n\n".join(blocks)


@dataclass(frozen=True)
class LoopSettings:
    """Knobs of the loop.

    Attributes:
        judge_max_tokens / abduction_max_tokens / refinement_max_tokens: per-phase caps.
        retries: re-prompts after an answer that does not parse (per call).
        temperature: sampling temperature of every call (None = the backend's default).
        configs: per-label `CompletionConfig` overrides (`judge`, `abduction`,
            `refinement`); the loop always sets the `label`. An override is used as given.
        constrain_judge: ask the judge with `choices=JUDGE_CHOICES`; None (default) = when
            the backend's catalog entry supports output constraints (every catalog backend:
            decoding is constrained where the backend can, validated and re-prompted where
            it cannot).
        small_model: abduction and refinement as choices (see `_small`); None (default) =
            for the embedded backend (catalog kind `local`).
        on_step: called with the step number before each hop.
    """

    judge_max_tokens: int = 256
    abduction_max_tokens: int = 512
    refinement_max_tokens: int = 1024
    retries: int = 2
    temperature: float | None = 0.0
    configs: Mapping[str, CompletionConfig] = field(default_factory=dict)
    constrain_judge: bool | None = None
    small_model: bool | None = None
    on_step: Callable[[int], object] | None = None

    def config(self, label: str, max_tokens: int, **constraint: Any) -> CompletionConfig:
        """The call's config: the override for *label* if any, else the defaults plus
        *constraint* (`choices` / `output_schema`, with the backend's own re-prompts off:
        the loop re-prompts)."""
        base = self.configs.get(label)
        if base is None:
            extra = {"schema_retries": 0, **constraint} if constraint else {}
            if self.temperature is not None:  # None: the configured llm.temperature applies
                extra["temperature"] = self.temperature
            return CompletionConfig(
                label=label, max_tokens=max_tokens, tools=ToolPolicy.none(), **extra
            )
        # the loop's agents never get tools, whatever an override says
        return base.model_copy(update={"label": label, "tools": ToolPolicy.none()})


def _capability_kind(backend: str) -> tuple[bool, bool]:
    """(constrained output supported, embedded kind) from the catalog; unknown backends
    (a caller's own adapter) get neither."""
    try:
        cap = get_capability(backend)
    except ProviderError:
        return False, False
    return cap.support(Param.output_schema) is not ParamSupport.IGNORED, (
        cap.kind is BackendKind.local
    )


@dataclass
class LoopResult:
    """Outcome of one question: the reference-format `trace` (refinement_action_file still
    unset), `early_exit`, the raw `<refinement>` answer and its parse (None on early exit),
    and the triples of every step with node ids. `budget_reached` (e.g. "calls 3/3") marks a
    loop its budget stopped: the trace holds the steps finished so far and nothing may be
    applied."""

    trace: dict[str, Any]
    early_exit: bool
    refinement_raw: str | None = None
    refinement: Parsed | None = None
    steps: list[list[Triple]] = field(default_factory=list)
    budget_reached: str | None = None

    @property
    def query_id(self) -> str:
        return str(self.trace["query_id"])

    def refinement_text(self) -> str:
        """What goes into `refinement_actions_<id>.txt`: the first `<refinement>` block as the
        model wrote it (rejected items included, so review can report them)."""
        block, _ = extract_block(self.refinement_raw or "")
        return f"<refinement>{(block or '').strip()}</refinement>\n"


async def _ask(
    adapter: LLMAdapter,
    system: str,
    user: str,
    config: CompletionConfig,
    parse: Callable[[str], Any],
    reminder: str,
    retries: int,
    hint: str | None = None,
) -> Result[tuple[str, Any], ProviderError]:
    """One phase's call with at most *retries* re-prompts. An answer the backend rejects
    for its choices or schema (`schema_mismatch`) counts as an unparsable answer."""
    messages = [Message.system(system), Message.user(user)]
    if hint:
        messages.append(Message.user(hint))
    text = ""
    for _ in range(retries + 1):
        result = await adapter.complete(messages, config)
        if isinstance(result, Failure):
            error = result.failure()
            if error.kind is not ErrorKind.schema_mismatch:
                return result
            text = error.raw_text or ""
            value = None
        else:
            text = result.unwrap().content
            value = parse(text)
        if value is not None:
            return Success((text, value))
        messages = [*messages, Message.assistant(text), Message.user(reminder)]
    return Failure(
        ProviderError(
            ErrorKind.bad_output,
            f"{config.label}: no parsable answer after {retries + 1} attempts",
            backend=adapter.backend,
            raw_text=text,
        )
    )


@with_warm_processes(WORKFLOW_WARM)  # each call a fresh conversation on a warm agent
async def run_loop(
    adapter: LLMAdapter,
    graph: Graph | GraphSource,
    question: str,
    settings: LoopSettings | None = None,
    *,
    budget: Budget | None = None,
) -> Result[LoopResult, ProviderError]:
    """Run the whole loop for one question (no files written).

    Returns `Failure(ProviderError)` for backend failures, unparsable answers after the
    re-prompts (`bad_output`), or a question that matches nothing in the graph
    (`invalid_request`). Cancellation propagates. With a `budget` (calls, tokens, dollars,
    wall-clock; or an *adapter* that is a `BudgetAdapter`) a ceiling ends the loop in
    `Success(LoopResult(budget_reached=...))` holding the trace so far.

    *graph* is a loaded `Graph` or any `GraphSource` (the graph read elsewhere, e.g. by
    Temporal activities); the embedded-model tail needs the `Graph` itself, so with a source
    that holds none, small-model mode is `Failure(unsupported)`.
    """
    loop = _Loop.start(adapter, graph, question, settings or LoopSettings(), budget)
    for step in range(1, MAX_HOPS + 1):
        hop = await loop.hop(step)
        if not isinstance(hop, bool):
            return hop
        if hop:
            break
    if len(loop.history) <= 1:
        loop.trace["early_exit"] = True
        return Success(LoopResult(loop.trace, True, steps=loop.steps))
    loop.trace["early_exit"] = False
    if not loop.small:
        return await _full_tail(loop)
    if loop.source.graph is None:
        return Failure(
            ProviderError(
                ErrorKind.unsupported,
                "small-model mode needs the graph in this process; run the loop locally",
                backend=loop.adapter.backend,
            )
        )
    return await _small_tail(
        loop.adapter, loop.source.graph, loop.question, loop.trace, loop.steps, loop.settings
    )


@dataclass
class _Loop:
    """One question's loop state: what it calls and reads, the judge's config, whether the
    small-model checks apply, the trace written so far and the triples of every hop."""

    adapter: LLMAdapter
    source: GraphSource
    question: str
    settings: LoopSettings
    small: bool
    judge_config: CompletionConfig
    trace: dict[str, Any]
    steps: list[list[Triple]] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        adapter: LLMAdapter,
        graph: Graph | GraphSource,
        question: str,
        settings: LoopSettings,
        budget: Budget | None,
    ) -> _Loop:
        source = InMemoryGraph(graph) if isinstance(graph, Graph) else graph
        if budget is not None:
            adapter = BudgetAdapter(adapter, budget)
        constrainable, embedded = _capability_kind(adapter.backend)
        constrain = constrainable if settings.constrain_judge is None else settings.constrain_judge
        small = embedded if settings.small_model is None else settings.small_model
        judge_config = settings.config(
            "judge",
            settings.judge_max_tokens,
            **({"choices": JUDGE_CHOICES} if constrain else {}),
        )
        question = question.strip()
        trace = trace_template(question)
        return cls(adapter, source, question, settings, small, judge_config, trace)

    @property
    def history(self) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = self.trace["interaction_history"]
        return steps

    async def hop(self, step: int) -> bool | Result[LoopResult, ProviderError]:
        """Retrieve and judge hop *step* and record it: whether the hop is answerable, or
        the loop's end (nothing matched; a failed or budget-stopped judge)."""
        if self.settings.on_step:
            self.settings.on_step(step)
        retrieved = await self.retrieve(step)
        if isinstance(retrieved, Failure):
            return retrieved
        triples, evidence, method = retrieved.unwrap()
        user = JUDGE_USER.format(question=self.question, triples_string=render_triples(triples))
        judged = await _ask(
            self.adapter,
            JUDGE_SYSTEM,
            user,
            self.judge_config,
            parse_judge,
            JUDGE_RETRY,
            self.settings.retries,
        )
        if isinstance(judged, Failure):
            return _stopped(judged, self.trace, self.steps)
        raw, answerable = judged.unwrap()
        retrieval = {"method": method, "evidence": evidence[:4000]}
        record = self.record(step, triples, raw, answerable, retrieval)
        self.history.append(record)
        self.steps.append(triples)
        return bool(record["answerable"])

    async def retrieve(self, step: int) -> Result[tuple[list[Triple], str, str], ProviderError]:
        """Hop 1 matches the question, a later hop expands the last one: (triples, the
        evidence read, the method's name)."""
        if step > 1:
            cap = step_cap(step)
            triples, evidence = await self.source.expand(self.question, self.steps[-1], cap)
            return Success((triples, evidence, "k_hop_expansion"))
        triples, evidence = await self.source.match(self.question, step_cap(1))
        if not triples:
            return Failure(
                ProviderError(
                    ErrorKind.invalid_request,
                    f"{self.source.path}: no node matches the question {self.question!r}",
                )
            )
        return Success((triples, evidence, "graphify_query+graph_read"))

    def record(
        self,
        step: int,
        triples: list[Triple],
        raw: str,
        answerable: bool,
        retrieval: dict[str, str],
    ) -> dict[str, Any]:
        """The trace's record of one judged hop."""
        record: dict[str, Any] = {
            "step": step,
            "query": self.question,
            "num_hops": (step - 1) * INCREMENT_HOP,
            "base_top_k": BASE_TOP_K,
            "retrieved_subgraph": [t.as_trace() for t in triples],
            "answerable": answerable,
            "judgement_raw": raw,
            "retrieval": retrieval,
        }
        missing = uncovered_terms(self.question, triples) if self.small and answerable else []
        if missing:
            # a small model says Yes to anything: a Yes counts only when the context at least
            # mentions every content term of the question (the code's check)
            answerable = False
            record["answerable"] = False
            record["judgement_check"] = f"not in the retrieved triples: {', '.join(missing)}"
        if missing or not re.search(r"<judge>\s*(yes|no)\s*</judge>", raw, re.IGNORECASE):
            # keep the model's words, but store the normalised tag the trace format requires
            record["judgement_raw"] = f"<judge>{'Yes' if answerable else 'No'}</judge>"
            record["judgement_model_output"] = raw
        return record


async def _full_tail(loop: _Loop) -> Result[LoopResult, ProviderError]:
    """Error abduction over the last HISTORY_HORIZON steps, then refinement actions on the
    last hop's triples (the skill's prompts, answered as text)."""
    adapter, settings, trace, steps = loop.adapter, loop.settings, loop.trace, loop.steps
    abduced = await _ask(
        adapter,
        ABDUCTION_SYSTEM,
        ABDUCTION_USER.format(interaction_history=format_history(loop.history[-HISTORY_HORIZON:])),
        settings.config("abduction", settings.abduction_max_tokens),
        _parse_abduction,
        ABDUCTION_RETRY,
        settings.retries,
    )
    if isinstance(abduced, Failure):
        return _stopped(abduced, trace, steps)
    raw_abduction, reason = abduced.unwrap()
    trace["error_abduction_raw"] = (
        raw_abduction if _ABDUCTION.search(raw_abduction) else f"<abduction>{reason}</abduction>"
    )
    trace["error_abduction_reason"] = reason
    last = steps[-1]

    def parse(text: str) -> Parsed | None:
        parsed = parse_refinement(text)
        return parsed if parsed.found else None

    refined = await _ask(
        adapter,
        REFINEMENT_SYSTEM,
        _refinement_user(await loop.source.source_hints(last), loop.question, last, reason),
        settings.config("refinement", settings.refinement_max_tokens),
        parse,
        REFINEMENT_RETRY,
        settings.retries,
    )
    if isinstance(refined, Failure):
        return _stopped(refined, trace, steps)
    raw_refinement, parsed = refined.unwrap()
    if extract_block(raw_refinement)[0] is None:
        # bare calls without a block: store them as a block so the file format holds
        raw_refinement = "<refinement>" + "|".join(str(i) for i in parsed.items) + "</refinement>"
    assert query_id(loop.question) == trace["query_id"]
    return Success(LoopResult(trace, False, raw_refinement, parsed, steps))


def _stopped(
    failed: Failure[ProviderError], trace: dict[str, Any], steps: list[list[Triple]]
) -> Result[LoopResult, ProviderError]:
    """A budget stop is a partial loop (the trace so far, `budget_reached` set), not a
    failure; any other failure stays one."""
    error = failed.failure()
    if error.kind is not ErrorKind.budget_exhausted:
        return failed
    limit = BudgetLimit.of(error)
    why = str(limit) if limit is not None else error.message
    trace["early_exit"] = False
    trace["budget_reached"] = why
    return Success(LoopResult(trace, False, steps=steps, budget_reached=why))


def _refinement_user(hints: str, question: str, last: list[Triple], reason: str) -> str:
    return REFINEMENT_USER.format(
        original_text=hints,
        triples_string=render_triples(last),
        question=question,
        error_reasons=reason,
    )


async def _small_tail(
    adapter: LLMAdapter,
    graph: Graph,
    question: str,
    trace: dict[str, Any],
    steps: list[list[Triple]],
    settings: LoopSettings,
) -> Result[LoopResult, ProviderError]:
    """Abduction and refinement by choice (`_small`): the skill's prompts plus a one-line
    hint, answered as JSON whose strings are enums of what was retrieved; the code writes
    the `<abduction>` sentence and the action file. The model's JSON is kept in the trace
    (`error_abduction_model_output`, `refinement_model_output`)."""
    history = trace["interaction_history"]
    choices = build_choices(graph, steps[:-1], steps[-1])
    if not choices.names:  # only docstrings (or unnameable nodes) were retrieved
        reason = "incompleteness: the retrieved subgraph holds no code entity"
        trace["error_abduction_raw"] = f"<abduction>{reason}</abduction>"
        trace["error_abduction_reason"] = reason
        trace["refinement_model_output"] = None
        empty = "<refinement></refinement>"
        return Success(LoopResult(trace, False, empty, parse_refinement(empty), steps))
    abduced = await _ask(
        adapter,
        ABDUCTION_SYSTEM,
        ABDUCTION_USER.format(interaction_history=format_history(history[-HISTORY_HORIZON:])),
        settings.config(
            "abduction", settings.abduction_max_tokens, output_schema=abduction_schema(choices)
        ),
        lambda text: parse_abduction_choice(text, choices),
        ABDUCTION_RETRY,
        settings.retries,
        hint=ABDUCTION_HINT,
    )
    if isinstance(abduced, Failure):
        return _stopped(abduced, trace, steps)
    model_abduction, reason = abduced.unwrap()
    trace["error_abduction_raw"] = f"<abduction>{reason}</abduction>"
    trace["error_abduction_reason"] = reason
    trace["error_abduction_model_output"] = model_abduction
    if choices.empty:  # every retrieved pair is linked and every link extracted
        trace["refinement_model_output"] = None
        empty = "<refinement></refinement>"
        return Success(LoopResult(trace, False, empty, parse_refinement(empty), steps))
    refined = await _ask(
        adapter,
        REFINEMENT_SYSTEM,
        _refinement_user(source_hints(graph, steps[-1]), question, steps[-1], reason),
        settings.config(
            "refinement",
            settings.refinement_max_tokens,
            output_schema=refinement_schema(choices),
        ),
        lambda text: parse_refinement_choice(text, choices),
        REFINEMENT_RETRY,
        settings.retries,
        hint=REFINEMENT_HINT.format(n=SMALL_MAX_ACTIONS),
    )
    if isinstance(refined, Failure):
        return _stopped(refined, trace, steps)
    model_refinement, text = refined.unwrap()
    trace["refinement_model_output"] = model_refinement
    return Success(LoopResult(trace, False, text, parse_refinement(text), steps))
