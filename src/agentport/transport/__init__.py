"""agentport.transport: the one subprocess runner and its pure NDJSON framer.

- `run_process(ProcessRequest, on_frame) -> ProcessResult`: spawn, frame, time out, tear down.
- `LineFramer`, `parse_line`, `Frame`, `LineTooLongError`: pure framing (no I/O).
- `child_env`, `check_argv`: the child's environment (recursion markers, depth counter) and
  the argv-length guard.
- `group_members(pgid)`: live processes of a group (tests assert it is empty after a run).

docs/runner.md describes the behaviour, timeouts and teardown.
"""

from __future__ import annotations

from ._env import DEPTH_ENV, MAX_DEPTH, NESTING_MARKERS, check_argv, child_env
from ._framer import DEFAULT_MAX_LINE_BYTES, Frame, LineFramer, LineTooLongError, parse_line
from ._runner import OnFrame, ProcessRequest, ProcessResult, group_members, run_process

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEPTH_ENV",
    "MAX_DEPTH",
    "NESTING_MARKERS",
    "Frame",
    "LineFramer",
    "LineTooLongError",
    "OnFrame",
    "ProcessRequest",
    "ProcessResult",
    "check_argv",
    "child_env",
    "group_members",
    "parse_line",
    "run_process",
]
