"""agentport's own web tools on Temporal: `search` and `fetch` as activities, and the `OwnWeb`
a research workflow injects into `run_research` so that each search and each page fetch of a
backend without web tools (`_web_own`, docs/web.md) runs on a worker, never in workflow code.

- `web_search` (`agentport.web.search`): one engine query (`provider_from_settings`), the
  hits as data; an engine failure is a value (`SearchOutput.error`), which the pipeline turns
  into a warning and no results, as in-process.
- `web_fetch` (`agentport.web.fetch`): one URL through the `Fetcher` (robots.txt, size, time
  and content-type limits, re-checked redirects, no private addresses unless allowed, DNS
  pinning); the page's text capped at `max_page_chars` so a workflow's history stays small;
  a refusal is a value (`FetchOutput.refused`).
- `activity_web`: workflow side, the `OwnWeb` whose provider and fetcher run those two
  activities (ids `<workflow id>.search.<n>` / `<workflow id>.fetch.<n>` in call order).
  A finished search or fetch is in the workflow's history: a worker that dies and a workflow
  that is replayed never fetch a finished page again.

Task queue `<prefix>.web` (`web_queue`), not the backend's: a backend's queue is a promise
that its CLI and login are on the machine and its cap counts model calls (2 per agent CLI),
while a fetch needs only network egress and the `web` extra and should not hold a model
slot while a slow host answers; not the workflows' queue either, so the machines that reach
the web (or its proxy) can be chosen apart from those that see the reports folder. Every
worker that runs the workflows serves it by default when the `web` extra is installed
(`agentport worker --web/--no-web`). One `Fetcher` per settings per worker process keeps
per-host concurrency, delay and robots.txt answers across the fetches it runs (renewed every
10 minutes).

Settings: the client's `[web]` table travels in the workflow input (`web_input`), never read
by workflow code; `proxy` is left out (its credentials would be stored in the history, and
the egress is the worker's): a worker searches and fetches with its own `[web]` settings,
which the sent table (`WebRequest`, a closed type) may only narrow (docs/deployment.md).
"""

# No `from __future__ import annotations`: Temporal's converter resolves these dataclasses'
# hints inside the workflow sandbox (see `_data`).
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Any, TypeVar

import anyio
from pydantic import Field, ValidationError
from temporalio import activity, workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import CancelledError as TemporalCancelledError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from ..core import ProviderError
from ..web import (
    FetchedPage,
    Fetcher,
    FetchRefused,
    FetchResult,
    SearchError,
    SearchHit,
    WebSettings,
    narrow_web,
    provider_from_settings,
    without_secrets,
)
from ..workflows.deep_research import OwnWeb, no_engine_message
from ._data import failure_line
from ._inputs import Closed, Label, WebRequest, parse, wire

__all__ = [
    "WEB_ACTIVITIES",
    "WEB_CONCURRENCY",
    "WEB_FETCH_ACTIVITY",
    "WEB_SEARCH_ACTIVITY",
    "FetchInput",
    "FetchOutput",
    "SearchInput",
    "SearchOutput",
    "activity_web",
    "close_fetchers",
    "web_fetch",
    "web_input",
    "web_queue",
    "web_search",
]

WEB_SEARCH_ACTIVITY = "agentport.web.search"
WEB_FETCH_ACTIVITY = "agentport.web.fetch"
#: searches and fetches one worker runs at once (per-host limits still apply per host)
WEB_CONCURRENCY = 16

_SLACK = timedelta(seconds=30)  # start_to_close = the step's own deadline + this
# No web worker for this long: the step ends as a refusal naming the queue, not a hang.
_SCHEDULE_TO_START = timedelta(minutes=10)
# A step that raised (a bug, a dead worker) is tried three times, then is a refusal.
_RETRY = RetryPolicy(maximum_attempts=3)
_FETCHER_MAX_AGE_S = 600.0  # robots.txt answers and per-host state are renewed this often
_FETCHERS_MAX = 16
_MAX_HEARTBEAT_EVERY_S = 5.0

