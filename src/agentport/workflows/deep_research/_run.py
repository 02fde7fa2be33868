"""One research run's call machinery: the single concurrency cap, the structured call with
cache replay, counters, usage, failures and progress events. Shared by the seed path
(`_pipeline`) and the small-model path (`_small`).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

import anyio
from pydantic import BaseModel, ValidationError
from returns.result import Failure

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
    Usage,
)
from ...policies import BudgetAdapter, BudgetLimit
from ...structured import match_choice
from ._cache import CallCache
from ._config import ResearchConfig
from ._corpus import Corpus
from ._corpus_source import CorpusSource, InMemoryCorpus
from ._limiter import PriorityLimiter
from ._report import ResearchEvent
from ._small_qa import Ask

__all__ = [
    "EventCallback",
    "Record",
    "Run",
    "cap",
    "check_web_search",
    "extra_stats",
    "gather",
    "research_config_for",
    "warnings_of",
]

EventCallback = Callable[[ResearchEvent], None]
EventKind = Literal["phase", "call_started", "call_finished", "note"]
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
Record = dict[str, Any]

# The phases whose agent gets its own web tools in native web mode: the seed's search and
# fetch prompts, and the verify prompt ("Search for contradicting evidence"); never scope or
# synthesis (least privilege).
_WEB_PHASES = frozenset({"search", "extract", "verify"})


def research_config_for(
    backend: str | None, *, small_model: bool | None = None, **overrides: Any
) -> ResearchConfig:
    """The research settings for *backend* (canonical name; None or an unknown name: not
    local), the rule `agentport research` and the MCP server's `research_start` share: an
    embedded model (catalog kind `local`) always gets the small-context caps, and
    small-model mode unless *small_model* is False, and one call in flight unless
    *overrides* say otherwise (its one model worker serves one call at a time); another
    backend gets small-model mode only when *small_model* is True. *overrides* are
    `ResearchConfig` fields."""
    try:
        local = backend is not None and get_capability(backend).kind is BackendKind.local
    except ProviderError:
        local = False
    small = local if small_model is None else small_model
    if local:
        # one model worker serves one call at a time: more calls in flight only queue on
        # it (and a queued call's deadline runs while it waits)
        overrides.setdefault("CONCURRENCY", 1)
    if small:
        return ResearchConfig.for_small_model(**overrides)
    if local:
        return ResearchConfig.for_small_model(small_model=False, **overrides)
    return ResearchConfig(**overrides)


def check_web_search(backend: str) -> str | None:
    """None when *backend*'s catalog entry says it can search the web, else the one-line
    reason to refuse web mode (suggesting `--corpus`)."""
    try:
        support = get_capability(backend).support(Param.web_search)
    except ProviderError:
        return (
            f"backend {backend!r} is not in the catalog, so its web tools are unknown; "
            "research a local folder with --corpus DIR (corpus=...)"
        )
    if support is ParamSupport.IGNORED:
        return (
            f"backend {backend!r} cannot search the web (catalog: web_search IGNORED); "
            "research a local folder with --corpus DIR (corpus=...)"
        )
    return None


async def gather(fns: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run *fns* concurrently; results in input order (anyio has no gather)."""
    out: list[Any] = [None] * len(fns)

    async def run(i: int, fn: Callable[[], Awaitable[T]]) -> None:
        out[i] = await fn()

    async with anyio.create_task_group() as tg:
        for i, fn in enumerate(fns):
            tg.start_soon(run, i, fn)
    return out


def cap(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1].rstrip() + "…"


