"""What a successful call returns."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CompletionResponse", "RawInfo", "Usage"]


class Usage(BaseModel):
    """Token counts (0 when the backend does not report them) and cost in USD when known."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost_usd is None and other.cost_usd is None
            else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        )
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost_usd=cost,
        )


class RawInfo(BaseModel):
    """Backend-specific facts kept for debugging and resume."""

    model_config = ConfigDict(frozen=True)

    session_id: str | None = None
    exit_code: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


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
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    content: str
    parsed: Any = None
    model: str | None = None
    usage: Usage = Usage()
    finish_reason: str | None = None
    warnings: tuple[str, ...] = ()
    backend: str = ""
    duration_s: float = 0.0
    raw: RawInfo = RawInfo()
