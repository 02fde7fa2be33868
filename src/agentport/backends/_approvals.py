"""Asking the caller's approval hook (`decide`): the one path every backend that can ask
goes through, so every backend gets the same rules: the call's `ToolPolicy` decides first
(the hook only narrows it), no answer within `permission_timeout_s` is a deny, a hook that
raises or returns something else is a deny naming why. docs/approvals.md.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any

import anyio
import anyio.to_thread

from ..core import (
    AgentEvent,
    Allow,
    CompletionConfig,
    Deny,
    ErrorKind,
    EventType,
    PermissionDecision,
    PermissionRequest,
    ProviderError,
    redact,
)

__all__ = ["POLICY_DENIES", "decide", "denied_error", "denied_event"]

#: The reason of a deny the call's `ToolPolicy` made (the hook was not asked).
POLICY_DENIES = "the call's ToolPolicy does not allow this tool"


async def decide(
    request: PermissionRequest, config: CompletionConfig, *, policy_allows: bool = True
) -> PermissionDecision:
    """The decision on *request*: `Deny(POLICY_DENIES)` when the call's policy does not allow
    the tool; `Allow()` when the call sets no hook; else the hook's answer within
    `config.permission_timeout_s`. A sync hook runs in a worker thread, so a hook that blocks
    (a prompt on a terminal) cannot stall the run past its deadline (the thread is then
    abandoned, its late answer dropped). Never raises for the hook's faults; cancellation
    propagates."""
    if not policy_allows:
        return Deny(POLICY_DENIES)
    hook = config.on_permission
    if hook is None:
        return Allow()
    limit = config.permission_timeout_s
    answer: Any = None
    with anyio.move_on_after(limit) as scope:
        try:
            if inspect.iscoroutinefunction(hook) or inspect.iscoroutinefunction(
                getattr(hook, "__call__", None)  # noqa: B004 - an object with an async __call__
            ):
                answer = await hook(request)  # type: ignore[misc]
            else:
                answer = await anyio.to_thread.run_sync(hook, request, abandon_on_cancel=True)
            if isinstance(answer, Awaitable):  # a sync callable that returned an awaitable
                answer = await answer
        except Exception as exc:  # the caller's code: any fault of it is a deny
            return Deny(redact(f"the approval hook raised {type(exc).__name__}: {exc}"))
    if scope.cancelled_caught:
        return Deny(f"the approval hook did not answer within {limit:g}s")
    if isinstance(answer, Allow | Deny):
        return answer
    return Deny(f"the approval hook returned {type(answer).__name__}, not Allow or Deny")


def denied_event(request: PermissionRequest, reason: str) -> AgentEvent:
    """The `permission_denied` event of a tool call that did not run."""
    return AgentEvent(
        type=EventType.permission_denied,
        content=f"{request.tool}: {reason}",
        metadata={"request": request, "reason": reason, "tool": request.tool},
    )


def denied_error(request: PermissionRequest, reason: str, backend: str) -> ProviderError:
    """The failure of a run the agent stopped on a denied tool call."""
    return ProviderError(
        ErrorKind.permission_denied,
        f"the run stopped on a denied tool call ({request.tool}): {reason}",
        backend=backend,
        retryable=False,
        details={"tool": request.tool, "kind": request.kind.value, "reason": reason},
    )
