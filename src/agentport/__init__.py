"""agentport: one stable, typed way to call any LLM backend from Python.

```python
from agentport import Message, create_llm_adapter

llm = create_llm_adapter()            # llm.backend from configuration, or "auto"
result = await llm.complete([Message.user("Say hi")])
```

`complete` returns `Success(CompletionResponse)` or `Failure(ProviderError)`; a failure's
`attempts` lists the tries the policy layer made within the call's deadline
(`CompletionConfig.total_timeout_s`). For scripts, `complete_sync("Say hi")` does the same
in one blocking call and returns every problem, setup ones included, as a `Failure`.
Importing this package imports no backend module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from returns.result import Failure, Result, Success

from .core import (
    AgentEvent,
    AgentRuntime,
    Allow,
    Attempt,
    BackendCapability,
    BackendKind,
    CompletionConfig,
    CompletionResponse,
    Deny,
    ErrorKind,
    EventType,
    FilePart,
    ImagePart,
    LLMAdapter,
    McpServer,
    Message,
    MessageRole,
    Param,
    ParamSupport,
    PermissionKind,
    PermissionRequest,
    ProviderError,
    RawInfo,
    RuntimeHandle,
    Sandbox,
    ToolPolicy,
    Usage,
)

if TYPE_CHECKING:
    from ._handoff import Handoff, handoff
    from .factory import (
        attach,
        complete_sync,
        create_agent_runtime,
        create_llm_adapter,
        resolve_backend,
    )
    from .policies import RetryingAdapter, RetryPolicy

_LAZY = {"attach", "complete_sync", "create_agent_runtime", "create_llm_adapter", "resolve_backend"}
_HANDOFF = {"Handoff", "handoff"}


def __getattr__(name: str) -> Any:
    # The factory pulls in configuration loading (pydantic-settings) and the policy layer;
    # both load on first use.
    if name in _LAZY:
        from . import factory

        return getattr(factory, name)
    if name in _HANDOFF:
        from . import _handoff

        return getattr(_handoff, name)
    if name in ("RetryingAdapter", "RetryPolicy"):
        from . import policies

        return getattr(policies, name)
    raise AttributeError(f"module 'agentport' has no attribute {name!r}")


__version__ = "0.2.0"

__all__ = [
    "AgentEvent",
    "AgentRuntime",
    "Allow",
    "Attempt",
    "BackendCapability",
    "BackendKind",
    "CompletionConfig",
    "CompletionResponse",
    "Deny",
    "ErrorKind",
    "EventType",
    "Failure",
    "FilePart",
    "Handoff",
    "ImagePart",
    "LLMAdapter",
    "McpServer",
    "Message",
    "MessageRole",
    "Param",
    "ParamSupport",
    "PermissionKind",
    "PermissionRequest",
    "ProviderError",
    "RawInfo",
    "Result",
    "RetryPolicy",
    "RetryingAdapter",
    "RuntimeHandle",
    "Sandbox",
    "Success",
    "ToolPolicy",
    "Usage",
    "__version__",
    "attach",
    "complete_sync",
    "create_agent_runtime",
    "create_llm_adapter",
    "handoff",
    "resolve_backend",
]
