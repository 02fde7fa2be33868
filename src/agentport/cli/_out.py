"""The one way the command-line tools print: `echo` writes text through `core.printable`,
so an answer, a server's error body, a CLI's stderr, a web page's title or a label from a
project file reaches the terminal without escape sequences (window title, clipboard
writes), a CR that overwrites the line, or bidi overrides."""

from __future__ import annotations

import typer

from ..core import printable

__all__ = ["echo"]


def echo(text: object = "", *, err: bool = False, nl: bool = True) -> None:
    """Print *text* (`str()` of it) on stdout, or stderr with *err*, terminal-safe; LF kept
    (multi-line output), every other control escaped or removed (`core.printable`)."""
    typer.echo(printable(str(text)), err=err, nl=nl)
