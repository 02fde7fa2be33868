"""agentport.core: types, errors, capabilities and protocols. No I/O at all."""

from ._capabilities import BackendCapability, BackendKind, Param, ParamSupport, normalize_name
from ._checks import check_params
from ._config import (
    CompletionConfig,
    IgnoredPolicy,
    OutputSchema,
    Sandbox,
    ToolPolicy,
    json_schema_problem,
)
from ._errors import ErrorKind, ProviderError, TimeoutWhich, redact
from ._events import EventStream
from ._messages import Message, MessageRole, as_messages, split_system
from ._protocols import AgentEvent, AgentRuntime, EventType, LLMAdapter, RuntimeHandle
from ._response import CompletionResponse, RawInfo, Usage

__all__ = [
    "AgentEvent",
    "AgentRuntime",
    "BackendCapability",
    "BackendKind",
    "CompletionConfig",
    "CompletionResponse",
    "ErrorKind",
    "EventStream",
    "EventType",
    "IgnoredPolicy",
    "LLMAdapter",
    "Message",
    "MessageRole",
    "OutputSchema",
    "Param",
    "ParamSupport",
    "ProviderError",
    "RawInfo",
    "RuntimeHandle",
    "Sandbox",
    "TimeoutWhich",
    "ToolPolicy",
    "Usage",
    "as_messages",
    "check_params",
    "json_schema_problem",
    "normalize_name",
    "redact",
    "split_system",
]
