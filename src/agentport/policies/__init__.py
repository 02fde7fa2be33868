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
from ._concurrency import ConcurrencyGate
from ._concurrency import Slot as Slot  # internal: the factory, tests
from ._concurrency import concurrency_gate as concurrency_gate
from ._concurrency import gate_key as gate_key
from ._cooldown import (
    Cooldown,
    CooldownStore,
    CooldownStoreWarning,
    cooldown_error,
    default_store,
    state_dir,
)
from ._failover import ChainMember, FailoverAdapter
from ._gated_runtime import GatedRuntime as GatedRuntime
from ._handover import DEFAULT_HANDOVER_ON, SessionHandover
from ._headroom import QuotaStatus, quota_status
from ._pressure import WindowRow, windows
from ._receipt import receipt
from ._retry import DEADLINE_SLACK_S, RetryingAdapter, RetryPolicy, with_retry
from ._tracing import workflow_span
from ._window import Outcome as Outcome  # internal: the window core, its tests
from ._window import WindowState as WindowState
from ._window import outcome_of as outcome_of
from ._window import settle as settle

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
    "PlanFit",
    "QuotaStatus",
    "RetryPolicy",
    "RetryingAdapter",
    "SessionHandover",
    "WindowRow",
    "cooldown_error",
    "default_store",
    "failover_kinds",
    "fit_plan",
    "format_budget",
    "merge_budgets",
    "parse_budget",
    "parse_duration",
    "quota_status",
    "receipt",
    "state_dir",
    "windows",
    "with_retry",
    "workflow_span",
]
