"""Node.js-based CLIs: keep a large answer whole when stdout is a pipe.

Observed with qwen-code 0.15.10 (Node 20): written to a pipe, a stream-json answer of 1 MiB
or more was cut off at exit (the CLI exits before Node has flushed its non-blocking pipe
writes), so the final lines were lost and the run looked empty; written to a file it was
complete. Making the stdio handles blocking before the CLI's own code runs (a `--require`
preload through `NODE_OPTIONS`) keeps every byte; a slow reader then only applies
back-pressure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["blocking_stdio_env"]

_PRELOAD = (
    "// agentport: blocking stdout/stderr so output is not lost at exit\n"
    "for (const s of [process.stdout, process.stderr]) {\n"
    "  const h = s && s._handle;\n"
    "  if (h && typeof h.setBlocking === 'function') h.setBlocking(true);\n"
    "}\n"
)


def blocking_stdio_env(run_dir: Path, user_env: Mapping[str, object] | None) -> dict[str, str]:
    """`{"NODE_OPTIONS": ...}` adding a preload that makes stdout/stderr blocking, after any
    `NODE_OPTIONS` the user set (in the `env` option, else the process environment). The
    preload file is written into *run_dir*."""
    preload = run_dir / "agentport-blocking-stdio.cjs"
    preload.write_text(_PRELOAD, encoding="utf-8")
    configured = (user_env or {}).get("NODE_OPTIONS")
    existing = str(configured) if configured is not None else os.environ.get("NODE_OPTIONS", "")
    # NODE_OPTIONS accepts double-quoted values; json.dumps quotes and escapes the path.
    option = f"--require {json.dumps(str(preload))}"
    return {"NODE_OPTIONS": f"{existing} {option}".strip()}
