"""agentport.core: types, errors, capabilities and protocols. No I/O at all.

The quota parsers (`as_quota`, `parse_quota`, `quota_from_body`, `QuotaWindow`, `MAX_WINDOW`),
the headroom parser (`headroom_from_headers`, `Headroom`, `with_headroom`), the billing
words (`billing_said`), tracing (`span`, `trace_env`), the depth-bounded JSON parser
(`bounded.loads`), the session transcript and its briefing (`Transcript`, `brief`, which
only a handover needs), the call plan (`plan_call`, `CallPlan`, `Deadline`, `merge_config`)
and the frame of a non-CLI call (`complete_call`, `OpenedCall`)
load on first use: they cost more at import than a caller of the
types needs.

Internal to agentport, with no stability promise (the public modules: docs/architecture.md,
"Public API"): `agentport` re-exports the types a caller annotates with; `__all__` is what
the other layers of agentport use.
"""

from typing import TYPE_CHECKING, Any

from ._approvals import (
    Allow,
    Deny,
    OptionKind,
    PermissionDecision,
    PermissionHook,
    PermissionKind,
    PermissionOption,
    PermissionRequest,
    choose_option,
    input_summary,
    permission_kind,
)
from ._capabilities import (
    BackendCapability,
    BackendKind,
    Billing,
    Param,
    ParamSupport,
    normalize_name,
)
from ._checks import check_params, messages_for, prepare_messages
from ._config import (
    CompletionConfig,
    IgnoredPolicy,
    OutputSchema,
    ReasoningEffort,
    Sandbox,
    ToolPolicy,
    json_schema_problem,
)
from ._cost import BillingRoute, CostState
from ._errors import (
    Attempt,
    ErrorKind,
    ProviderError,
    TimeoutWhich,
    redact,
    redact_value,
    register_secret,
    secret_values,
)
from ._events import EventStream, until_consumer_leaves
from ._mcp_servers import FUNCTIONS_SERVER, McpServer, ToolFunction
from ._messages import Message, MessageRole, Part, as_messages, inline_files, split_system
from ._parts import MAX_PART_BYTES, FilePart, ImagePart, sniff_image
from ._printable import printable, without_sequences
from ._protocols import (
    AgentEvent,
    AgentRuntime,
    ClosableAdapter,
    EndSignal,
    EventType,
    LLMAdapter,
    RuntimeHandle,
    SteerResult,
    aclose_adapter,
    last_event,
)
from ._response import (
    BinaryInfo,
    CompletionResponse,
    ParamReceipt,
    RawInfo,
    SkippedBackend,
    Usage,
    usage_of,
    with_usage,
)
from ._wait import wait_from_headers

if TYPE_CHECKING:
    from . import _bounded as bounded
    from ._billing import billing_said, key_handed, loopback_url, route_for
    from ._deadline import Deadline, DeadlineLimit
    from ._headroom import Headroom, headroom_from_headers, with_headroom
    from ._opening import OpenedCall, complete_call
    from ._plan import CallPlan, current_plan, merge_config, plan_call, planned
    from ._quota import MAX_WINDOW, QuotaWindow, as_quota, parse_quota, quota_from_body
    from ._runaway import RunawayGuard, input_digest
    from ._telemetry import annotate_span, span, trace_env
    from ._transcript import (
        DEFAULT_BRIEFING_TOKENS,
        MIN_BRIEFING_TOKENS,
        Briefing,
        Transcript,
        Turn,
        TurnKind,
        brief,
        estimate_tokens,
    )
    from ._turns import RuntimeScope, TurnEvents, TurnRuntime

_LAZY = {
    **dict.fromkeys(
        ("MAX_WINDOW", "QuotaWindow", "as_quota", "parse_quota", "quota_from_body"), "_quota"
    ),
    **dict.fromkeys(
        (
            "DEFAULT_BRIEFING_TOKENS",
            "MIN_BRIEFING_TOKENS",
            "Briefing",
            "Transcript",
            "Turn",
            "TurnKind",
            "brief",
            "estimate_tokens",
        ),
        "_transcript",
    ),
    **dict.fromkeys(("Headroom", "headroom_from_headers", "with_headroom"), "_headroom"),
    **dict.fromkeys(("annotate_span", "span", "trace_env"), "_telemetry"),
    **dict.fromkeys(("billing_said", "key_handed", "loopback_url", "route_for"), "_billing"),
    **dict.fromkeys(("RunawayGuard", "input_digest"), "_runaway"),
    **dict.fromkeys(("Deadline", "DeadlineLimit"), "_deadline"),
    **dict.fromkeys(("CallPlan", "current_plan", "merge_config", "plan_call", "planned"), "_plan"),
    **dict.fromkeys(("RuntimeScope", "TurnEvents", "TurnRuntime"), "_turns"),
    **dict.fromkeys(("OpenedCall", "complete_call"), "_opening"),
}


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    if name == "bounded":  # the depth-bounded JSON parser, as a module (`bounded.loads`)
        return import_module("._bounded", __name__)
    raise AttributeError(f"module 'agentport.core' has no attribute {name!r}")


__all__ = [
    "DEFAULT_BRIEFING_TOKENS",
    "FUNCTIONS_SERVER",
    "MAX_PART_BYTES",
    "MAX_WINDOW",
    "MIN_BRIEFING_TOKENS",
    "AgentEvent",
    "AgentRuntime",
    "Allow",
    "Attempt",
    "BackendCapability",
    "BackendKind",
    "Billing",
    "BillingRoute",
    "BinaryInfo",
    "Briefing",
    "CallPlan",
    "ClosableAdapter",
    "CompletionConfig",
    "CompletionResponse",
    "CostState",
    "Deadline",
    "DeadlineLimit",
    "Deny",
    "EndSignal",
    "ErrorKind",
    "EventStream",
    "EventType",
    "FilePart",
    "Headroom",
    "IgnoredPolicy",
    "ImagePart",
    "LLMAdapter",
    "McpServer",
    "Message",
    "MessageRole",
    "OpenedCall",
    "OptionKind",
    "OutputSchema",
    "Param",
    "ParamReceipt",
    "ParamSupport",
    "Part",
    "PermissionDecision",
    "PermissionHook",
    "PermissionKind",
    "PermissionOption",
    "PermissionRequest",
    "ProviderError",
    "RawInfo",
    "ReasoningEffort",
    "RunawayGuard",
    "RuntimeHandle",
    "RuntimeScope",
    "Sandbox",
    "SkippedBackend",
    "SteerResult",
    "TimeoutWhich",
    "ToolFunction",
    "ToolPolicy",
    "Transcript",
    "Turn",
    "TurnEvents",
    "TurnKind",
    "TurnRuntime",
    "Usage",
    "aclose_adapter",
    "annotate_span",
    "as_messages",
    "as_quota",
    "billing_said",
    "bounded",
    "brief",
    "check_params",
    "choose_option",
    "complete_call",
    "current_plan",
    "estimate_tokens",
    "headroom_from_headers",
    "input_digest",
    "input_summary",
    "json_schema_problem",
    "key_handed",
    "last_event",
    "loopback_url",
    "merge_config",
    "normalize_name",
    "permission_kind",
    "plan_call",
    "planned",
    "prepare_messages",
    "printable",
    "redact",
    "register_secret",
    "route_for",
    "secret_values",
    "sniff_image",
    "span",
    "trace_env",
    "until_consumer_leaves",
    "usage_of",
    "wait_from_headers",
    "with_headroom",
    "with_usage",
    "without_sequences",
]
