"""Pure checks shared by every adapter."""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Failure, Result, Success

from ._capabilities import BackendCapability, Param, ParamSupport
from ._config import CompletionConfig
from ._errors import ErrorKind, ProviderError
from ._messages import Message, MessageRole

__all__ = ["check_params"]


def check_params(
    capability: BackendCapability, messages: Sequence[Message], config: CompletionConfig
) -> Result[tuple[str, ...], ProviderError]:
    """Apply the caller's `on_ignored` policy to the parameters this call sets.

    Returns `Success(warnings)` (one line per IGNORED parameter under `warn`), or
    `Failure(ErrorKind.unsupported)` naming them under `fail`. Source: DESIGN.md, capabilities.
    A call with no user or assistant message (nothing to answer) is
    `Failure(ErrorKind.invalid_request)`.
    """
    if not any(m.role is not MessageRole.system and m.content.strip() for m in messages):
        return Failure(
            ProviderError(
                ErrorKind.invalid_request,
                "nothing to answer: no non-empty user or assistant message",
                backend=capability.name,
            )
        )
    ignored = sorted(
        p.value
        for p in config.params_set(messages)
        if capability.support(p) is ParamSupport.IGNORED
    )
    if not ignored:
        return Success(())
    if config.on_ignored == "fail":
        return Failure(
            ProviderError(
                ErrorKind.unsupported,
                f"backend ignores: {', '.join(ignored)} (on_ignored='fail')",
                backend=capability.name,
                details={"params": ignored},
            )
        )
    return Success(
        tuple(
            f"{capability.name} ignores {p}"
            + (f": {capability.notes[Param(p)]}" if Param(p) in capability.notes else "")
            for p in ignored
        )
    )
