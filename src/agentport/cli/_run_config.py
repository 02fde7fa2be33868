"""What a research or refine command runs on: the backend it resolves to and the research
settings it gets (shared by `agentport research` and its `--batch` form)."""

from __future__ import annotations

from typing import Any

from ..core import ProviderError
from ..workflows.deep_research import ResearchConfig, research_config_for

__all__ = ["research_config", "resolved_backend"]


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


def research_config(
    backend: str | None,
    early_quorum: bool,
    concurrency: int | None,
    small_model: bool | None = None,
    rounds: int | None = None,
) -> ResearchConfig:
    """The research settings of `agentport research` (one question or `--batch`): the
    flags over `research_config_for` (small-model mode chosen automatically for a local
    model and selectable for any backend)."""
    overrides: dict[str, Any] = {}
    if early_quorum:
        overrides["early_quorum"] = True
    if concurrency is not None:
        overrides["CONCURRENCY"] = concurrency
    if rounds is not None:
        overrides["rounds"] = rounds
    return research_config_for(backend, small_model=small_model, **overrides)
