"""Factory hooks for the test backends registered in the catalog (`scripted`, `echo`)."""

from __future__ import annotations

from ..backends import BackendSettings
from ..core import BackendCapability, LLMAdapter
from ._echo import EchoAdapter, EchoRuntime
from ._scripted import ScriptedAdapter

__all__ = ["create_adapter", "create_runtime"]


def create_adapter(capability: BackendCapability, settings: BackendSettings) -> LLMAdapter:
    if capability.name == "echo":
        return EchoAdapter(settings.defaults)
    # Configured as a backend there is nobody to script rules: answer `[llm.scripted] default`.
    return ScriptedAdapter(
        default=settings.options.get("default", "ok"),
        default_config=settings.defaults,
    )


def create_runtime(capability: BackendCapability, settings: BackendSettings) -> EchoRuntime:
    return EchoRuntime(settings.defaults)
