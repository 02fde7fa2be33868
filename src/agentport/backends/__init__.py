"""agentport.backends: one module per backend. A CLI backend module is one `BackendSpec` named
`SPEC` (the factory builds `CliAdapter` / `CliRuntime` from it); the others (acp, openai_compat,
litellm, local) expose `create_adapter(capability, settings)` / `create_runtime(...)`, where
*settings* is the backend's own `BackendSettings` (a backend never reads `agentport.config`).

Internal to agentport, with no stability promise (the public modules: docs/architecture.md,
"Public API"): `__all__` is what the other layers of agentport use.

The generic `CliAdapter` / `CliRuntime` drive any spec; adding a CLI backend is one spec module
here and one entry in `agentport.catalog`. Backend modules never import each other.
"""

from __future__ import annotations

from ._cli import CliAdapter
from ._cli_runtime import CliRuntime
from ._settings import BackendSettings
from ._spec import (
    BackendSpec,
    CliCall,
    Invocation,
    RunOutcome,
    as_dict,
    as_int,
    last_text,
    render_prompt,
    text_after_last_tool,
)

__all__ = [
    "BackendSettings",
    "BackendSpec",
    "CliAdapter",
    "CliCall",
    "CliRuntime",
    "Invocation",
    "RunOutcome",
]
