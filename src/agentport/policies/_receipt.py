"""A receipt per call: each parameter the caller set and how the backend treated it.

Pure: the catalog entry (`BackendCapability`) says NATIVE / TRANSLATED / IGNORED and why; the
call's `CompletionConfig.params_set(messages)` says what was set. Attached to every response
by the policy layer (`RetryingAdapter(capability=...)`, `FailoverAdapter`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import BackendCapability, CompletionConfig, Message, Param, ParamReceipt

__all__ = ["receipt"]

_ORDER = {p: i for i, p in enumerate(Param)}


def receipt(
    capability: BackendCapability, messages: Sequence[Message], config: CompletionConfig
) -> tuple[ParamReceipt, ...]:
    """One `ParamReceipt` per parameter *config* (and a system message) sets, in `Param`
    order, with *capability*'s support and note."""
    return tuple(
        ParamReceipt(param=p, support=capability.support(p), note=capability.notes.get(p, ""))
        for p in sorted(config.params_set(messages), key=_ORDER.__getitem__)
    )