class Run:
    """State of one run: the one concurrency cap, counters, usage, failures, events."""

    def __init__(
        self,
        adapter: LLMAdapter,
        config: ResearchConfig,
        corpus: Corpus | CorpusSource | None,
        on_event: EventCallback | None,
        cache: CallCache | None,
    ) -> None:
        self.adapter = adapter
        self.config = config
        # small-model mode reads the loaded corpus itself; corpus mode reads any source
        self.corpus = corpus if isinstance(corpus, Corpus) else None
        self.source: CorpusSource | None = (
            InMemoryCorpus(corpus) if isinstance(corpus, Corpus) else corpus
        )
        self.on_event = on_event
        self.cache = cache
        # Small-model mode decodes greedily where the backend takes a temperature: its
        # answers are choices, so sampling only adds noise (and makes runs irreproducible).
        self.greedy = config.small_model and _takes_temperature(adapter.backend)
        # ONE cap over every agent call of every phase (the original's single semaphore)
        self.limiter = PriorityLimiter(config.CONCURRENCY)
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls_made = 0
        self.calls_cached = 0
        self.done = 0
        self.finished: Counter[str] = Counter()
        self.expected = 0
        self.usage = Usage()
        self.failures: list[tuple[str, ProviderError]] = []
        self.warnings: dict[str, None] = {}
        # native web mode: the backend's own web tools, in _WEB_PHASES only;
        # agentport's own web tools (or a corpus) set it False: the model gets no web tools
        self.native_web = self.source is None
        self.web_searches = 0
        self.web_fetches = 0
        self.web_calls_answered = 0  # answered calls that were given web tools
        # once a ceiling is reached no new call starts (`_budget`)
        self.budget = adapter if isinstance(adapter, BudgetAdapter) else None
        self.budget_reached: str | None = None
        self.budget_refused = 0
        # small-model mode: what the question asks (`_small_qa.Ask`), set by its scope phase
        self.ask: Ask | None = None
        # small-model mode: values a phase computes once per run (the votes' priors)
        self.memo: dict[str, Any] = {}
        self.scored_votes = 0  # votes the backend's likelihoods decided (`_small_votes`)
        # small-model mode on an embedded model, which reports each choice's likelihood:
        # the extract and synthesis picks are scored (`_small_votes.scored_items`);
        # `picks_scored` counts them, `picks_moved` those where the model changed the
        # code's first choice
        self.scores_choices = config.small_model and _is_local(adapter.backend)
        self.picks_scored = 0
        self.picks_moved = 0
        self.pick_calls = 0  # scoring's calls beyond one per pick: second orders, priors

    def emit(self, kind: EventKind, phase: str, **fields: Any) -> None:
        if self.on_event is not None:
            self.on_event(
                ResearchEvent(kind, phase, done=self.done, expected=self.expected, **fields)
            )

    def warn(self, message: str) -> None:
        self.warnings[message] = None

    async def agent(
        self,
        phase: str,
        prompt: str,
        schema: type[M],
        *,
        priority: float = 0.0,
        attempt: int = 0,
    ) -> M | None:
        """One structured call: a validated *schema* instance, or None when it failed (a
        failure is recorded and reported; the caller treats None as the original's null)."""
        value = await self.call(phase, prompt, schema=schema, priority=priority, attempt=attempt)
        if value is None or isinstance(value, schema):
            return value
        try:
            return schema.model_validate(value)
        except ValidationError as exc:
            mismatch = ProviderError(ErrorKind.schema_mismatch, str(exc).split("\n")[0])
            self.failures.append((phase, mismatch))
            return None

    async def call(
        self,
        phase: str,
        prompt: str,
        *,
        schema: type[BaseModel] | dict[str, Any] | None = None,
        choices: tuple[str, ...] | None = None,
        priority: float = 0.0,
        attempt: int = 0,
        max_tokens: int | None = None,
        scores: dict[str, float] | None = None,
    ) -> Any | None:
        """One constrained call: the parsed answer (a model instance for a model class, a
        dict for a JSON-schema dict, the chosen string for *choices*), or None when it failed
        (recorded in `failures`; the event carries the raw answer for `--debug`).

        *attempt* > 0 is a deliberate retry: it is cached under its own key, so a resumed
        run does not replay the answer that was rejected. *scores*, with *choices*, receives
        the log-likelihood of each choice when the backend reports them (the embedded
        model's `raw.extra["choice_logprobs"]`); it stays empty otherwise."""
        if isinstance(schema, dict):
            name = (
                "schema:"
                + hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:16]
            )
        elif schema is not None:
            name = schema.__name__
        else:
            name = "choices:" + "|".join(choices or ())
        key = CallCache.key(phase, name + (f"#{attempt}" if attempt else ""), prompt)
        if self.cache is not None and (entry := self.cache.get(key)) is not None:
            replayed = _replayed(entry.get("parsed"), schema, choices)
            if replayed is not None:
                if scores is not None:
                    scores.update(_scores_of(entry.get("scores"), choices))
                self.calls_cached += 1
                self.done += 1
                self.finished[phase] += 1
                self.usage += Usage.model_validate(entry.get("usage") or {})
                self.emit("call_finished", phase, cached=True)
                return replayed
        cap = max_tokens or self.config.max_tokens
        call_config = CompletionConfig(
            output_schema=schema,
            choices=choices,
            label=phase,
            schema_retries=self.config.schema_retries,
            web_search=self.native_web and phase in _WEB_PHASES,
            tools=ToolPolicy.none(),  # no shell, no writes, no network
            # unset (not None) leaves the configured llm.max_tokens in force
            **({"max_tokens": cap} if cap is not None else {}),
            **({"temperature": 0.0} if self.greedy else {}),
        )
        async with self.limiter.slot(priority):
            if self.budget is not None and (why := self.budget.reached()) is not None:
                self.budget_reached = self.budget_reached or why
                self.budget_refused += 1
                self.emit("note", phase, ok=False, message=f"budget reached ({why}): not called")
                return None
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.calls_made += 1
            self.emit("call_started", phase)
            try:
                result = await self.adapter.complete([Message.user(prompt)], call_config)
            finally:
                self.in_flight -= 1
        self.done += 1
        self.finished[phase] += 1
        if isinstance(result, Failure):
            error = result.failure()
            self.usage += error.usage  # a failed call's requests were spent too
            self.failures.append((phase, error))
            if error.kind is ErrorKind.budget_exhausted and self.budget_reached is None:
                limit = BudgetLimit.of(error)
                self.budget_reached = str(limit) if limit is not None else error.message
            self.emit(
                "call_finished", phase, ok=False, message=str(error), raw=error.raw_text or ""
            )
            return None
        response = result.unwrap()
        self.usage += response.usage
        web = response.raw.extra.get("web") or {}
        self.web_searches += len(web.get("searches", ()))
        self.web_fetches += len(web.get("fetches", ()))
        self.web_calls_answered += call_config.web_search
        for w in response.warnings:
            self.warn(w)
        detail = "no allowed answer"
        value: Any
        if choices is not None:
            value = match_choice(response.content, choices)
        else:
            value = response.parsed
            if isinstance(schema, type):
                try:
                    value = value if isinstance(value, schema) else schema.model_validate(value)
                except ValidationError as exc:
                    value = None
                    detail = str(exc).split("\n")[0]
        if value is None:
            mismatch = ProviderError(
                ErrorKind.schema_mismatch,
                detail,
                raw_text=response.content,
            )
            self.failures.append((phase, mismatch))
            self.emit(
                "call_finished",
                phase,
                ok=False,
                message="answer does not match schema",
                raw=response.content,
            )
            return None
        likelihoods = _scores_of(response.raw.extra.get("choice_logprobs"), choices)
        if scores is not None:
            scores.update(likelihoods)
        if self.cache is not None:
            dumped = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
            self.cache.put(
                key,
                {
                    "label": phase,
                    "schema": name,
                    "parsed": dumped,
                    "usage": response.usage.model_dump(mode="json"),
                    "scores": likelihoods,
                },
            )
        self.emit("call_finished", phase, raw=response.content)
        return value

    def last_error(self, phase: str) -> str:
        for p, err in reversed(self.failures):
            if p == phase:
                return str(err)
        return "no answer"


