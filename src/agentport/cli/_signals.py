"""Ctrl-C and SIGTERM end a command alike (`stop_on_signals`).

A service manager, `timeout` or a container runtime stops a process with SIGTERM; Python's
default for it ends the process at once, so a research run lost the line that says its
finished calls are kept and how to resume. Both signals become `KeyboardInterrupt` here, which
every long command already handles; the exit status keeps the signal's own number (128 + n).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from ._out import echo

__all__ = ["stop_on_signals"]

_STOPPING = b"agentport: stopping (press Ctrl-C again to quit at once)\n"


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Run the body with SIGINT and SIGTERM raising `KeyboardInterrupt` after one line on
    stderr; a second signal exits at once with 128 + its number. A `SystemExit(130)` or an
    uncaught `KeyboardInterrupt` leaving the body after SIGTERM exits 143."""
    got: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if got:  # the user asked twice: do not wait for the children to stop
            os._exit(128 + signum)
        got.append(signum)
        with contextlib.suppress(OSError, ValueError):  # stderr closed: stop all the same
            os.write(sys.stderr.fileno(), _STOPPING)
        raise KeyboardInterrupt

    # a signal the parent set to ignored stays ignored (a shell's background job, nohup)
    wanted = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) != signal.SIG_IGN]
    previous = {sig: signal.signal(sig, handler) for sig in wanted}
    try:
        yield
    except KeyboardInterrupt:  # a command without its own handling: one line, no traceback
        echo("agentport: interrupted", err=True)
        raise SystemExit(128 + (got[0] if got else signal.SIGINT)) from None
    except SystemExit as exc:
        if got and exc.code == 128 + signal.SIGINT and got[0] == signal.SIGTERM:
            raise SystemExit(128 + signal.SIGTERM) from None
        raise
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
