"""agentport.core: types, errors, capabilities and protocols. No I/O at all.

The quota parsers (`as_quota`, `parse_quota`, `quota_from_body`, `QuotaWindow`, `MAX_WINDOW`),
the headroom parser (`headroom_from_headers`, `Headroom`, `with_headroom`), the billing
words (`billing_said`), tracing (`span`, `trace_env`) and the depth-bounded JSON parser
(`bounded.loads`) load on first use: they cost more at import than a caller of the types needs.

Internal to agentport, with no stability promise (the public modules: docs/architecture.md,
"Public API"): `agentport` re-exports the types a caller annotates with; `__all__` is what
the other layers of agentport use.
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
    secret_values,
)
from ._events import EventStream, until_consumer_leaves
from ._messages import Message, MessageRole, Part, as_messages, inline_files, split_system
from ._parts import MAX_PART_BYTES, FilePart, ImagePart, sniff_image
from ._printable import printable, without_sequences
from ._protocols import (
    AgentEvent,
    AgentRuntime,
    EventType,
    LLMAdapter,
    RuntimeHandle,
    aclose_adapter,
)
from ._response import (
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
    from ._billing import billing_said
    from ._headroom import Headroom, headroom_from_headers, with_headroom
    from ._quota import MAX_WINDOW, QuotaWindow, as_quota, parse_quota, quota_from_body
    from ._telemetry import span, trace_env

_LAZY = {
    **dict.fromkeys(
        ("MAX_WINDOW", "QuotaWindow", "as_quota", "parse_quota", "quota_from_body"), "_quota"
    ),
    **dict.fromkeys(("Headroom", "headroom_from_headers", "with_headroom"), "_headroom"),
    **dict.fromkeys(("span", "trace_env"), "_telemetry"),
    "billing_said": "_billing",
}


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    if name == "bounded":  # the depth-bounded JSON parser, as a module (`bounded.loads`)
        return import_module("._bounded", __name__)
    raise AttributeError(f"module 'agentport.core' has no attribute {name!r}")


__all__ = [
    "MAX_PART_BYTES",
    "MAX_WINDOW",
    "AgentEvent",
    "AgentRuntime",
    "Attempt",
    "BackendCapability",
    "BackendKind",
    "Billing",
    "CompletionConfig",
    "CompletionResponse",
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
    "RawInfo",
    "ReasoningEffort",
    "RuntimeHandle",
    "Sandbox",
    "SkippedBackend",
    "TimeoutWhich",
    "ToolPolicy",
    "Usage",
    "aclose_adapter",
    "as_messages",
    "as_quota",
    "billing_said",
    "bounded",
    "check_params",
    "headroom_from_headers",
    "json_schema_problem",
    "merge_config",
    "normalize_name",
    "prepare_messages",
    "printable",
    "redact",
    "register_secret",
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