T = TypeVar("T")


def web_queue(prefix: str = "agentport") -> str:
    """The task queue of the `search` and `fetch` activities: `"<prefix>.web"`."""
    return f"{prefix}.web"


def web_input(settings: WebSettings) -> dict[str, Any]:
    """The `[web]` table as workflow input (`ResearchJob.web`, `BatchJob.web`): no proxy, no
    credentials in the engine URL (history is readable by every client of the namespace).
    The worker searches and fetches with its own settings, which this may only narrow."""
    return without_secrets(settings)


# -- what crosses the wire ------------------------------------------------------------------
class SearchInput(Closed):
    """One engine query: `settings` is `web_input(...)`, `limit` the hits asked for."""

    settings: WebRequest = WebRequest()
    query: Annotated[str, Field(max_length=4096)]
    limit: Annotated[int, Field(ge=1, le=100)]
    call_id: Label = ""


@dataclass(frozen=True)
class SearchOutput:
    """The hits (`{"url", "title", "snippet"}`), or the engine's failure: `engine` and the
    one-line `error` of its `SearchError`."""

    hits: list[dict[str, str]] = field(default_factory=list)
    engine: str = ""
    error: str | None = None


class FetchInput(Closed):
    """One page: `settings` is `web_input(...)`; the worker's fetcher decides whether the
    URL may be fetched (scheme, public address, robots.txt)."""

    settings: WebRequest = WebRequest()
    url: Annotated[str, Field(max_length=8192)]
    call_id: Label = ""


@dataclass(frozen=True)
class FetchOutput:
    """Exactly one of `page` (the `FetchedPage` fields, text capped) and `refused`
    (`{"url", "kind", "reason"}` of a `FetchRefused`)."""

    page: dict[str, Any] | None = None
    refused: dict[str, str] | None = None

    @classmethod
    def of(cls, got: FetchResult, max_chars: int) -> "FetchOutput":
        if isinstance(got, FetchRefused):
            return cls(refused={"url": got.url, "kind": got.kind, "reason": got.reason})
        return cls(
            page={
                "url": got.url,
                "final_url": got.final_url,
                "title": got.title,
                "text": got.text[:max_chars],
                "content_type": got.content_type,
                "encoding": got.encoding,
                "redirects": list(got.redirects),
            }
        )

    def result(self, url: str) -> FetchResult:
        """The `FetchedPage` or `FetchRefused` again (a malformed output is a refusal)."""
        if self.page is not None:
            p = self.page
            return FetchedPage(
                url=str(p.get("url") or url),
                final_url=str(p.get("final_url") or url),
                title=str(p.get("title") or ""),
                text=str(p.get("text") or ""),
                content_type=str(p.get("content_type") or ""),
                encoding=str(p.get("encoding") or ""),
                redirects=tuple(str(r) for r in p.get("redirects") or ()),
            )
        r = self.refused or {}
        kind: Any = r.get("kind") or "network"
        return FetchRefused(str(r.get("url") or url), kind, str(r.get("reason") or "no answer"))


# -- worker side ----------------------------------------------------------------------------
@functools.cache
def _worker_web() -> WebSettings:
    from ..config import load_settings

    return load_settings().web


def _settings(sent: WebRequest) -> WebSettings:
    """This worker's own `[web]` settings, narrowed by the sent table (`narrow_web`: any
    client of the namespace writes workflow input, so it never chooses the engine URL, the
    proxy or `allow_private`); a bad worker configuration is a non-retryable
    `ApplicationError` (one line)."""
    try:
        own = _worker_web()
    except ProviderError as exc:
        raise ApplicationError(
            f"the worker's configuration is invalid: {exc.message}",
            type="agentport.web.config",
            non_retryable=True,
        ) from None
    return narrow_web(own, sent.sent())


