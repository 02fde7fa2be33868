"""`agentport mcp`: agentport as a Model Context Protocol server (official MCP Python SDK).

Internal to agentport, with no stability promise (the public modules: docs/architecture.md,
"Public API"): `__all__` is what the other layers of agentport use.

Tools: `complete`, `backends`; deep research on a folder or the web as a job
(`research_start`, `research_status`, `research_wait`, `research_result`,
`research_cancel`); DeepRefine (`refine`, `review`, `apply`); research and refine take a
`budget` (the `--budget` spec; a run at a ceiling ends partial, "budget reached"). Paths
are limited to the roots given at start; tool errors are one line `<ErrorKind>: <message>`.
Needs the `agentport[mcp]` extra. See docs/mcp.md.

```python
from agentport.mcp import build_server, serve_stdio

serve_stdio(build_server(roots=["./docs", "./myproject"]))
```
"""

from __future__ import annotations

from ._errors import Roots, ToolFailure
from ._http import SessionLimits, http_app, is_loopback, serve_http
from ._server import build_server, check_bind
from ._stdio import DEFAULT_MAX_MESSAGE_BYTES, serve_stdio

__all__ = [
    "build_server",
    "check_bind",
    "serve_http",
    "serve_stdio",
]
