"""The console scripts: `agentport` (typer, `app`) and `deeprefine` (argparse, `_deeprefine`).

The typer app and its command modules load on first use, so `deeprefine` starts without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

__all__ = ["app", "main"]


def _load_app() -> typer.Typer:
    from . import (
        _batch,  # noqa: F401  (registers `agentport batch`)
        _doctor,  # noqa: F401  (registers `agentport doctor`)
        _mcp,  # noqa: F401  (registers `agentport mcp`)
        _quota,  # noqa: F401  (registers `agentport quota`)
        _refine,  # noqa: F401  (registers `agentport refine`)
        _research,  # noqa: F401  (registers `agentport research`)
        _worker,  # noqa: F401  (registers `agentport worker`)
    )
    from ._app import app

    return app


def main() -> None:
    """Entry point of the `agentport` console script.

    Ctrl-C and SIGTERM stop a command the same way: one "stopping" line at once (stopping
    agent processes can take seconds), then each command's own interrupt handling keeps
    what finished and says how to resume; the exit status is 130 (SIGINT) or 143 (SIGTERM).
    A second signal quits at once."""
    from .._trust import one_line_warnings
    from ._signals import stop_on_signals

    one_line_warnings()
    _load_app()
    from ._app import main as run

    try:
        with stop_on_signals():
            run()
    except SystemExit as done:
        _leave(done)
        raise
    _leave(SystemExit(0))


def _leave(done: SystemExit) -> None:
    """After a command that used a Temporal client, exit without interpreter finalization:
    the client's native runtime threads can still call into Python while it tears down
    (seen as "PyGILState_Release" aborts and segfaults after a batch had completed). What
    the command wrote is flushed first; its work is done."""
    import contextlib
    import os
    import sys

    if "temporalio.client" not in sys.modules:
        return
    code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    if not isinstance(done.code, int | None):  # sys.exit("message") prints it
        from ._out import echo

        echo(str(done.code), err=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def __getattr__(name: str) -> Any:
    if name == "app":
        return _load_app()
    raise AttributeError(f"module 'agentport.cli' has no attribute {name!r}")