_FETCHERS: dict[WebSettings, tuple[float, Fetcher]] = {}


def _fetcher(settings: WebSettings) -> Fetcher:
    """This process's `Fetcher` for *settings*, new after `_FETCHER_MAX_AGE_S`. A replaced
    one is not closed (another fetch may still use it); its connections go with it."""
    now = time.monotonic()
    held = _FETCHERS.get(settings)
    if held is None or now - held[0] > _FETCHER_MAX_AGE_S:
        _FETCHERS.pop(settings, None)
        while len(_FETCHERS) >= _FETCHERS_MAX:
            _FETCHERS.pop(next(iter(_FETCHERS)))
        held = _FETCHERS[settings] = (now, Fetcher(settings))
    return held[1]


async def close_fetchers() -> None:
    """Close this process's fetchers (the worker calls it when it stops)."""
    held = list(_FETCHERS.values())
    _FETCHERS.clear()
    for _, fetcher in held:
        await fetcher.aclose()


async def _beating(step: Awaitable[T], call_id: str) -> T:
    """Await *step* while heartbeating, so a dead worker's step moves on after the
    heartbeat timeout."""
    timeout = activity.info().heartbeat_timeout
    period = (
        max(0.1, min(_MAX_HEARTBEAT_EVERY_S, timeout.total_seconds() / 3))
        if timeout
        else _MAX_HEARTBEAT_EVERY_S
    )

    async def beat() -> None:
        while True:
            activity.heartbeat(call_id)
            await anyio.sleep(period)

    async with anyio.create_task_group() as group:
        group.start_soon(beat)
        result = await step
        group.cancel_scope.cancel()
    return result


@activity.defn(name=WEB_SEARCH_ACTIVITY)
async def web_search(raw: RawValue) -> SearchOutput:
    """One query to this worker's engine (`data.settings` only narrows its limits): the
    hits, or the engine's failure as a value. Raises a non-retryable `ApplicationError`
    for input that is not a `SearchInput` or unusable settings."""
    data = parse(SearchInput, raw, "web search")
    settings = _settings(data.settings)
    provider = provider_from_settings(settings)
    if provider is None:
        return SearchOutput(engine="none", error="no search engine is configured ([web])")
    try:
        hits = await _beating(provider.search(data.query, max(1, data.limit)), data.call_id)
    except SearchError as exc:
        message = str(exc).removeprefix(f"search engine {exc.engine}: ")
        return SearchOutput(engine=exc.engine, error=message)
    return SearchOutput(
        hits=[{"url": h.url, "title": h.title, "snippet": h.snippet} for h in hits],
        engine=provider.name,
    )


@activity.defn(name=WEB_FETCH_ACTIVITY)
async def web_fetch(raw: RawValue) -> FetchOutput:
    """One page through this worker's `Fetcher` (`data.settings` only narrows its limits):
    the page (text capped at `max_page_chars`) or the refusal, as a value. Raises a
    non-retryable `ApplicationError` for input that is not a `FetchInput` or unusable
    settings."""
    data = parse(FetchInput, raw, "web fetch")
    settings = _settings(data.settings)
    got = await _beating(_fetcher(settings).fetch(data.url), data.call_id)
    return FetchOutput.of(got, settings.max_page_chars)


#: the activities a worker registers on `web_queue(prefix)`
WEB_ACTIVITIES: list[Callable[..., Any]] = [web_search, web_fetch]


