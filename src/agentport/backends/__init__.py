"""agentport.backends: one module per backend, each a `BackendSpec` plus the two factory hooks
`create_adapter(capability, settings)` and `create_runtime(capability, settings)`.

The generic `CliAdapter` / `CliRuntime` drive any spec; adding a CLI backend is one spec module
here and one entry in `agentport.catalog`. Backend modules never import each other.
"""

from __future__ import annotations

from ._cli import CliAdapter, CliRuntime, render_prompt
from ._spec import (
    BackendSpec,
    CliCall,
    Invocation,
    RunOutcome,
    as_dict,
    as_int,
    last_text,
    text_after_last_tool,
)

__all__ = [
    "BackendSpec",
    "CliAdapter",
    "CliCall",
    "CliRuntime",
    "Invocation",
    "RunOutcome",
    "as_dict",
    "as_int",
    "last_text",
    "render_prompt",
    "text_after_last_tool",
]
