"""`BudgetLimit`: which ceiling of a `Budget` stopped a call, as typed data on the failure.

A `budget_exhausted` failure of `BudgetAdapter` carries it in `details["limit"]` (plain JSON,
so it survives pickling and a Temporal round trip unchanged); `BudgetLimit.of(error)` reads it
back, validated. Callers read the limit from there, never from the message text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..core import ErrorKind, ProviderError

__all__ = ["BudgetLimit", "BudgetLimitName", "BudgetScope"]

BudgetLimitName = Literal["calls", "input_tokens", "output_tokens", "cost_usd", "deadline_s"]
"""The ceilings of a `Budget` (its field names)."""

BudgetScope = Literal["budget", "question_share", "batch_deadline"]
"""Whose ceiling: the adapter's own `Budget`; one question's share of a batch budget (the
Temporal batch hands each question an allowance); the batch's wall-clock deadline."""

_SCOPE_NOTE = {
    "budget": "",
    "question_share": " (this question's share of the batch budget)",
    "batch_deadline": " (the batch's wall-clock budget)",
}

DETAILS_KEY = "limit"


class BudgetLimit(BaseModel):
    """One ceiling that is reached, or would be by the next call.

    Attributes:
        name: which ceiling (`Budget`'s field name).
        ceiling: its value (calls, tokens, US dollars or wall-clock seconds); None for the
            batch's deadline (an instant, not an amount).
        used: what was spent of it when the call was refused; None when a running call was
            cut at the `deadline_s` ceiling (`cut` in the error's details).
        next_call: the estimate of the next call's share (the mean of the finished calls)
            when the ceiling is not reached yet but would be; None when it is reached.
        scope: whose ceiling (`BudgetScope`).
        lower_bound: `cost_usd` only: a call had no price, so *used* is a lower bound.
        no_price: `cost_usd` only: refused because a call had no price and the budget's
            `on_unpriced` is `fail` (the money spent cannot be known).

    `str()` is the short form the workflows report: "calls 3/3", "output_tokens 400/500,
    next call ~200", "deadline_s 5" (a cut call), "calls 2/2 (this question's share of the
    batch budget)", "deadline_s (the batch's wall-clock budget)".
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: BudgetLimitName
    ceiling: float | None
    used: float | None = None
    next_call: float | None = None
    scope: BudgetScope = "budget"
    lower_bound: bool = False
    no_price: bool = False

    def __str__(self) -> str:
        note = _SCOPE_NOTE[self.scope]
        if self.ceiling is None:
            return f"{self.name}{note}"
        if self.used is None:
            return f"{self.name} {self.ceiling:g}{note}"
        shown = f"{self.used:.3g}" if self.name == "deadline_s" else f"{self.used:g}"
        if self.no_price:
            return f"{self.name} {shown}/{self.ceiling:g} is a lower bound: a call had no price"
        if self.lower_bound:
            shown += " (lower bound)"
        text = f"{self.name} {shown}/{self.ceiling:g}"
        if self.next_call is not None:
            text += f", next call ~{self.next_call:.3g}"
        return text + note

    @classmethod
    def of(cls, error: ProviderError) -> BudgetLimit | None:
        """The limit a `budget_exhausted` *error* carries, or None (another kind, or an error
        built without one)."""
        raw = error.details.get(DETAILS_KEY)
        if error.kind is not ErrorKind.budget_exhausted or not isinstance(raw, Mapping):
            return None
        try:
            return cls.model_validate(dict(raw))
        except ValidationError:
            return None
