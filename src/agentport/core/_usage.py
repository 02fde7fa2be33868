"""Token counts and cost of model requests (no I/O): what a response and an error carry."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from ._cost import BillingRoute, CostState, join_cost, join_route

__all__ = ["Usage"]


class Usage(BaseModel):
    """Token counts (0 when the backend does not report them) and cost in USD when known.

    Attributes:
        billing_route: on whose bill the requests ran (`BillingRoute`), None until the
            backend or the policy layer's receipt states it.
        cost_state: how far `cost_usd` is known (`CostState`). Derived when not given: a
            `cost_usd` is `priced`, tokens without one are `unpriced`, an empty usage is None
            (nothing to price: the identity of a sum). Summing joins both (`core._cost`).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    billing_route: BillingRoute | None = None
    cost_state: CostState | None = None

    @model_validator(mode="before")
    @classmethod
    def _derive_cost_state(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("cost_state") is None:
            if data.get("cost_usd") is not None:
                return {**data, "cost_state": CostState.priced}
            if data.get("input_tokens") or data.get("output_tokens"):
                return {**data, "cost_state": CostState.unpriced}
        return data

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
            billing_route=join_route(self.billing_route, other.billing_route),
            cost_state=join_cost(self.cost_state, other.cost_state),
        )