def _is_local(backend: str) -> bool:
    try:
        return get_capability(backend).kind is BackendKind.local
    except ProviderError:
        return False


def _takes_temperature(backend: str) -> bool:
    try:
        return get_capability(backend).support(Param.temperature) is not ParamSupport.IGNORED
    except ProviderError:
        return False


def _scores_of(raw: Any, choices: tuple[str, ...] | None) -> dict[str, float]:
    """The log-likelihood of every choice from a backend's report, or {} when it is not
    one finite number per choice."""
    if choices is None or not isinstance(raw, dict):
        return {}
    try:
        found = {c: float(raw[c]) for c in choices}
    except (KeyError, TypeError, ValueError):
        return {}
    return found if all(math.isfinite(v) for v in found.values()) else {}


def _replayed(
    parsed: Any, schema: type[BaseModel] | dict[str, Any] | None, choices: tuple[str, ...] | None
) -> Any | None:
    """A cached answer, re-checked against what the call asks for (None = call again)."""
    if choices is not None:
        return parsed if parsed in choices else None
    if isinstance(schema, type):
        try:
            return schema.model_validate(parsed)
        except ValidationError:
            return None
    return parsed if isinstance(parsed, dict) else None


def extra_stats(run: Run, base: Record, started: float) -> Record:
    """agentport's additions: measured calls, usage and cost, failures by kind."""
    kinds = Counter(err.kind.value for _, err in run.failures)
    return base | {
        "agentCallsMade": run.calls_made,
        # of those, the calls scoring the extract and synthesis picks made beyond one a pick
        # (the reversed order, the content-free priors): not in the seed's formula
        "agentCallsScoringPicks": run.pick_calls,
        "agentCallsCached": run.calls_cached,
        "agentCallsFailed": len(run.failures),
        "failuresByKind": dict(sorted(kinds.items())),
        "maxInFlight": run.max_in_flight,
        "webSearches": run.web_searches,
        "webFetches": run.web_fetches,
        "inputTokens": run.usage.input_tokens,
        "outputTokens": run.usage.output_tokens,
        "cachedTokens": run.usage.cached_tokens,
        "costUsd": run.usage.cost_usd,
        # priced, lower_bound (some calls had no price) or unpriced; None: no call reported
        "costState": None if run.usage.cost_state is None else run.usage.cost_state.value,
        "billingRoute": None if run.usage.billing_route is None else run.usage.billing_route.value,
        "durationS": round(time.monotonic() - started, 3),
    }


def warnings_of(run: Run) -> list[str]:
    out = list(run.warnings)
    # the seed's acceptance asks that web search really ran; a test double scripting web
    # results (assume_web_tools) reports none
    silent = run.web_calls_answered and not (run.web_searches or run.web_fetches)
    if silent and not run.config.assume_web_tools:
        out.append(
            f"web mode: none of the {run.web_calls_answered} answers given web tools "
            "reported a web search or page fetch; the sources may not come from the web "
            "(check the backend's model and web tools)"
        )
    if run.failures:
        kinds = Counter(err.kind.value for _, err in run.failures)
        detail = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
        out.append(
            f"{len(run.failures)} agent call(s) failed ({detail}); last: {run.failures[-1][1]}"
        )
    return out
