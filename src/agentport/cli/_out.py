"""The one way the command-line tools print: `echo` writes text through `core.printable`,
so an answer, a server's error body, a CLI's stderr, a web page's title or a label from a
project file reaches the terminal without escape sequences (window title, clipboard
writes), a CR that overwrites the line, or bidi overrides. It imports no CLI framework, so
the `deeprefine` script (argparse) stays as light as it was."""

from __future__ import annotations

import sys

from ..core import printable

__all__ = ["echo"]


def echo(text: object = "", *, err: bool = False, nl: bool = True) -> None:
    """Print *text* (`str()` of it) on stdout, or stderr with *err*, terminal-safe; LF kept
    (multi-line output), every other control escaped or removed (`core.printable`). A closed
    stream (stdout of a finished pipe, `>&-`) prints nothing instead of raising."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    try:
        stream.write(printable(str(text)) + ("\n" if nl else ""))
        stream.flush()
    except (BrokenPipeError, ValueError):  # the reader went away, or the stream is closed
        pass
