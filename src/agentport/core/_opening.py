"""The opening and closing of a non-CLI `complete()`, written once.

Every adapter that answers in this process or over HTTP (openai_compat, litellm, local, the
echo test double) starts a call the same way: the call plan (`plan_call`: the config merged
over the adapter's defaults once per call, or the layer above's plan handed down as it is,
and the call's one `Deadline`), then `prepare_messages` (the unsupported-parameter checks
under the call's `on_ignored` policy, files inlined, images dropped where IGNORED). It ends
the same way: the call's warnings put in front of the answer's and `duration_s` measured
from the start. `complete_call` is that frame; the backend supplies only the body.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio
from returns.result import Failure, Result

from ._capabilities import BackendCapability
from ._checks import prepare_messages
from ._config import CompletionConfig
from ._deadline import Deadline
from ._errors import ErrorKind, ProviderError
from ._messages import Message
from ._plan import plan_call
from ._response import CompletionResponse

__all__ = ["OpenedCall", "complete_call"]


@dataclass(frozen=True, slots=True)
class OpenedCall:
    """A call after its opening: the *messages* the backend is given (checked, files inlined),
    the merged *config*, the plan's *deadline* (monotonic clock) and when the call *started*
    (`time.monotonic()`, seconds)."""

    messages: tuple[Message, ...]
    config: CompletionConfig
    deadline: Deadline
    started: float


Body = Callable[[OpenedCall], Awaitable[Result[CompletionResponse, ProviderError]]]


async def complete_call(
    capability: BackendCapability,
    messages: Sequence[Message],
    config: CompletionConfig | None,
    defaults: CompletionConfig,
    body: Body,
    *,
    bounded: bool = True,
) -> Result[CompletionResponse, ProviderError]:
    """One non-CLI `complete()`: open the call, run *body* with it, close it.

    The config and deadline are the call plan's (`agentport.core.plan_call`): the policy
    layer's when it handed its plan down, else one made here from *config* over *defaults*.
    With *bounded* the body runs until the plan's deadline and is then cancelled, ending in
    `Failure(ProviderError(timeout, timeout="total"))` naming the limit (`total_timeout_s=30`,
    or `attempt_timeout_s=...` for a retry policy's attempt); without it the body enforces the
    deadline itself (the local model checks it between tokens). A parameter the backend cannot
    honour fails or warns before the body runs (`prepare_messages`). A success carries the
    call's warnings before the body's and `duration_s` from the start of the call.
    """
    started = time.monotonic()
    plan = plan_call(messages, config, defaults)
    prepared = prepare_messages(capability, plan.messages, plan.config)
    if isinstance(prepared, Failure):
        return prepared
    given, warnings = prepared.unwrap()
    opened = OpenedCall(tuple(given), plan.config, plan.deadline, started)
    if bounded:
        result = await _until(opened, body, capability.name)
    else:
        result = await body(opened)
    return result.map(
        lambda r: r.model_copy(
            update={"warnings": warnings + r.warnings, "duration_s": time.monotonic() - started}
        )
    )


async def _until(
    opened: OpenedCall, body: Body, backend: str
) -> Result[CompletionResponse, ProviderError]:
    deadline = opened.deadline
    # the deadline is on the monotonic clock; anyio's clock is the event loop's (trio's is not
    # monotonic's), so the scope gets the seconds left, not the instant
    with anyio.move_on_after(deadline.remaining()):
        return await body(opened)
    # the scope ran out (the body's own return left the function above)
    return Failure(
        ProviderError(
            ErrorKind.timeout,
            f"no complete answer within {deadline.words()}",
            backend=backend,
            timeout="attempt" if deadline.limit == "attempt" else "total",
        )
    )
