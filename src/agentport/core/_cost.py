"""On whose bill a call ran and how well its cost is known: two closed enums and how they
join when usages are summed (pure, light: `Usage` carries them; `core._billing` decides
the route from a backend's facts)."""

from __future__ import annotations

import enum

__all__ = ["BillingRoute", "CostState", "join_cost", "join_route"]


class BillingRoute(enum.StrEnum):
    """On whose bill a call ran: `api_key` (metered by a provider key), `subscription` (a
    logged-in plan's usage windows), `local` (your own hardware, or a test double: nothing
    billed), `unknown` (the facts do not tell, or summed calls went different ways)."""

    api_key = "api_key"
    subscription = "subscription"
    local = "local"
    unknown = "unknown"


class CostState(enum.StrEnum):
    """How far `Usage.cost_usd` can be trusted: `priced` (every request had a price: the
    backend's own figure, or 0 on local hardware), `lower_bound` (some requests had no price:
    the sum is at least what was spent), `unpriced` (no request had a price)."""

    priced = "priced"
    lower_bound = "lower_bound"
    unpriced = "unpriced"


def join_route(a: BillingRoute | None, b: BillingRoute | None) -> BillingRoute | None:
    """The route of two usages summed: None (not yet stated) is the identity; two different
    routes are `unknown`."""
    if a is None or b is None:
        return b if a is None else a
    return a if a is b else BillingRoute.unknown


def join_cost(a: CostState | None, b: CostState | None) -> CostState | None:
    """The cost state of two usages summed: None is the identity; equal states stay; any mix
    is a `lower_bound` (a priced part plus an unknown rest)."""
    if a is None or b is None:
        return b if a is None else a
    return a if a is b else CostState.lower_bound
