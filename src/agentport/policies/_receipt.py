"""A receipt per call: each parameter the caller set and how the backend treated it, and
on whose bill it ran and how well its cost is known.

Pure: the catalog entry (`BackendCapability`) says NATIVE / TRANSLATED / IGNORED and why; the
call's `CompletionConfig.params_set(messages)` says what was set. Attached to every response
by the policy layer (`RetryingAdapter(capability=...)`, `FailoverAdapter`), which also passes
every response's and failure's usage through `billed`: both `billing_route` and `cost_state`
are then set, whatever the backend reported.
"""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Failure, Result, Success

from ..core import (
    BackendCapability,
    BillingRoute,
    CompletionConfig,
    CompletionResponse,
    CostState,
    Message,
    Param,
    ParamReceipt,
    ProviderError,
    Usage,
    route_for,
)

__all__ = ["billed", "billed_result", "receipt"]

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


def billed(capability: BackendCapability, usage: Usage, *, sent: bool | None = True) -> Usage:
    """*usage* with `billing_route` and `cost_state` both set. A route the backend stated
    stays; else the catalog's, when it has only one (`route_for`), else `unknown`. A cost
    state the usage has stays; else local hardware is priced at 0, a request that never
    left (*sent* False) is priced at 0, anything else is `unpriced`."""
    route = usage.billing_route or route_for(capability.billing, key=None)
    update: dict[str, object] = {"billing_route": route}
    if usage.cost_state is None or (route is BillingRoute.local and usage.cost_usd is None):
        if route is BillingRoute.local or sent is False:
            update |= {"cost_usd": usage.cost_usd or 0.0, "cost_state": CostState.priced}
        else:
            update["cost_state"] = CostState.unpriced
    return usage.model_copy(update=update)


def billed_result(
    capability: BackendCapability | None,
    result: Result[CompletionResponse, ProviderError],
) -> Result[CompletionResponse, ProviderError]:
    """*result* with its usage `billed` (unchanged without a catalog entry)."""
    if capability is None:
        return result
    if isinstance(result, Success):
        response = result.unwrap()
        return Success(response.model_copy(update={"usage": billed(capability, response.usage)}))
    error = result.failure()
    return Failure(error.replace(usage=billed(capability, error.usage, sent=error.request_sent)))
