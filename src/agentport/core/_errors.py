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
           config
```

Every error also says whether the request reached the provider (`request_sent`: False,
True or None for "cannot tell") and whether part of the answer had streamed already
(`mid_stream`): what a caller needs to decide whether a retry may repeat work.

Adapters return `Failure(ProviderError)`; only setup code (factory, config) raises it.
Cancellation is never converted into a `ProviderError`: it propagates.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ._usage import Usage
from ._wait import wait_seconds

__all__ = [
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
    }
)
# kinds agentport decides before it sends anything
_UNSENT_BY_KIND = frozenset(
    {ErrorKind.not_installed, ErrorKind.budget_exhausted, ErrorKind.unsupported, ErrorKind.config}
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


# Token shapes. A leading \b keeps ordinary words ("desk-management") intact; the prefixes
# are those the vendors document (OpenAI/Anthropic sk-, GitHub ghp_/gho_/ghu_/ghs_/ghr_ and
# github_pat_, AWS access key ids AKIA/ASIA, Slack xox?-/xapp-, Hugging Face hf_, Google AIza).
_SHAPES: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}"), lambda m: f"{m.group(1)}-***"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), "AIza***"),
    (re.compile(r"\b(gh[pousr])_[A-Za-z0-9]{16,}"), lambda m: f"{m.group(1)}_***"),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{16,}"), "github_pat_***"),
    (re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), lambda m: f"{m.group(1)}***"),
    (re.compile(r"\b(xox[abposr]|xapp)-[A-Za-z0-9\-]{8,}"), lambda m: f"{m.group(1)}-***"),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), "hf_***"),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}"), "jwt-***"),
    (re.compile(r"(?i)(://)[^/\s:@]+:[^/\s@]+@"), lambda m: f"{m.group(1)}***:***@"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/\-]{8,}=*"), lambda m: f"{m.group(1)} ***"),
    (
        re.compile(
            r"(?i)\b((?:api[_-]?key|token|secret|password|passwd|authorization)[\"']?\s*[:=]\s*"
            r"[\"']?)[^\s\"',}]{4,}"
        ),
        lambda m: f"{m.group(1)}***",
    ),
)

# Environment variable names whose values are secrets wherever they appear.
SECRET_NAME = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|COOKIE|_PAT\b)")
_MIN_LITERAL = 8  # shorter values ("1", "true", a user name) would mask ordinary text
_registered: set[str] = set()
_literal_cache: tuple[frozenset[str], re.Pattern[str] | None] = (frozenset(), None)
_environ_cache: tuple[dict[Any, Any], frozenset[str]] | None = None


def register_secret(*values: str | None) -> None:
    """Redact these literal values (configured API keys, tokens) from now on, anywhere.
    Values shorter than 8 characters are not registered."""
    _registered.update(v for v in values if isinstance(v, str) and len(v) >= _MIN_LITERAL)


def secret_values(environ: Mapping[str, str]) -> set[str]:
    """Values of *environ* whose names look secret (`*KEY*`, `*TOKEN*`, `*SECRET*`,
    `*PASSWORD*`, ...), at least 8 characters long."""
    return {v for k, v in environ.items() if len(v) >= _MIN_LITERAL and SECRET_NAME.search(k)}


def _environ_secrets() -> frozenset[str]:
    """`secret_values(os.environ)`, scanned again only when the environment changed: CPython
    keeps it encoded in `os.environ._data`, which compares with a copy at C speed (a scan
    decodes every name and value; redaction runs several times per response)."""
    global _environ_cache
    import os  # the environment is read, never written: redaction stays pure otherwise

    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict):
        if _environ_cache is not None and _environ_cache[0] == data:
            return _environ_cache[1]
        values = frozenset(secret_values(os.environ))
        _environ_cache = (dict(data), values)
        return values
    return frozenset(secret_values(os.environ))


def _literals() -> re.Pattern[str] | None:
    global _literal_cache
    current = _environ_secrets() | _registered
    if current != _literal_cache[0]:
        ordered = sorted(current, key=len, reverse=True)  # longest first: no partial masks
        pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        _literal_cache = (current, pattern)
    return _literal_cache[1]


def redact(text: str) -> str:
    """Mask secrets in *text*: registered keys and secret-named environment values
    literally (as `***`), then known token shapes (OpenAI/Anthropic `sk-`, GitHub, AWS
    access key ids, Slack, Hugging Face, Google, JWTs, `user:pass@` in URLs, bearer/basic
    credentials, `key=value` secrets). Idempotent: `redact(redact(t)) == redact(t)`."""
    literal = _literals()
    out = literal.sub("***", text) if literal is not None else text
    for pattern, replacement in _SHAPES:
        out = pattern.sub(replacement, out)
    return out


def redact_value(value: Any, depth: int = 0) -> Any:
    """`redact` applied to every string inside nested dicts, lists and tuples (keys too);
    nesting past 32 levels is replaced by `"..."`."""
    if isinstance(value, str):
        return redact(value)
    if depth >= 32 and isinstance(value, (Mapping, list, tuple)):
        return "..."
    if isinstance(value, Mapping):
        return {
            (redact(k) if isinstance(k, str) else k): redact_value(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v, depth + 1) for v in value)
    return value


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


class ProviderError(Exception):
    """A classified backend failure.

    Attributes:
        kind: the `ErrorKind`.
        message: one line for humans (secrets redacted).
        backend: canonical backend name, or "" when not tied to one.
        retryable: whether the retry policy may try again (default: rate_limited,
            server_error, overloaded, network and timeout are retryable; a `total` timeout,
            the whole call's deadline, is not).
        retry_after: seconds the backend asked us to wait (rate limits), or None; always a
            finite `0 <= s <= MAX_WAIT_S` (31 days): any other value given is dropped (None).
        timeout: which timeout fired (`startup`, `idle`, `total`) for `ErrorKind.timeout`.
        exit_code: the process exit code (CLI backends), or None.
        status: the HTTP status, or None.
        stderr_tail: the last bytes of stderr, decoded and redacted.
        raw_text: the model's raw answer for `schema_mismatch` / `bad_output`.
        details: extra redacted facts for diagnostics.
        attempts: the attempts the policy layer made before giving up (oldest first; empty
            when the adapter was called without it), see `Attempt`.
        retry_at: for `quota_exhausted`, when the usage window resets (aware datetime), or
            None when the backend did not say; never retried before it.
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
        self.kind = ErrorKind(kind)
        self.message = redact(message)
        self.backend = backend
        self.retryable = (
            _retryable_by_default(self.kind, timeout) if retryable is None else retryable
        )
        self.retry_after = _checked_wait(retry_after)
        self.timeout = timeout
        self.exit_code = exit_code
        self.status = status
        self.stderr_tail = redact(stderr_tail)
        self.raw_text = redact(raw_text) if raw_text is not None else None
        self.details = redact_value(dict(details or {}))
        self.attempts = tuple(attempts)
        if retry_at is not None and retry_at.tzinfo is None:
            raise ValueError("retry_at must be an aware datetime")
        self.retry_at = retry_at
        self.window = window
        self.mid_stream = mid_stream
        self.usage = usage if usage is not None else Usage()
        self.request_sent = (
            True
            if mid_stream
            else _sent_by_default(self.kind, status)
            if request_sent is None
            else request_sent
        )
        super().__init__(self.message)

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
        """A copy with the attributes in *changes* replaced (e.g. `attempts=...`); the values
        are taken as given (pass already-redacted text)."""
        unknown = set(changes) - set(vars(self))
        if unknown:
            raise TypeError(f"ProviderError has no attribute(s) {sorted(unknown)}")
        clone = Exception.__new__(type(self))
        clone.__dict__.update(vars(self) | changes)
        clone.retry_after = _checked_wait(clone.retry_after)
        if clone.mid_stream:
            clone.request_sent = True
        clone.args = self.args
        return clone

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
        """Return this error with *backend* set when it had none."""
        if not self.backend:
            self.backend = backend
        return self
