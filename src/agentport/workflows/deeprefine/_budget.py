"""DeepRefine under a budget: the worst case of one loop (`plan_refine`). The partial
trace a budget stop leaves is written by `_workflow.save_partial`."""

from __future__ import annotations

from dataclasses import dataclass

from ._constants import MAX_HOPS
from ._loop import LoopSettings

__all__ = ["RefinePlan", "plan_refine"]


@dataclass(frozen=True, slots=True)
class RefinePlan:
    """Model calls of one question's loop: `upper_bound_calls` = (MAX_HOPS judges + 1
    abduction + 1 refinement) x (1 + re-prompts); `typical_calls` = MAX_HOPS + 2 (every
    answer parses, the loop goes to the last hop); `upper_bound_output_tokens` = every call
    at its phase's `max_tokens`."""

    upper_bound_calls: int
    typical_calls: int
    upper_bound_output_tokens: int

    def lines(self) -> list[str]:
        """Human-readable lines (`agentport refine --plan`)."""
        return [
            f"model calls: at most {self.upper_bound_calls} (typical {self.typical_calls}) "
            "per question",
            f"judge: 1 call per hop, <= {MAX_HOPS} hops; then 1 abduction + 1 refinement "
            "(none on an early exit)",
            f"output tokens: at most {self.upper_bound_output_tokens} (every call at its cap)",
        ]


def plan_refine(settings: LoopSettings | None = None) -> RefinePlan:
    """The worst case and typical number of model calls of one question with *settings*."""
    s = settings or LoopSettings()
    tries = s.retries + 1
    return RefinePlan(
        upper_bound_calls=(MAX_HOPS + 2) * tries,
        typical_calls=MAX_HOPS + 2,
        upper_bound_output_tokens=tries
        * (MAX_HOPS * s.judge_max_tokens + s.abduction_max_tokens + s.refinement_max_tokens),
    )
