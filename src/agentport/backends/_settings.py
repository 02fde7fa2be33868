"""What the factory hands a backend: its own settings, typed and frozen.

A backend never reads `agentport.config` (the layer above it): the factory builds one
`BackendSettings` from the `[llm]` settings for the backend it creates, and the backend sees
only its own `[llm.<backend>]` table and the call defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..core import CompletionConfig

__all__ = ["BackendSettings"]


@dataclass(frozen=True, slots=True)
class BackendSettings:
    """One backend's configuration, as the factory resolved it.

    Attributes:
        defaults: the configured defaults of every call (`[llm]` model, temperature, timeouts,
            IGNORED policy); each call's `CompletionConfig` is merged over them.
        options: the backend's own `[llm.<backend>]` table (read-only; empty when absent).
        warm: `[llm] warm`, idle agent processes kept between calls (None: unset).
        endpoint_from_project: True when the table's endpoint (`base_url`, `api_base`) was
            chosen by a project file, so the user's environment keys must not follow it
            (decided by the config layer, `agentport._trust`).
    """

    defaults: CompletionConfig = field(default_factory=CompletionConfig)
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    warm: int | None = None
    endpoint_from_project: bool = False

    def __post_init__(self) -> None:
        # a copy behind a read-only view: the caller's dict cannot change it afterwards
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
