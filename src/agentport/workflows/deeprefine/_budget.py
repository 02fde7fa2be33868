"""DeepRefine under a budget: the worst case of one loop, and the
partial trace a budget stop leaves.

A loop its budget stopped (`LoopResult.budget_reached`) keeps the steps it finished in its
trace; the trace is written beside the regular one as `loop_trace_<id>.partial.json` (so a
complete trace of an earlier run is never overwritten by a partial one, and `loop validate`
/ `finish` / `apply` never take it for a finished loop), no action file is written and
nothing is applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._constants import MAX_HOPS
from ._files import Layout, atomic_write, ensure_state
from ._loop import LoopResult, LoopSettings
from ._trace import check_query_id
from ._workflow import dump_trace

__all__ = ["RefinePlan", "plan_refine", "save_partial"]


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


def partial_trace_path(layout: Layout, query_id: str) -> Path:
    return layout.state / f"loop_trace_{check_query_id(query_id, 'trace')}.partial.json"


def save_partial(layout: Layout, result: LoopResult) -> Path:
    """Write the trace of a loop its budget stopped (atomic); returns its path."""
    ensure_state(layout.state)
    path = partial_trace_path(layout, result.query_id)
    atomic_write(path, dump_trace(result.trace), mode=layout.graph_mode())
    return path
