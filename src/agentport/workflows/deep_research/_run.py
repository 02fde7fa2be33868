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
from typing import Any, Generic, Literal, TypeVar

import anyio
from pydantic import BaseModel, ValidationError
from returns.result import Failure, Result

from ...catalog import get_capability
from ...core import (
    BackendKind,
    CompletionConfig,
    CompletionResponse,
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
from ._stats import Tallies

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
V = TypeVar("V")
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


class _Tally(Generic[V]):
    """A `Run` attribute that is the field of the same name of its `tallies`."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, run: Run, owner: type | None = None) -> V:
        value: V = getattr(run.tallies, self.name)
        return value

    def __set__(self, run: Run, value: V) -> None:
        setattr(run.tallies, self.name, value)


class Run:
    """State of one run: the one concurrency cap, counters (`tallies`), usage, failures,
    events."""

    calls_made = _Tally[int]()
    calls_cached = _Tally[int]()
    done = _Tally[int]()
    finished = _Tally[Counter[str]]()
    expected = _Tally[int]()
    in_flight = _Tally[int]()
    max_in_flight = _Tally[int]()
    web_searches = _Tally[int]()
    web_fetches = _Tally[int]()
    web_calls_answered = _Tally[int]()
    budget_refused = _Tally[int]()
    scored_votes = _Tally[int]()
    picks_scored = _Tally[int]()
    picks_moved = _Tally[int]()
    pick_calls = _Tally[int]()
    usage = _Tally[Usage]()
    failures = _Tally[list[tuple[str, ProviderError]]]()

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
        # every counter of the run, one typed object (`_stats.Tallies`); the attributes of
        # the same names below read and write it
        self.tallies = Tallies()
        self.warnings: dict[str, None] = {}
        # native web mode: the backend's own web tools, in _WEB_PHASES only;
        # agentport's own web tools (or a corpus) set it False: the model gets no web tools
        self.native_web = self.source is None
        # once a ceiling is reached no new call starts (`_budget`)
        self.budget = adapter if isinstance(adapter, BudgetAdapter) else None
        self.budget_reached: str | None = None
        # small-model mode: what the question asks (`_small_qa.Ask`), set by its scope phase
        self.ask: Ask | None = None
        # small-model mode: titles of the documents a follow-up round read for a bridge a
        # finding named: hops of the question's owner, as the scope's are (`Ask.hops`)
        self.followed: set[str] = set()
        # small-model mode: values a phase computes once per run (the votes' priors)
        self.memo: dict[str, Any] = {}
        # small-model mode on an embedded model, which reports each choice's likelihood:
        # the extract and synthesis picks are scored (`_small_votes.scored_items`)
        self.scores_choices = config.small_model and _is_local(adapter.backend)

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
        name = _schema_name(schema, choices)
        key = CallCache.key(phase, name + (f"#{attempt}" if attempt else ""), prompt)
        replayed = self._replay(phase, key, schema, choices, scores)
        if replayed is not None:
            return replayed
        call_config = self._call_config(phase, schema, choices, max_tokens)
        result = await self._send(phase, prompt, call_config, priority)
        if result is None:
            return None
        self.done += 1
        self.finished[phase] += 1
        if isinstance(result, Failure):
            self._failed(phase, result.failure())
            return None
        response = result.unwrap()
        self._account(response, call_config)
        value, detail = _parsed(response, schema, choices)
        if value is None:
            mismatch = ProviderError(ErrorKind.schema_mismatch, detail, raw_text=response.content)
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

    def _replay(
        self,
        phase: str,
        key: str,
        schema: type[BaseModel] | dict[str, Any] | None,
        choices: tuple[str, ...] | None,
        scores: dict[str, float] | None,
    ) -> Any | None:
        """The cached answer of this call, counted as a finished call; None: call again."""
        if self.cache is None or (entry := self.cache.get(key)) is None:
            return None
        replayed = _replayed(entry.get("parsed"), schema, choices)
        if replayed is None:
            return None
        if scores is not None:
            scores.update(_scores_of(entry.get("scores"), choices))
        self.calls_cached += 1
        self.done += 1
        self.finished[phase] += 1
        self.usage += Usage.model_validate(entry.get("usage") or {})
        self.emit("call_finished", phase, cached=True)
        return replayed

    def _call_config(
        self,
        phase: str,
        schema: type[BaseModel] | dict[str, Any] | None,
        choices: tuple[str, ...] | None,
        max_tokens: int | None,
    ) -> CompletionConfig:
        cap = max_tokens or self.config.max_tokens
        return CompletionConfig(
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

    async def _send(
        self, phase: str, prompt: str, call_config: CompletionConfig, priority: float
    ) -> Result[CompletionResponse, ProviderError] | None:
        """The backend's result, under the run's one cap; None: the budget refused it."""
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
                return await self.adapter.complete([Message.user(prompt)], call_config)
            finally:
                self.in_flight -= 1

    def _failed(self, phase: str, error: ProviderError) -> None:
        self.usage += error.usage  # a failed call's requests were spent too
        self.failures.append((phase, error))
        if error.kind is ErrorKind.budget_exhausted and self.budget_reached is None:
            limit = BudgetLimit.of(error)
            self.budget_reached = str(limit) if limit is not None else error.message
        self.emit("call_finished", phase, ok=False, message=str(error), raw=error.raw_text or "")

    def _account(self, response: CompletionResponse, call_config: CompletionConfig) -> None:
        """An answered call's usage, web tool use and warnings."""
        self.usage += response.usage
        web = response.raw.extra.get("web") or {}
        self.web_searches += len(web.get("searches", ()))
        self.web_fetches += len(web.get("fetches", ()))
        self.web_calls_answered += call_config.web_search
        for w in response.warnings:
            self.warn(w)

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


def _schema_name(
    schema: type[BaseModel] | dict[str, Any] | None, choices: tuple[str, ...] | None
) -> str:
    """The cache key's name of what a call asks for."""
    if isinstance(schema, dict):
        digest = hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()
        return "schema:" + digest[:16]
    if schema is not None:
        return schema.__name__
    return "choices:" + "|".join(choices or ())


def _parsed(
    response: CompletionResponse,
    schema: type[BaseModel] | dict[str, Any] | None,
    choices: tuple[str, ...] | None,
) -> tuple[Any | None, str]:
    """(the answer a call asked for, or None; why None)."""
    if choices is not None:
        return match_choice(response.content, choices), "no allowed answer"
    value = response.parsed
    if not isinstance(schema, type):
        return value, "no allowed answer"
    try:
        return (value if isinstance(value, schema) else schema.model_validate(value)), ""
    except ValidationError as exc:
        return None, str(exc).split("\n")[0]


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
    return base | run.tallies.snapshot().record(time.monotonic() - started)


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
