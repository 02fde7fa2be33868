"""Typed failures: every expected failure of a backend is a `ProviderError` value.

```
Exception
└── ProviderError            kind: ErrorKind, retryable, backend, redacted details
    kinds: not_installed · auth_required · rate_limited(retry_after) · timeout(which)
           context_length · invalid_request · bad_output · schema_mismatch(raw_text)
           process_failed(exit_code, stderr_tail) · server_error · network
           unsupported · config
```

Adapters return `Failure(ProviderError)`; only setup code (factory, config) raises it.
Cancellation is never converted into a `ProviderError`: it propagates.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["ErrorKind", "ProviderError", "TimeoutWhich", "redact"]

TimeoutWhich = Literal["startup", "idle", "total"]


class ErrorKind(enum.StrEnum):
    """Why a call failed. Classified by exit code / HTTP status first, message text second."""

    not_installed = "not_installed"
    auth_required = "auth_required"
    rate_limited = "rate_limited"
    timeout = "timeout"
    context_length = "context_length"
    invalid_request = "invalid_request"
    bad_output = "bad_output"
    schema_mismatch = "schema_mismatch"
    process_failed = "process_failed"
    server_error = "server_error"
    network = "network"
    unsupported = "unsupported"
    config = "config"


_RETRYABLE_BY_DEFAULT = frozenset(
    {ErrorKind.rate_limited, ErrorKind.server_error, ErrorKind.network, ErrorKind.timeout}
)

_SECRET_PATTERNS = (
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._\-]{8,}"),
    re.compile(
        r"(?i)\b((?:api[_-]?key|token|secret|password|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{4,}"
    ),
)


def redact(text: str) -> str:
    """Mask API keys, bearer tokens and `key=value` secrets in *text*."""
    out = _SECRET_PATTERNS[0].sub(lambda m: f"{m.group(1)}-***", text)
    out = _SECRET_PATTERNS[1].sub("AIza***", out)
    out = _SECRET_PATTERNS[2].sub(lambda m: f"{m.group(1)} ***", out)
    return _SECRET_PATTERNS[3].sub(lambda m: f"{m.group(1)}***", out)


class ProviderError(Exception):
    """A classified backend failure.

    Attributes:
        kind: the `ErrorKind`.
        message: one line for humans (secrets redacted).
        backend: canonical backend name, or "" when not tied to one.
        retryable: whether the retry policy may try again (default: rate_limited,
            server_error, network and timeout are retryable).
        retry_after: seconds the backend asked us to wait (rate limits), or None.
        timeout: which timeout fired (`startup`, `idle`, `total`) for `ErrorKind.timeout`.
        exit_code: the process exit code (CLI backends), or None.
        status: the HTTP status, or None.
        stderr_tail: the last bytes of stderr, decoded and redacted.
        raw_text: the model's raw answer for `schema_mismatch` / `bad_output`.
        details: extra redacted facts for diagnostics.
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
    ) -> None:
        self.kind = ErrorKind(kind)
        self.message = redact(message)
        self.backend = backend
        self.retryable = self.kind in _RETRYABLE_BY_DEFAULT if retryable is None else retryable
        self.retry_after = retry_after
        self.timeout = timeout
        self.exit_code = exit_code
        self.status = status
        self.stderr_tail = redact(stderr_tail)
        self.raw_text = raw_text
        self.details = {
            k: redact(v) if isinstance(v, str) else v for k, v in (details or {}).items()
        }
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
        if self.retry_after is not None:
            extra.append(f"retry after {self.retry_after:g}s")
        suffix = f" ({', '.join(extra)})" if extra else ""
        return f"{where}{self.kind.value}: {self.message}{suffix}"

    def __repr__(self) -> str:
        return f"ProviderError({self.kind.value!r}, {self.message!r}, backend={self.backend!r})"

    def with_backend(self, backend: str) -> ProviderError:
        """Return this error with *backend* set when it had none."""
        if not self.backend:
            self.backend = backend
        return self
