"""The `complete` activity: any `complete()` call run on a worker, the `Result` back as data.

Retries belong to Temporal here, and only there: the worker's adapter makes one attempt
(`retry_attempts=1`, the policy layer still merges settings, bounds the call by its deadline
and honours the shared cooldown store), and a failure `retry_decision` says to retry is raised
as a retryable `ApplicationError` whose `next_retry_delay` is the error's `retry_after`
(rate limit) or its `retry_at` (an exhausted usage window), so Temporal waits no less than
the backend asked. Every other failure is returned as a value: a non-retryable kind is
never retried. `execute_complete` (workflow side) turns retries that ran out back into the
typed failure value, so workflow code only ever sees `CompleteOutput`.

While the call runs the activity heartbeats (every third of `heartbeat_timeout`, at most
5 s), so when a worker dies (SIGKILL, a lost machine) Temporal sees the silence after
`heartbeat_timeout` and hands the call to another worker of the same queue; the finished
calls of a workflow are in its history and are never made again.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
from pydantic import ValidationError
from returns.result import Failure, Result
from temporalio import activity, workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from ..core import CompletionConfig, CompletionResponse, ErrorKind, Message, ProviderError
from ._data import (
    CallConfig,
    CallSettings,
    CompleteInput,
    CompleteOutput,
    error_to_dict,
    messages_to_dicts,
    retry_decision,
)
from ._inputs import REFUSED_INPUT, one_line, parse, wire
from ._queues import DEFAULT_PREFIX, _canonical, queue_for, workflow_queue
from ._semaphore import cluster_cap_for, cluster_permit

__all__ = [
    "COMPLETE_ACTIVITY",
    "DEFAULT_HEARTBEAT_TIMEOUT",
    "DEFAULT_RETRY_POLICY",
    "ERROR_TYPE_PREFIX",
    "complete",
    "execute_complete",
]

COMPLETE_ACTIVITY = "agentport.complete"
ERROR_TYPE_PREFIX = "agentport."  # ApplicationError.type = "agentport.<ErrorKind>"

# A dead worker's call moves to another worker after this much silence.
DEFAULT_HEARTBEAT_TIMEOUT = timedelta(seconds=30)
_MAX_HEARTBEAT_EVERY_S = 5.0
# Temporal's default blob limit is 2 MiB per payload; the rest is the envelope's headroom
MAX_RESULT_BYTES = 1_800_000

# Back-off for retryable failures that name no time (server_error, network, attempt
# timeouts); a rate limit's retry_after / a window's retry_at replace the interval.
DEFAULT_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=5,
)

_START_SLACK_S = 60.0  # start_to_close = the call's deadline + this


def _heartbeat_every(timeout: timedelta | None) -> float:
    if not timeout:
        return _MAX_HEARTBEAT_EVERY_S
    return max(0.1, min(_MAX_HEARTBEAT_EVERY_S, timeout.total_seconds() / 3))


async def _heartbeat(period: float, call_id: str) -> None:
    while True:
        activity.heartbeat(call_id)
        await anyio.sleep(period)


_SERVED: frozenset[str] | None = None


def serve_only(backends: Iterable[str] | None) -> None:
    """The backends this process's `complete` activity runs (each queue's backend or chain,
    `a+b` for a chain); set by `run_worker`. None = any (an embedding that registers the
    activity itself decides)."""
    global _SERVED
    _SERVED = None if backends is None else frozenset(m for b in backends for m in b.split("+"))


def _refused(data: CompleteInput) -> ProviderError | None:
    """Why this worker will not run *data* (any client of the namespace writes activity
    input): a backend it does not serve, or a model that names a file here."""
    if _SERVED is not None:
        try:
            members = set(_canonical(data.backend))
        except ProviderError as exc:
            return exc.with_backend(data.backend)
        if not members <= _SERVED:
            return ProviderError(
                ErrorKind.config,
                f"this worker does not serve backend {data.backend!r} (it serves "
                f"{', '.join(sorted(_SERVED))})",
                backend=data.backend,
                retryable=False,
            )
    for model in (data.settings.model, data.config.model):
        if model is not None and os.path.lexists(model):  # the local backend reads a path
            return ProviderError(
                ErrorKind.config,
                "the call's model names a file on the worker: a request names a model; "
                "files come from the worker's own configuration (docs/deployment.md)",
                backend=data.backend,
                retryable=False,
            )
    return None


def effective_call(
    data: CompleteInput, own: CompletionConfig
) -> tuple[list[Message], CompletionConfig, dict[str, Any]]:
    """What the worker runs for *data*: the messages, the call's `CompletionConfig`
    (`CallConfig.narrowed` by the worker's own defaults *own*) and the `[llm]` overrides
    for its adapter (the model named, one attempt: Temporal retries)."""
    overrides: dict[str, Any] = {"retry_attempts": 1}
    if data.settings.model is not None:
        overrides["model"] = data.settings.model
    return data.parsed_messages(), data.config.narrowed(own), overrides


async def _call(data: CompleteInput) -> Result[CompletionResponse, ProviderError]:
    from ..config import load_settings
    from ..factory import create_llm_adapter

    try:
        own = load_settings(backend=data.backend).llm.completion_config()
        messages, config, overrides = effective_call(data, own)
        adapter = create_llm_adapter(data.backend, **overrides)
    except ProviderError as exc:  # setup problems are values too (config, not_installed)
        return Failure(exc.with_backend(data.backend))
    return await adapter.complete(messages, config)


@activity.defn(name=COMPLETE_ACTIVITY)
async def complete(raw: RawValue) -> CompleteOutput:
    """One `complete()` call on this worker: `CompleteOutput` (the `Result` as data), or a
    retryable `ApplicationError(type="agentport.<kind>", details=[error dict],
    next_retry_delay=...)` for the failures `retry_decision` retries. Heartbeats while the
    call runs. Input that is not a `CompleteInput`, names a backend this worker does not
    serve or a model that is a file here is a non-retryable `ApplicationError`
    (`REFUSED_INPUT`, the `config` error dict as details)."""
    data = parse(CompleteInput, raw, "complete")
    refused = _refused(data)
    if refused is not None:
        raise ApplicationError(
            str(refused), error_to_dict(refused), type=REFUSED_INPUT, non_retryable=True
        )
    period = _heartbeat_every(activity.info().heartbeat_timeout)
    async with anyio.create_task_group() as group:
        group.start_soon(_heartbeat, period, data.call_id)
        result = await _call(data)
        group.cancel_scope.cancel()
    if isinstance(result, Failure):
        error = result.failure()
        retry, delay = retry_decision(error, datetime.now(UTC))
        if retry:
            raise ApplicationError(
                str(error),
                error_to_dict(error),
                type=ERROR_TYPE_PREFIX + error.kind.value,
                non_retryable=False,
                next_retry_delay=delay,
            )
    return _within_payload_limit(CompleteOutput.of(result), data.backend)


def _within_payload_limit(output: CompleteOutput, backend: str) -> CompleteOutput:
    """*output*, or a typed `bad_output` failure (a value: never retried) when its JSON is
    over `MAX_RESULT_BYTES`: Temporal refuses a payload over 2 MiB (TMPRL1103), and the
    refusal fails the activity untyped after every retry."""
    size = len(json.dumps(dataclasses.asdict(output), ensure_ascii=False).encode("utf-8"))
    if size <= MAX_RESULT_BYTES:
        return output
    error = ProviderError(
        ErrorKind.bad_output,
        f"the answer is {size} bytes, over the {MAX_RESULT_BYTES} a Temporal payload may "
        "carry; ask for less (max_tokens, a narrower question)",
        backend=backend,
        retryable=False,
    )
    return CompleteOutput(error=error_to_dict(error))


def _deadline_s(config: CompletionConfig | None) -> float:
    if config is not None and "total_timeout_s" in config.model_fields_set:
        return config.total_timeout_s
    return CompletionConfig().total_timeout_s


async def execute_complete(
    backend: str,
    messages: Sequence[Message] | Sequence[dict[str, Any]],
    config: CompletionConfig | None = None,
    *,
    call_id: str,
    settings: Mapping[str, Any] | None = None,
    prefix: str = DEFAULT_PREFIX,
    retry_policy: RetryPolicy | None = None,
    heartbeat_timeout: timedelta = DEFAULT_HEARTBEAT_TIMEOUT,
    start_to_close_timeout: timedelta | None = None,
    cluster_concurrency: Mapping[str, int] | None = None,
) -> CompleteOutput:
    """Workflow code: run `complete` on *backend*'s task queue (`queue_for(backend,
    prefix)`) and return its `CompleteOutput`; never raises for a typed failure.

    *call_id* must be deterministic and unique within the workflow run (it is the
    activity id). *settings* may name the worker adapter's `model` (`CallSettings`); a
    *config* that sets tools, `cwd` or `session_id` is `unsupported` without a call:
    a worker runs what its own configuration says.
    `start_to_close_timeout` defaults to the config's `total_timeout_s` (else the default
    1800 s) + 60 s. When Temporal's retries run out the last typed failure comes back as
    `CompleteOutput(error=...)`; an activity that timed out (start-to-close, heartbeat)
    on every attempt is `ErrorKind.timeout`. Cancellation and untyped activity failures
    (bugs) propagate as Temporal's `ActivityError`.

    *cluster_concurrency* (`[temporal] cluster_concurrency`, passed as workflow input):
    when it names *backend*, the call first waits for one of that many cluster-wide
    permits of the backend's queue and gives it back when the activity ends, also on
    failure or cancellation (`_semaphore`: a semaphore workflow per queue).
    """
    try:  # exactly the closed type the worker parses (`_inputs`)
        data = CompleteInput(
            backend=backend,
            messages=messages_to_dicts(messages),
            config=CallConfig.of(config),
            settings=CallSettings.model_validate(dict(settings or {})),
            call_id=call_id,
        )
    except ProviderError as exc:
        return CompleteOutput(error=error_to_dict(exc.with_backend(backend)))
    except ValidationError as exc:
        error = ProviderError(ErrorKind.invalid_request, f"bad call: {one_line(exc)}")
        return CompleteOutput(error=error_to_dict(error.with_backend(backend)))
    timeout = start_to_close_timeout or timedelta(seconds=_deadline_s(config) + _START_SLACK_S)
    queue = queue_for(backend, prefix)
    cap = cluster_cap_for(backend, cluster_concurrency)
    if cap is None:
        return await _execute(data, backend, queue, retry_policy, timeout, heartbeat_timeout)
    # one of the backend's cluster-wide permits around the call
    async with cluster_permit(queue, cap, call_id, workflow_task_queue=workflow_queue(prefix)):
        return await _execute(data, backend, queue, retry_policy, timeout, heartbeat_timeout)


async def _execute(
    data: CompleteInput,
    backend: str,
    queue: str,
    retry_policy: RetryPolicy | None,
    start_to_close: timedelta,
    heartbeat_timeout: timedelta,
) -> CompleteOutput:
    try:
        output: CompleteOutput = await workflow.execute_activity(
            COMPLETE_ACTIVITY,
            wire(data),
            result_type=CompleteOutput,
            task_queue=queue,
            activity_id=data.call_id or None,
            retry_policy=retry_policy or DEFAULT_RETRY_POLICY,
            start_to_close_timeout=start_to_close,
            heartbeat_timeout=heartbeat_timeout,
        )
        return output
    except ActivityError as exc:
        error = _error_of(exc.cause, backend)
        if error is None:  # not a typed failure: a bug in the activity fails the workflow
            raise
        return CompleteOutput(error=error)


def _error_of(cause: BaseException | None, backend: str) -> dict[str, Any] | None:
    if (
        isinstance(cause, ApplicationError)
        and (cause.type or "").startswith(ERROR_TYPE_PREFIX)
        and cause.details
        and isinstance(cause.details[0], dict)
    ):
        return dict(cause.details[0])
    if isinstance(cause, TemporalTimeoutError):
        return error_to_dict(
            ProviderError(
                ErrorKind.timeout,
                f"the activity timed out ({cause.type.name.lower() if cause.type else 'unknown'})"
                " on every attempt",
                backend=backend,
                retryable=False,
                timeout="total",
            )
        )
    return None
