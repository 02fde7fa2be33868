"""agentport.policies: what to do about a failure, above every backend.

Policies wrap any `LLMAdapter` and return the same `Result`; the factory composes them from
configuration (`[llm] retry_*`, `total_timeout_s`, `attempt_timeout_s`), and no backend
retries on its own. `RetryingAdapter` = the retry policy inside one whole-call deadline, with
the settings merge, the attempt history on every failure and `duration_s` covering the whole
call; `FailoverAdapter` = an ordered chain of backends (typed failover, optional hedging, opt-in
session handover: `SessionHandover`);
`CooldownStore` = exhausted usage windows shared by every process of the user; `BudgetAdapter`
= ceilings on calls, tokens, dollars and wall-clock time (`BudgetLimit`: the ceiling a
`budget_exhausted` failure hit, typed; `parse_budget` reads the `--budget`
spec, `BudgetSettings` the `[budget]` table); `quota_status` = the usage windows a backend
last reported (remaining share, reset); `receipt` = how the backend treated each parameter
of a call; `ConcurrencyGate` = a backend's adaptive concurrency window, shared by the
user's processes (halved by a 429, grown back by successes; `windows` lists them). With
the `otel` extra every call through
`RetryingAdapter` / `FailoverAdapter` is an OpenTelemetry span; `workflow_span` = a workflow
run's span. These policies wrap any `LLMAdapter` and return the same Result; no backend
retries or fails over on its own.
"""

from ._budget import Budget, BudgetAdapter
from ._budget_limit import BudgetLimit, BudgetLimitName, BudgetScope
from ._budget_spec import (
    BUDGET_KEYS,
    BudgetSettings,
    PlanFit,
    fit_plan,
    format_budget,
    merge_budgets,
    parse_budget,
    parse_duration,
)
from ._chain import DEFAULT_FAILOVER_ON, failover_kinds
from ._concurrency import ConcurrencyGate, Slot, concurrency_gate, gate_key
from ._cooldown import (
    Cooldown,
    CooldownStore,
    CooldownStoreWarning,
    cooldown_error,
    default_store,
    state_dir,
)
from ._failover import ChainMember, FailoverAdapter
from ._gated_runtime import GatedRuntime
from ._handover import DEFAULT_HANDOVER_ON, SessionHandover
from ._headroom import QuotaStatus, quota_status
from ._pressure import WindowRow, windows
from ._receipt import receipt
from ._retry import DEADLINE_SLACK_S, RetryingAdapter, RetryPolicy, with_retry
from ._tracing import workflow_span
from ._window import Outcome, WindowState, outcome_of, settle

__all__ = [
    "BUDGET_KEYS",
    "DEADLINE_SLACK_S",
    "DEFAULT_FAILOVER_ON",
    "DEFAULT_HANDOVER_ON",
    "Budget",
    "BudgetAdapter",
    "BudgetLimit",
    "BudgetLimitName",
    "BudgetScope",
    "BudgetSettings",
    "ChainMember",
    "ConcurrencyGate",
    "Cooldown",
    "CooldownStore",
    "CooldownStoreWarning",
    "FailoverAdapter",
    "GatedRuntime",
    "Outcome",
    "PlanFit",
    "QuotaStatus",
    "RetryPolicy",
    "RetryingAdapter",
    "SessionHandover",
    "Slot",
    "WindowRow",
    "WindowState",
    "concurrency_gate",
    "cooldown_error",
    "default_store",
    "failover_kinds",
    "fit_plan",
    "format_budget",
    "gate_key",
    "merge_budgets",
    "outcome_of",
    "parse_budget",
    "parse_duration",
    "quota_status",
    "receipt",
    "settle",
    "state_dir",
    "windows",
    "with_retry",
    "workflow_span",
]
