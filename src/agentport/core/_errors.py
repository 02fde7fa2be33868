"""Typed failures: every expected failure of a backend is a `ProviderError` value.

```
Exception
└── ProviderError            kind: ErrorKind, retryable, backend, redacted details,
                             attempts: tuple[Attempt, ...] (the policy layer's history)
    kinds: not_installed · auth_required · rate_limited(retry_after) · timeout(which)
           quota_exhausted(retry_at, window: an exhausted usage window, core._quota)
           budget_exhausted (the caller's own ceiling, policies.BudgetAdapter)
           context_length · invalid_request · bad_output · schema_mismatch(raw_text)
           process_failed(exit_code, stderr_tail) · server_error · overloaded · network
           content_filter (a refusal or a safety block) · model_not_found · unsupported
           config · binary_changed (the CLI executable changed under a running batch)
           runaway (the same failure repeated past a bound: details["loop"])
           permission_denied (the caller's approval hook stopped the run)
           session_not_found (a resume the backend cannot honour)
           interrupted (the caller's interrupt() ended a runtime's turn)
```

Every error also says whether the request reached the provider (`request_sent`: False,
True or None for "cannot tell") and whether part of the answer had streamed already
(`mid_stream`): what a caller needs to decide whether a retry may repeat work.

A `ProviderError` is an immutable value, redacted (`core._redact`) on every path that
builds one: the constructor, `replace` and the helpers on it, `copy` and `pickle` all go
through `_clean`. Adapters return `Failure(ProviderError)`; only setup code (factory,
config) raises it.
Cancellation is never converted into a `ProviderError`: it propagates.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NoReturn, get_args

from ._redact import (
    SECRET_NAME,
    redact,
    redact_value,
    register_secret,
    secret_values,
)
from ._redact import _registered as _registered  # kept for tests that unregister a value
from ._usage import Usage
from ._wait import wait_seconds

__all__ = [
    "SECRET_NAME",
    "Attempt",
    "ErrorKind",
    "ProviderError",
    "TimeoutWhich",
    "redact",
    "redact_value",
    "register_secret",
    "secret_values",
]

# startup / idle: the backend's silence limits; attempt: `attempt_timeout_s`;
# total: the whole call's deadline (`total_timeout_s`)
TimeoutWhich = Literal["startup", "idle", "attempt", "total"]


class ErrorKind(enum.StrEnum):
    """Why a call failed. Classified by exit code / HTTP status first, message text second."""

    not_installed = "not_installed"
    auth_required = "auth_required"
    rate_limited = "rate_limited"
    quota_exhausted = "quota_exhausted"
    budget_exhausted = "budget_exhausted"
    timeout = "timeout"
    context_length = "context_length"
    invalid_request = "invalid_request"
    bad_output = "bad_output"
    schema_mismatch = "schema_mismatch"
    process_failed = "process_failed"
    server_error = "server_error"
    #: the provider is over capacity (HTTP 529, Anthropic `overloaded_error`, "overloaded")
    overloaded = "overloaded"
    network = "network"
    #: the model refused, or a safety / content filter blocked the answer (finish_reason
    #: `content_filter`, a `refusal` stop, gemini "blocked due to safety settings")
    content_filter = "content_filter"
    #: the backend does not know the requested model (OpenAI `model_not_found`, ...)
    model_not_found = "model_not_found"
    unsupported = "unsupported"
    config = "config"
    #: the CLI executable changed since this process first called it (another file, or the
    #: same file with other bytes): never a silent switch mid-batch
    #: (`[llm.<backend>] on_binary_change = "reverify"` accepts the new one instead)
    binary_changed = "binary_changed"
    #: the same failure (kind, backend, input) repeated past a bound across retries,
    #: failover and a workflow's loop; `details["loop"]` names it (policies.RunawayAdapter)
    runaway = "runaway"
    #: the run stopped because a tool call was denied (the caller's approval hook, its
    #: deadline, or the call's `ToolPolicy` under a hook); docs/approvals.md
    permission_denied = "permission_denied"
    #: a session to resume (`CompletionConfig.session_id`) that the backend does not have:
    #: it said so, or it reported a different session than the one asked for (a silent new
    #: session); `details`: `session_id` (asked), `started` (the one it reported, if any)
    session_not_found = "session_not_found"
    #: the caller ended the turn (`interrupt()` on a runtime): not a failure of the backend;
    #: the session stays resumable
    interrupted = "interrupted"


_RETRYABLE_BY_DEFAULT = frozenset(
    {
        ErrorKind.rate_limited,
        ErrorKind.server_error,
        ErrorKind.overloaded,
        ErrorKind.network,
        ErrorKind.timeout,
    }
)

# kinds that only a reply of the provider produces: the request reached it
_SENT_BY_KIND = frozenset(
    {
        ErrorKind.rate_limited,
        ErrorKind.quota_exhausted,
        ErrorKind.bad_output,
        ErrorKind.schema_mismatch,
        ErrorKind.server_error,
        ErrorKind.overloaded,
        ErrorKind.content_filter,
        ErrorKind.model_not_found,
        ErrorKind.permission_denied,  # the model asked for the tool: its request was sent
    }
)
# kinds agentport decides before it sends anything
_UNSENT_BY_KIND = frozenset(
    {
        ErrorKind.not_installed,
        ErrorKind.budget_exhausted,
        ErrorKind.unsupported,
        ErrorKind.config,
        ErrorKind.binary_changed,
        ErrorKind.runaway,
    }
)


def _checked_wait(retry_after: float | None) -> float | None:
    """The `retry_after` an error may carry: a finite wait, `0 <= s <= MAX_WAIT_S`; anything
    else (NaN, infinity, negative, huge) is absent (`core._wait`), so no sleep on it can raise
    and no caller waits on garbage."""
    return None if retry_after is None else wait_seconds(retry_after)


def _retryable_by_default(kind: ErrorKind, timeout: TimeoutWhich | None) -> bool:
    """A `timeout` is retryable unless it is the whole call's deadline (`total`): the time is
    spent, another attempt could only start after it."""
    return kind in _RETRYABLE_BY_DEFAULT and not (kind is ErrorKind.timeout and timeout == "total")


def _sent_by_default(kind: ErrorKind, status: int | None) -> bool | None:
    if status is not None or kind in _SENT_BY_KIND:
        return True
    return False if kind in _UNSENT_BY_KIND else None


@dataclass(frozen=True, slots=True)
class Attempt:
    """One failed attempt of a call, as the policy layer saw it (`ProviderError.attempts`).

    Attributes:
        kind: how it failed.
        duration_s: wall-clock seconds the attempt took (back-off waits excluded).
        exit_code: the CLI's exit code, or None (HTTP backends, killed before exit).
        backend: canonical backend name.
        timeout: which limit fired when `kind` is `timeout`, else None.
    """

    kind: ErrorKind
    duration_s: float
    exit_code: int | None = None
    backend: str = ""
    timeout: TimeoutWhich | None = None


_TIMEOUTS: frozenset[str] = frozenset(get_args(TimeoutWhich))


def _read_only(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError("a ProviderError is immutable: build a changed copy with error.replace(...)")


class _FrozenDict(dict[Any, Any]):
    """A dict that refuses changes: `ProviderError.details` and the mappings inside it.
    A plain `dict` to everything that reads it (`json`, `==`, `{**d}`, `dict(d)`)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))


