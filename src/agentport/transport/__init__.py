"""agentport.transport: the one subprocess runner and its pure NDJSON framer.

Internal to agentport, with no stability promise (the public modules: docs/architecture.md,
"Public API"): `__all__` is what the other layers of agentport use.

- `run_process(ProcessRequest, on_frame) -> ProcessResult`: spawn (under a guardian that kills
  the CLI's group when this process dies), frame, time out, tear down; `on_stderr_line` ends a
  run at a CLI's retry notice.
- `run_capture(ProcessRequest) -> (ProcessResult, stdout)`: the same for auxiliary commands
  (`--version`, `codex debug models`; `run_capture_sync` for sync callers): no subprocess
  is started outside this runner.
- `LineFramer`, `parse_line`, `Frame`, `LineTooLongError`: pure framing (no I/O).
- `child_env`, `check_argv`: the child's environment (recursion markers, depth counter) and
  the argv-length guard.
- `group_members(pgid)`: live processes of a group (tests assert it is empty after a run).
- `open_guarded(argv, ...)`: start a process under this process's guardian, so it dies with
  this process (the runner and the ACP client); `guard_argv`: a guardian of its own for a
  process started synchronously (the local model worker); `missing_executable`: check first.
- `private_base()`, `private_tempdir(prefix)`: run folders in a 0700 folder of this user's,
  never directly under the shared temp directory (CLIs read config from parent folders);
  `empty_folder(path)`: a warm process's own folder emptied between calls.
- `WarmPool`, `warm_processes(size)`, `current_scope()`, `pool_size`, `call_pool`: warm agent
  processes kept between calls (a bounded pool per configuration, one event loop; a block
  that owns and closes them).
- Shared with the other layers (not the runner itself): the file helpers every layer uses to
  write state (`atomic_write`, `read_regular`, `check_writable`, `ensure_real_dir`, ...:
  never through a symbolic link), the path authority under a worker's roots (`Roots`,
  `Rooted`, `PathRefused`), a long-lived process (`LiveProcess`, `signal_group`,
  `close_at_eof`, `cannot_start`, `total_timeout`) and its stderr notices (`drain`, `Stop`).
- `tls_context()`: the one TLS client context every HTTP client shares (reading the CA bundle
  blocks the event loop).

docs/runner.md describes the behaviour, timeouts and teardown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._beneath import PathRefused, Rooted, Roots, descend, link_refusal
from ._binary import check_binary, identify

if TYPE_CHECKING:
    from ._tool_host import Served, on_caller, serve_functions, serve_mcp
from ._env import DEPTH_ENV, MAX_DEPTH, NESTING_MARKERS, check_argv, child_env
from ._framer import (
    DEFAULT_MAX_LINE_BYTES,
    MAX_JSON_DEPTH,
    Frame,
    LineFramer,
    LineTooLongError,
    NestingTooDeepError,
    parse_line,
)
from ._fs import (
    append_text,
    atomic_write,
    check_writable,
    ensure_private_dir,
    ensure_real_dir,
    open_lock_file,
    open_regular_input,
    read_regular,
)
from ._live import LiveProcess
from ._notices import Stop, drain
from ._rundir import empty_folder, private_base, private_tempdir
from ._runner import (
    DEFAULT_MAX_EVENTS,
    OnFrame,
    OnStderrLine,
    ProcessRequest,
    ProcessResult,
    close_at_eof,
    group_members,
    run_capture,
    run_capture_sync,
    run_process,
    signal_group,
    total_timeout,
)
from ._spawner import cannot_start, guard_argv, missing_executable, open_guarded
from ._tls import tls_context
from ._warm import (
    DEFAULT_MAX_USES,
    WORKFLOW_WARM,
    WarmPool,
    WarmScope,
    call_pool,
    close_shared,
    current_scope,
    pool_size,
    shared_pool,
    warm_processes,
    with_warm_processes,
)

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "DEFAULT_MAX_LINE_BYTES",
    "WORKFLOW_WARM",
    "Frame",
    "LineFramer",
    "LineTooLongError",
    "LiveProcess",
    "OnFrame",
    "PathRefused",
    "ProcessRequest",
    "ProcessResult",
    "Rooted",
    "Roots",
    "Served",
    "Stop",
    "WarmPool",
    "append_text",
    "atomic_write",
    "call_pool",
    "cannot_start",
    "check_binary",
    "check_writable",
    "child_env",
    "close_at_eof",
    "close_shared",
    "descend",
    "drain",
    "empty_folder",
    "ensure_private_dir",
    "ensure_real_dir",
    "guard_argv",
    "identify",
    "link_refusal",
    "missing_executable",
    "on_caller",
    "open_guarded",
    "open_lock_file",
    "open_regular_input",
    "parse_line",
    "pool_size",
    "private_tempdir",
    "read_regular",
    "run_capture",
    "run_capture_sync",
    "run_process",
    "serve_functions",
    "serve_mcp",
    "signal_group",
    "tls_context",
    "total_timeout",
    "warm_processes",
    "with_warm_processes",
]


def __getattr__(name: str) -> Any:
    # the functions server needs the `mcp` extra: loaded on first use, never with the package
    if name in ("Served", "on_caller", "serve_functions", "serve_mcp"):  # the MCP servers
        from . import _tool_host

        return getattr(_tool_host, name)
    raise AttributeError(f"module 'agentport.transport' has no attribute {name!r}")
