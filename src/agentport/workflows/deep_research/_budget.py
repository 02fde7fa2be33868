"""A research run under a budget: the partial report.

Once a ceiling of the run's `Budget` is reached (`agentport.policies.BudgetAdapter`), no new
agent call starts (`Run.call` answers None at once, counted in `callsRefusedBudget`) and the
calls in flight end by the wall-clock deadline. The pipeline still runs to its end on what
it has: a claim whose votes were all cast, or whose outcome the cast votes already settle,
stays among the verified claims; every other extracted claim is listed as "not verified
(budget)"; synthesis is skipped (the confirmed claims are returned unmerged). The report is
marked `budgetReached` with the ceiling that stopped it. Never an exception.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core import ErrorKind, LLMAdapter
from ...policies import Budget, BudgetAdapter
from ._core import quorum_decided
from ._plan import ResearchPlan
from ._report import ResearchReport
from ._run import Record, Run

__all__ = ["budget_plan", "finish_partial", "over_budget", "split_voted", "with_budget"]


def with_budget(adapter: LLMAdapter, budget: Budget | None) -> LLMAdapter:
    """*adapter* under *budget* (itself when None)."""
    return adapter if budget is None else BudgetAdapter(adapter, budget)


def over_budget(run: Run) -> bool:
    """True once the run's budget stopped a call or has no room for another one (then
    `run.budget_reached` names the ceiling)."""
    if run.budget_reached is None and run.budget is not None:
        run.budget_reached = run.budget.reached()
    return run.budget_reached is not None


def split_voted(run: Run, voted: Sequence[Record]) -> tuple[list[Record], list[Record]]:
    """(verified, not verified (budget)): after a budget stop, a claim is verified only when
    the valid votes it got settle its outcome whatever the missing votes would have said."""
    if run.budget_reached is None:
        return list(voted), []
    cfg = run.config
    kept: list[Record] = []
    cut: list[Record] = []
    for claim in voted:
        missing = claim["abstained"] + claim["skipped"]
        settled = not missing or quorum_decided(
            claim["valid"], cfg.VOTES_PER_CLAIM, cfg.REFUTATIONS_REQUIRED
        )
        (kept if settled else cut).append(claim)
    return kept, cut


def finish_partial(report: ResearchReport, run: Run) -> ResearchReport:
    """*report* marked "budget reached" when the run's budget stopped a call; as is
    otherwise."""
    why = run.budget_reached
    if why is None:
        return report
    outcomes = [c.outcome for c in report.claims]
    summary = (
        f"Budget reached ({why}): partial report. {len(outcomes)} claim(s) verified "
        f"({outcomes.count('confirmed')} confirmed, {outcomes.count('refuted')} refuted, "
        f"{outcomes.count('unverified')} unverified), {len(report.not_verified)} not "
        "verified (budget); no new call was made after the ceiling"
        + (
            "; no synthesis: the confirmed claims are listed unmerged."
            if not report.findings
            else "."
        )
    )
    stats = report.stats | {
        "budgetReached": why,
        "callsRefusedBudget": run.budget_refused,
        "notVerifiedBudget": len(report.not_verified),
    }
    warnings = [
        *report.warnings,
        f"budget reached ({why}): {run.budget_refused} call(s) not made; the report is partial",
    ]
    return report.model_copy(
        update={
            "budget_reached": why,
            "summary": summary if not report.findings else report.summary,
            "stats": stats,
            "warnings": warnings,
            # a scope refused by the budget is not a failure of the run: nothing was finished
            "error": None if _scope_refused_by_budget(run) else report.error,
        }
    )


def _scope_refused_by_budget(run: Run) -> bool:
    """True when the scope call's last failure was the budget's refusal (not a model error)."""
    scope = [err for phase, err in run.failures if phase == "scope"]
    return bool(scope) and scope[-1].kind is ErrorKind.budget_exhausted


def budget_plan(plan: ResearchPlan, max_tokens: int | None) -> tuple[int, int, int | None]:
    """(worst-case agent calls, typical calls, worst-case output tokens or None when no
    per-call cap is set) of *plan*. A call may make `requests_per_call` model requests."""
    worst_tokens = (
        None if max_tokens is None else plan.upper_bound_calls * plan.requests_per_call * max_tokens
    )
    return plan.upper_bound_calls, plan.typical_calls, worst_tokens
