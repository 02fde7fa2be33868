"""Factory hooks for the test backends registered in the catalog (`scripted`, `echo`)."""

from __future__ import annotations

from ..config import LLMSettings
from ..core import BackendCapability, LLMAdapter
from ._echo import EchoAdapter, EchoRuntime
from ._scripted import ScriptedAdapter

__all__ = ["create_adapter", "create_runtime"]


def create_adapter(capability: BackendCapability, settings: LLMSettings) -> LLMAdapter:
    if capability.name == "echo":
        return EchoAdapter(settings.completion_config())
    # Configured as a backend there is nobody to script rules: answer `[llm.scripted] default`.
    return ScriptedAdapter(
        default=settings.options("scripted").get("default", "ok"),
        default_config=settings.completion_config(),
    )


def create_runtime(capability: BackendCapability, settings: LLMSettings) -> EchoRuntime:
    return EchoRuntime(settings.completion_config())
