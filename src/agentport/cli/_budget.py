"""The workflows' budget on the command line: `--budget SPEC` over the `[budget]` table, the
plan against it, and the "partial" exit code.

Typer-free: the `deeprefine` console script uses it too and must not load the typer app.
"""

from __future__ import annotations

from ..policies import Budget, fit_plan

__all__ = ["BUDGET_HELP", "PARTIAL_EXIT", "budget_lines", "combined_exit", "resolve_budget"]

#: exit code of a run that a budget ceiling stopped: the report (or trace) is partial
PARTIAL_EXIT = 3

BUDGET_HELP = (
    "Ceilings, e.g. 'calls=40,output_tokens=20000,usd=0.50,wall=10m' (keys: calls, "
    "input_tokens, output_tokens, usd, wall); over the \\[budget] table; 'none' drops it. "
    "At a ceiling the run ends with a partial result and exit code 3."
)


def combined_exit(codes: list[int]) -> int:
    """One exit code for several runs: the highest failure code if any run failed, else
    `PARTIAL_EXIT` if any was partial, else 0. A partial run never hides a failure."""
    failed = [c for c in codes if c not in (0, PARTIAL_EXIT)]
    return max(failed) if failed else max(codes, default=0)


def resolve_budget(spec: str | None) -> Budget | None:
    """The budget of a run: *spec* (`--budget`) key by key over the configured `[budget]`
    table; `none` drops the configured one. Raises `ValueError` (one line naming `--budget`
    and the key) or `ProviderError` (config: naming the file and field)."""
    from ..config import run_budget

    return run_budget(spec, source="--budget")


def budget_lines(
    budget: Budget | None,
    worst_calls: int,
    typical_calls: int | None = None,
    worst_output_tokens: int | None = None,
) -> list[str]:
    """`--plan`'s lines: the worst case against the budget and whether the plan fits."""
    fit = fit_plan(
        budget,
        worst_calls,
        typical_calls=typical_calls,
        worst_output_tokens=worst_output_tokens,
    )
    return list(fit.lines)
