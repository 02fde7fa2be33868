"""Frame a plain-text CLI's stdout as NDJSON: `python _lines.py [--trailer FILE] CMD ARGS...`.

The generic CLI adapter hands only JSON lines to a spec's `decode` (plain lines are kept as
bounded diagnostics), so a CLI without a JSON mode (kiro-cli) runs under this pass-through:
every stdout line, blank or JSON-looking ones included, becomes `{"line": "<text>"}`; stdin and
stderr are inherited; the exit status is the child's (128 + signal when it was killed). The
child stays in our process group, so the runner's group teardown stops both. With
`--trailer FILE`, a JSON file the CLI wrote (hermes' `--usage-file`) is emitted after the child
exits as `{"trailer": <value>}`. With `--document`, the CLI prints one JSON document (zcode's
`--json`, maybe across several lines): the whole of stdout is read and, when it parses, emitted
as one line `{"document": <value>}`; otherwise each line is framed as above.

Reading stops at stdout's EOF, or 0.5 s without output after the child exited: a process the
CLI left running in a session of its own (a tool's server) may hold the pipe open for ever, and
this wrapper must still exit when the CLI does (the runner applies the same rule).

Standard library only and no agentport import: it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["command", "main"]

_MAX_DOCUMENT = 64 << 20  # the runner's longest line
_DRAIN_S = 0.5


def _chunks(child: subprocess.Popen[bytes]) -> Iterator[bytes]:
    """The child's stdout, until EOF or `_DRAIN_S` of silence after the child exited."""
    assert child.stdout is not None
    fd = child.stdout.fileno()
    while True:
        wait = _DRAIN_S if child.poll() is not None else 0.25
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            if child.poll() is not None and wait == _DRAIN_S:
                return
            continue
        data = os.read(fd, 1 << 16)
        if not data:
            return
        yield data


def _lines(chunks: Iterator[bytes], head: bytes = b"") -> Iterator[bytes]:
    """Lines (each with its newline; the last may lack one) of *head* then *chunks*."""
    buffer = head
    for data in chunks:
        buffer += data
        *whole, buffer = buffer.split(b"\n")
        for line in whole:
            yield line + b"\n"
    if buffer:
        yield buffer


def command(
    python: str, argv: list[str], trailer: str | None = None, document: bool = False
) -> list[str]:
    """The argv that runs *argv* under this pass-through with interpreter *python*."""
    extra = ["--trailer", trailer] if trailer else []
    extra += ["--document"] if document else []
    return [python, "-I", "-S", __file__, *extra, *argv]


def _frame(out: TextIO, raw: bytes) -> None:
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    out.write(json.dumps({"line": text}, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    trailer, document = None, False
    if argv[:1] == ["--trailer"]:
        trailer, argv = argv[1], argv[2:]
    if argv[:1] == ["--document"]:
        document, argv = True, argv[1:]
    if not argv:
        print("usage: _lines.py CMD [ARGS...]", file=sys.stderr)
        return 2
    try:
        child = subprocess.Popen(argv, stdout=subprocess.PIPE)
    except OSError as exc:
        print(f"cannot start {argv[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    out = sys.stdout
    chunks = _chunks(child)
    head = b""
    if document:
        data = bytearray()
        for chunk in chunks:
            data += chunk
            if len(data) > _MAX_DOCUMENT:  # more: framed as lines, then refused
                break
        try:
            value = json.loads(data)
        except ValueError:
            head = bytes(data)
        else:
            out.write(json.dumps({"document": value}, ensure_ascii=False) + "\n")
            out.flush()
    for raw in _lines(chunks, head):
        _frame(out, raw)
        out.flush()
    code = child.wait()
    if trailer:
        try:
            with open(trailer, encoding="utf-8") as fh:
                value = json.load(fh)
        except (OSError, ValueError):
            pass
        else:
            out.write(json.dumps({"trailer": value}, ensure_ascii=False) + "\n")
            out.flush()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