class _FrozenList(list[Any]):
    """A list that refuses changes (lists inside `ProviderError.details`)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))


def _frozen(value: Any) -> Any:
    """*value* (already redacted) with every dict and list inside made read-only."""
    if isinstance(value, Mapping):
        return _FrozenDict((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, list):
        return _FrozenList(_frozen(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _text(value: object) -> str:
    return redact(value if isinstance(value, str) else str(value))


def _attempt(attempt: Attempt) -> Attempt:
    backend = _text(attempt.backend)
    return attempt if backend == attempt.backend else dataclasses.replace(attempt, backend=backend)


def _clean(
    kind: ErrorKind | str,
    message: str,
    *,
    backend: str = "",
    retryable: bool | None = None,
    retry_after: float | None = None,
    timeout: TimeoutWhich | None = None,
    exit_code: int | None = None,
    status: int | None = None,
    stderr_tail: str = "",
    raw_text: str | None = None,
    details: Mapping[str, Any] | None = None,
    attempts: Sequence[Attempt] = (),
    retry_at: datetime | None = None,
    window: str | None = None,
    request_sent: bool | None = None,
    mid_stream: bool = False,
    usage: Usage | None = None,
    derive_sent: bool = True,
) -> dict[str, Any]:
    """The one gate of a `ProviderError`'s fields: the constructor, `replace`, `copy` and
    `pickle` all build through it, so every text field is redacted on every path (redaction
    is idempotent: a copy of a redacted error is unchanged). *derive_sent*: a None
    `request_sent` means "derive it from the kind" (the constructor) rather than "cannot
    tell" (a copy)."""
    kind = ErrorKind(kind)
    if timeout is not None and timeout not in _TIMEOUTS:
        raise ValueError(f"timeout must be one of {sorted(_TIMEOUTS)}, got {_text(timeout)!r}")
    if retry_at is not None and retry_at.tzinfo is None:
        raise ValueError("retry_at must be an aware datetime")
    return {
        "kind": kind,
        "message": _text(message),
        "backend": _text(backend),
        "retryable": (
            _retryable_by_default(kind, timeout) if retryable is None else bool(retryable)
        ),
        "retry_after": _checked_wait(retry_after),
        "timeout": timeout,
        "exit_code": exit_code,
        "status": status,
        "stderr_tail": _text(stderr_tail),
        "raw_text": _text(raw_text) if raw_text is not None else None,
        "details": _frozen(redact_value(dict(details or {}))),
        "attempts": tuple(_attempt(a) for a in attempts),
        "retry_at": retry_at,
        "window": _text(window) if window is not None else None,
        "request_sent": (
            True
            if mid_stream
            else _sent_by_default(kind, status)
            if request_sent is None and derive_sent
            else request_sent
        ),
        "mid_stream": bool(mid_stream),
        "usage": usage if usage is not None else Usage(),
    }


