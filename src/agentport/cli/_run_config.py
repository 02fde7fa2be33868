"""What a research or refine command runs on: the backend it resolves to and the research
settings it gets (shared by `agentport research` and its `--batch` form)."""

from __future__ import annotations

from typing import Any

from ..catalog import get_capability
from ..core import BackendKind, ProviderError
from ..workflows.deep_research import ResearchConfig

__all__ = ["is_local", "research_config", "resolved_backend"]


def resolved_backend(backend: str | None) -> str | None:
    """The canonical backend a run would use (`--backend`, else `llm.backend`), without
    creating an adapter; *backend* when no backend resolves. Raises `ProviderError` for a
    bad configuration."""
    from ..config import load_settings
    from ..factory import resolve_auto, resolve_backend

    name = load_settings(backend=backend).llm.backend
    try:
        return resolve_auto() if name.strip().lower() == "auto" else resolve_backend(name)
    except ProviderError:
        return backend


def is_local(backend: str) -> bool:
    """True for the embedded model (catalog kind `local`); False for an unknown name."""
    try:
        return get_capability(backend).kind is BackendKind.local
    except ProviderError:
        return False


def research_config(
    backend: str | None,
    early_quorum: bool,
    concurrency: int | None,
    small_model: bool | None = None,
) -> ResearchConfig:
    """The research settings of `agentport research` (one question or `--batch`)."""
    # Small-model mode is chosen automatically for a local (embedded) model and selectable
    # for any backend; a local model always gets the small-context caps.
    local = backend is not None and is_local(backend)
    small = local if small_model is None else small_model
    overrides: dict[str, Any] = {}
    if early_quorum:
        overrides["early_quorum"] = True
    if concurrency is not None:
        overrides["CONCURRENCY"] = concurrency
    if small:
        return ResearchConfig.for_small_model(**overrides)
    if local:
        return ResearchConfig.for_small_model(small_model=False, **overrides)
    return ResearchConfig(**overrides)
