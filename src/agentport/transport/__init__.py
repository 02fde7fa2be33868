"""agentport.transport: the one subprocess runner and its pure NDJSON framer.

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
- `tls_context()`: the one TLS client context every HTTP client shares (reading the CA bundle
  blocks the event loop).

docs/runner.md describes the behaviour, timeouts and teardown.
"""

from __future__ import annotations

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
from ._rundir import empty_folder, private_base, private_tempdir
from ._runner import (
    DEFAULT_MAX_EVENTS,
    OnFrame,
    OnStderrLine,
    ProcessRequest,
    ProcessResult,
    group_members,
    missing_executable,
    run_capture,
    run_capture_sync,
    run_process,
)
from ._spawner import guard_argv, open_guarded
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
    "DEFAULT_MAX_USES",
    "DEPTH_ENV",
    "MAX_DEPTH",
    "MAX_JSON_DEPTH",
    "NESTING_MARKERS",
    "WORKFLOW_WARM",
    "Frame",
    "LineFramer",
    "LineTooLongError",
    "NestingTooDeepError",
    "OnFrame",
    "OnStderrLine",
    "ProcessRequest",
    "ProcessResult",
    "WarmPool",
    "WarmScope",
    "call_pool",
    "check_argv",
    "child_env",
    "close_shared",
    "current_scope",
    "empty_folder",
    "group_members",
    "guard_argv",
    "missing_executable",
    "open_guarded",
    "parse_line",
    "pool_size",
    "private_base",
    "private_tempdir",
    "run_capture",
    "run_capture_sync",
    "run_process",
    "shared_pool",
    "tls_context",
    "warm_processes",
    "with_warm_processes",
]