# -- workflow side --------------------------------------------------------------------------
class _Steps:
    """Runs the web activities from workflow code with deterministic ids."""

    def __init__(
        self, settings: WebSettings, prefix: str, id_prefix: str, heartbeat_s: float
    ) -> None:
        self.sent = WebRequest.model_validate(web_input(settings))
        self.settings = settings
        self.queue = web_queue(prefix)
        self.id_prefix = id_prefix
        self.heartbeat = timedelta(seconds=heartbeat_s)
        self.calls = 0

    def next_id(self, kind: str) -> str:
        self.calls += 1
        return f"{self.id_prefix}.{kind}.{self.calls}"

    async def run(self, name: str, data: Any, deadline_s: float, result_type: type[T]) -> T:
        out: T = await workflow.execute_activity(
            name,
            wire(data),
            task_queue=self.queue,
            activity_id=data.call_id,
            result_type=result_type,
            schedule_to_start_timeout=_SCHEDULE_TO_START,
            start_to_close_timeout=timedelta(seconds=deadline_s) + _SLACK,
            heartbeat_timeout=self.heartbeat,
            retry_policy=_RETRY,
        )
        return out

    def why(self, exc: ActivityError) -> tuple[str, str]:
        """(refusal kind, one-line reason) of a step that failed on every attempt."""
        cause = exc.cause
        if isinstance(cause, TemporalCancelledError):
            raise exc  # the workflow is being cancelled: not a refusal
        if isinstance(cause, TemporalTimeoutError):
            what = cause.type.name.lower() if cause.type else "unknown"
            if "schedule_to_start" in what:
                return "timeout", f"no worker took it from task queue {self.queue} in time"
            return "timeout", f"the activity timed out ({what}) on every attempt"
        return "network", failure_line(exc)


class _ActivitySearch:
    """A `SearchProvider` whose `search` is the `web_search` activity."""

    def __init__(self, steps: _Steps, name: str) -> None:
        self.name = name
        self._steps = steps

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        s = self._steps
        data = SearchInput(
            settings=s.sent, query=query, limit=max(1, min(limit, 100)), call_id=s.next_id("search")
        )
        try:
            out = await s.run(WEB_SEARCH_ACTIVITY, data, s.settings.search_timeout_s, SearchOutput)
        except ActivityError as exc:
            raise SearchError(self.name, s.why(exc)[1]) from None
        if out.error is not None:
            raise SearchError(out.engine or self.name, out.error)
        return [SearchHit(h["url"], h.get("title", ""), h.get("snippet", "")) for h in out.hits]


class _ActivityFetcher:
    """A `PageFetcher` whose `fetch` is the `web_fetch` activity."""

    def __init__(self, steps: _Steps) -> None:
        self._steps = steps

    async def fetch(self, url: str) -> FetchResult:
        s = self._steps
        data = FetchInput(settings=s.sent, url=url, call_id=s.next_id("fetch"))
        try:
            out = await s.run(WEB_FETCH_ACTIVITY, data, s.settings.timeout_s, FetchOutput)
        except ActivityError as exc:
            kind, reason = s.why(exc)
            return FetchRefused(url, "timeout" if kind == "timeout" else "network", reason)
        return out.result(url)

    async def aclose(self) -> None:
        return None


def activity_web(
    sent: WebRequest | dict[str, Any],
    refusal: str,
    prefix: str,
    id_prefix: str,
    heartbeat_s: float = 30.0,
) -> OwnWeb | str:
    """Workflow code: agentport's own web tools for a backend the catalog refuses
    (*refusal*), searching and fetching through the activities on `web_queue(prefix)`; or
    the one line why they cannot stand in (no engine in *sent*, an invalid table). *sent* is
    the job's `web` (`web_input`); *id_prefix* the workflow id; *heartbeat_s* the silence
    after which a dead worker's step moves to another worker. Pure: no I/O."""
    try:
        request = sent if isinstance(sent, WebRequest) else WebRequest.model_validate(sent)
        settings = WebSettings.model_validate(request.sent())
    except ValidationError as exc:
        return f"[web] settings in the workflow input are invalid: {str(exc).splitlines()[0]}"
    provider = provider_from_settings(settings)
    if provider is None:
        return no_engine_message(refusal)
    steps = _Steps(settings, prefix, id_prefix, heartbeat_s)
    return OwnWeb(settings, _ActivitySearch(steps, provider.name), _ActivityFetcher(steps))