_FIELDS: tuple[str, ...] = tuple(
    p for p in inspect.signature(_clean).parameters if p != "derive_sent"
)
# what Python itself sets on a raised exception (`raise ... from`, tracebacks, `add_note`)
_PYTHON_OWNED = frozenset(
    {"__traceback__", "__cause__", "__context__", "__suppress_context__", "__notes__"}
)


def _rebuild(cls: type[ProviderError], fields: dict[str, Any]) -> ProviderError:
    """A copy of an error from its *fields* (`replace`, `copy`, `pickle`)."""
    error = Exception.__new__(cls)
    error._assign(_clean(**fields, derive_sent=False))
    return error


class ProviderError(Exception):
    """A classified backend failure: an immutable value (assigning an attribute raises
    `dataclasses.FrozenInstanceError`; `details` refuses changes too). Every field is
    redacted on every path that builds one: the constructor, `replace` and the helpers built
    on it, `copy.copy` and `pickle`.

    Attributes:
        kind: the `ErrorKind`.
        message: one line for humans (secrets redacted).
        backend: canonical backend name, or "" when not tied to one.
        retryable: whether the retry policy may try again (default: rate_limited,
            server_error, overloaded, network and timeout are retryable; a `total` timeout,
            the whole call's deadline, is not).
        retry_after: seconds the backend asked us to wait (rate limits), or None; always a
            finite `0 <= s <= MAX_WAIT_S` (31 days): any other value given is dropped (None).
        timeout: which timeout fired (`startup`, `idle`, `attempt`, `total`) for
            `ErrorKind.timeout`; any other value is a `ValueError`.
        exit_code: the process exit code (CLI backends), or None.
        status: the HTTP status, or None.
        stderr_tail: the last bytes of stderr, decoded and redacted.
        raw_text: the model's raw answer for `schema_mismatch` / `bad_output`.
        details: extra redacted facts for diagnostics (a read-only mapping).
        attempts: the attempts the policy layer made before giving up (oldest first; empty
            when the adapter was called without it), see `Attempt`.
        retry_at: for `quota_exhausted`, when the usage window resets (aware datetime, else
            `ValueError`), or None when the backend did not say; never retried before it.
        window: for `quota_exhausted`, which window ("session", "weekly", "daily", ...) when
            the message says.
        request_sent: whether the request reached the provider, so it may have been billed
            or acted on: True (an HTTP status, a provider's own error, output seen), False
            (refused before sending: config, not_installed, unsupported, budget_exhausted, a
            connection that never opened, a deadline spent before the attempt) or None (cannot
            tell, e.g. a CLI that died silently). Derived from `kind` and `status` unless given.
        mid_stream: part of the answer (text, reasoning, a tool call) had arrived before the
            failure; it implies `request_sent`.
        usage: what the failed call spent: every request it made that reported usage (a
            re-ask before a `schema_mismatch`, a failed attempt, a CLI's usage line before it
            failed); zero when none did. Budgets count it.
    """

    kind: ErrorKind
    message: str
    backend: str
    retryable: bool
    retry_after: float | None
    timeout: TimeoutWhich | None
    exit_code: int | None
    status: int | None
    stderr_tail: str
    raw_text: str | None
    details: Mapping[str, Any]
    attempts: tuple[Attempt, ...]
    retry_at: datetime | None
    window: str | None
    request_sent: bool | None
    mid_stream: bool
    usage: Usage

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        backend: str = "",
        retryable: bool | None = None,
        retry_after: float | None = None,
        timeout: TimeoutWhich | None = None,
        exit_code: int | None = None,
        status: int | None = None,
        stderr_tail: str = "",
        raw_text: str | None = None,
        details: Mapping[str, Any] | None = None,
        attempts: Sequence[Attempt] = (),
        retry_at: datetime | None = None,
        window: str | None = None,
        request_sent: bool | None = None,
        mid_stream: bool = False,
        usage: Usage | None = None,
    ) -> None:
        fields = _clean(
            kind,
            message,
            backend=backend,
            retryable=retryable,
            retry_after=retry_after,
            timeout=timeout,
            exit_code=exit_code,
            status=status,
            stderr_tail=stderr_tail,
            raw_text=raw_text,
            details=details,
            attempts=attempts,
            retry_at=retry_at,
            window=window,
            request_sent=request_sent,
            mid_stream=mid_stream,
            usage=usage,
        )
        self._assign(fields)

    def _assign(self, fields: dict[str, Any]) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        Exception.__init__(self, fields["message"])

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PYTHON_OWNED:
            object.__setattr__(self, name, value)
            return
        raise dataclasses.FrozenInstanceError(
            f"cannot assign to field {name!r}: a ProviderError is immutable; "
            "build a changed copy with error.replace(...)"
        )

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        # copy.copy, copy.deepcopy and pickle rebuild through the constructor (redacted)
        return (_rebuild, (type(self), self._fields()))

    def _fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}

    def __str__(self) -> str:
        where = f"{self.backend}: " if self.backend else ""
        extra = []
        if self.timeout:
            extra.append(f"{self.timeout} timeout")
        if self.status is not None:
            extra.append(f"HTTP {self.status}")
        if self.exit_code is not None:
            extra.append(f"exit {self.exit_code}")
        if self.retry_at is not None:
            extra.append(f"resets {self.retry_at.isoformat(timespec='minutes')}")
        elif self.retry_after is not None:
            extra.append(f"retry after {self.retry_after:g}s")
        if len(self.attempts) > 1:
            extra.append(f"{len(self.attempts)} attempts")
        suffix = f" ({', '.join(extra)})" if extra else ""
        return f"{where}{self.kind.value}: {self.message}{suffix}"

    def __repr__(self) -> str:
        return f"ProviderError({self.kind.value!r}, {self.message!r}, backend={self.backend!r})"

    def replace(self, **changes: Any) -> ProviderError:
        """A copy with the attributes in *changes* replaced (e.g. `attempts=...`), built and
        redacted like a new error; `TypeError` for a name that is not an attribute."""
        unknown = set(changes) - set(_FIELDS)
        if unknown:
            raise TypeError(f"ProviderError has no attribute(s) {sorted(unknown)}")
        return _rebuild(type(self), self._fields() | changes)

    def sent(self, request_sent: bool | None, *, mid_stream: bool = False) -> ProviderError:
        """This error with what the transport saw: *request_sent* where the error itself
        could not tell (None) or where the transport knows it never left (False); *mid_stream*
        when part of the answer had arrived. A copy; the error's own True stays."""
        sent = True if self.request_sent or mid_stream else request_sent
        if sent == self.request_sent and mid_stream == self.mid_stream:
            return self
        return self.replace(request_sent=sent, mid_stream=self.mid_stream or mid_stream)

    def reached_by(self, errors: Iterable[ProviderError]) -> ProviderError:
        """This error as the end of a call that made *errors* (every failed attempt, this
        one included): `request_sent` is True when any of them reached the provider, None
        when any could not tell, else False; `mid_stream` stays this error's own. A copy."""
        sent: bool | None = False
        for error in errors:
            if error.request_sent:
                sent = True
                break
            if error.request_sent is None:
                sent = None
        return self if sent == self.request_sent else self.replace(request_sent=sent)

    def with_backend(self, backend: str) -> ProviderError:
        """This error with *backend* set when it had none (a copy; else this error)."""
        return self if self.backend else self.replace(backend=backend)
