"""agentport.core: types, errors, capabilities and protocols. No I/O at all.

The quota parsers (`as_quota`, `parse_quota`, `quota_from_body`, `QuotaWindow`, `MAX_WINDOW`)
and the headroom parser (`headroom_from_headers`, `Headroom`) load on first use: their
patterns cost more at import than a caller of the types needs; so do the session transcript
and its briefing (`Transcript`, `brief`), which only a handover needs.
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
    merge_config,
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
)
from ._events import EventStream, until_consumer_leaves
from ._mcp_servers import FUNCTIONS_SERVER, McpServer, ToolFunction
from ._messages import Message, MessageRole, Part, as_messages, inline_files, split_system
from ._parts import FilePart, ImagePart, sniff_image
from ._printable import printable
from ._protocols import (
    AgentEvent,
    AgentRuntime,
    ClosableAdapter,
    EndSignal,
    EventType,
    LLMAdapter,
    RuntimeHandle,
    SteerResult,
)
from ._response import (
    BinaryInfo,
    CompletionResponse,
    ParamReceipt,
    RawInfo,
    SkippedBackend,
    Usage,
)

if TYPE_CHECKING:
    from ._headroom import Headroom, headroom_from_headers
    from ._quota import MAX_WINDOW, QuotaWindow, as_quota, parse_quota, quota_from_body
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

_LAZY = {
    **dict.fromkeys(
        ("MAX_WINDOW", "QuotaWindow", "as_quota", "parse_quota", "quota_from_body"), "_quota"
    ),
    **dict.fromkeys(("Headroom", "headroom_from_headers"), "_headroom"),
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
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'agentport.core' has no attribute {name!r}")


__all__ = [
    "DEFAULT_BRIEFING_TOKENS",
    "FUNCTIONS_SERVER",
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
    "ClosableAdapter",
    "CompletionConfig",
    "CompletionResponse",
    "CostState",
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
    "QuotaWindow",
    "RawInfo",
    "ReasoningEffort",
    "RuntimeHandle",
    "Sandbox",
    "SkippedBackend",
    "SteerResult",
    "TimeoutWhich",
    "ToolFunction",
    "ToolPolicy",
    "Transcript",
    "Turn",
    "TurnKind",
    "Usage",
    "as_messages",
    "as_quota",
    "brief",
    "check_params",
    "estimate_tokens",
    "headroom_from_headers",
    "inline_files",
    "json_schema_problem",
    "merge_config",
    "messages_for",
    "normalize_name",
    "parse_quota",
    "prepare_messages",
    "printable",
    "quota_from_body",
    "redact",
    "redact_value",
    "register_secret",
    "sniff_image",
    "split_system",
    "until_consumer_leaves",
]
