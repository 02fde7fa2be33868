"""agentport.core: types, errors, capabilities and protocols. No I/O at all.

The quota parsers (`as_quota`, `parse_quota`, `quota_from_body`, `QuotaWindow`, `MAX_WINDOW`)
and the headroom parser (`headroom_from_headers`, `Headroom`) load on first use: their
patterns cost more at import than a caller of the types needs.
"""

from typing import TYPE_CHECKING, Any

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
)
from ._response import CompletionResponse, ParamReceipt, RawInfo, SkippedBackend, Usage

if TYPE_CHECKING:
    from ._headroom import Headroom, headroom_from_headers
    from ._quota import MAX_WINDOW, QuotaWindow, as_quota, parse_quota, quota_from_body

_LAZY = {
    **dict.fromkeys(
        ("MAX_WINDOW", "QuotaWindow", "as_quota", "parse_quota", "quota_from_body"), "_quota"
    ),
    **dict.fromkeys(("Headroom", "headroom_from_headers"), "_headroom"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'agentport.core' has no attribute {name!r}")


__all__ = [
    "MAX_WINDOW",
    "AgentEvent",
    "AgentRuntime",
    "Attempt",
    "BackendCapability",
    "BackendKind",
    "Billing",
    "ClosableAdapter",
    "CompletionConfig",
    "CompletionResponse",
    "EndSignal",
    "ErrorKind",
    "EventStream",
    "EventType",
    "FilePart",
    "Headroom",
    "IgnoredPolicy",
    "ImagePart",
    "LLMAdapter",
    "Message",
    "MessageRole",
    "OutputSchema",
    "Param",
    "ParamReceipt",
    "ParamSupport",
    "Part",
    "ProviderError",
    "QuotaWindow",
    "RawInfo",
    "ReasoningEffort",
    "RuntimeHandle",
    "Sandbox",
    "SkippedBackend",
    "TimeoutWhich",
    "ToolPolicy",
    "Usage",
    "as_messages",
    "as_quota",
    "check_params",
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
