"""What a successful call returns."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from returns.result import Failure, Result, Success

from ._capabilities import Param, ParamSupport
from ._errors import ErrorKind, ProviderError, redact, redact_value
from ._usage import Usage

__all__ = [
    "BinaryInfo",
    "CompletionResponse",
    "ParamReceipt",
    "RawInfo",
    "SkippedBackend",
    "Usage",
]


class RawInfo(BaseModel):
    """Backend-specific facts kept for debugging and resume."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session_id: str | None = None
    exit_code: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("extra")
    @classmethod
    def _redacted(cls, value: dict[str, Any]) -> dict[str, Any]:
        return dict(redact_value(value))


class SkippedBackend(BaseModel):
    """A backend of a failover chain that did not give the answer.

    Attributes:
        backend: canonical backend name.
        kind: why: the `ErrorKind` of its failure (`unsupported` for a capability skip,
            `quota_exhausted` for a shared cooldown), or None for a hedge that lost the race.
        duration_s: wall-clock seconds spent on it (0 when it was not called).
        reason: one line (redacted).
        called: whether it was called at all.
        usage: what it spent, when it reported it (a cancelled hedge reports nothing).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    backend: str
    kind: ErrorKind | None
    duration_s: float = 0.0
    reason: str = ""
    called: bool = True
    usage: Usage | None = None

    @field_validator("reason")
    @classmethod
    def _redacted(cls, value: str) -> str:
        return redact(value)


class ParamReceipt(BaseModel):
    """How the answering backend treated one parameter the caller set: its
    catalog `ParamSupport` and the catalog's note."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    param: Param
    support: ParamSupport
    note: str = ""


class BinaryInfo(BaseModel):
    """The CLI executable that answered a call, as checked before the call.

    Attributes:
        path: the executable as found (on PATH, or `[llm.<backend>] executable`), absolute.
        chain: *path*, then each symbolic link's target in turn, the last the real file.
        real_path: the file that runs, every link resolved.
        sha256: hex digest of *real_path*'s bytes.
        version: the version its package declares (the `package.json` an npm CLI is installed
            from), or None when nothing beside it says.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    path: str
    chain: tuple[str, ...]
    real_path: str
    sha256: str
    version: str | None = None


class CompletionResponse(BaseModel):
    """A successful completion.

    Attributes:
        content: the final answer text (the JSON text when a schema was asked for).
        parsed: the validated object when `output_schema` was given (model instance or dict).
        model: the model that answered, when the backend says.
        usage: token counts and cost.
        finish_reason: e.g. "stop", "length", "tool_calls", when known.
        warnings: non-fatal notes (IGNORED parameters, backend warnings).
        backend: canonical backend name.
        duration_s: wall-clock seconds of the call.
        raw: session id, exit code and other backend facts.
        skipped: with a failover chain, each backend tried or passed over before the one
            that answered, in order (`SkippedBackend`).
        receipt: each parameter the call set and how `backend` treated it
            (NATIVE / TRANSLATED / IGNORED with the catalog's note), when known.
        binary: for a CLI backend, the executable that answered (`BinaryInfo`), else None.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    content: str
    parsed: Any = None
    model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    warnings: tuple[str, ...] = ()
    backend: str = ""
    duration_s: float = 0.0
    raw: RawInfo = Field(default_factory=RawInfo)
    skipped: tuple[SkippedBackend, ...] = ()
    receipt: tuple[ParamReceipt, ...] = ()
    binary: BinaryInfo | None = None

    @field_validator("warnings")
    @classmethod
    def _redacted(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(redact(w) for w in value)


def usage_of(result: Result[CompletionResponse, ProviderError]) -> Usage:
    """The usage a call's *result* reports: the response's, or what the failed call spent."""
    return result.unwrap().usage if isinstance(result, Success) else result.failure().usage


def with_usage(
    result: Result[CompletionResponse, ProviderError], usage: Usage
) -> Result[CompletionResponse, ProviderError]:
    """*result* reporting *usage* (e.g. every request a call made, not only its last)."""
    if isinstance(result, Success):
        return Success(result.unwrap().model_copy(update={"usage": usage}))
    return Failure(result.failure().replace(usage=usage))
