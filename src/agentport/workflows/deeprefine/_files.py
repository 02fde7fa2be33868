"""File plumbing: input errors, atomic writes, the apply lock, project layout.

Every write goes through `atomic_write`: a temp file in the target's directory, `fsync`, then
`os.replace` and a directory `fsync`, so a reader (or a crash, kill -9 included) sees either the
old bytes or the new bytes, never a mix (the reference wrote graph.json in place, F-01).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from returns.result import Failure

from ...core import ErrorKind, ProviderError
from ...transport import (
    append_text,
    atomic_write,
    ensure_real_dir,
    open_lock_file,
    open_regular_input,
    read_regular,
)
from ._constants import OUT_DIR, STATE_DIR

__all__ = [
    "InputError",
    "Layout",
    "append_text",
    "as_failure",
    "atomic_write",
    "ensure_state",
    "find_layout",
    "graph_lock",
    "open_input",
    "read_bytes",
]


class InputError(Exception):
    """Bad input: one line naming the file and field, e.g. `trace.json: retrieval: ...`."""

    def __init__(self, where: str | Path, field: str, message: str) -> None:
        self.where = str(where)
        self.field = field
        text = f"{where}: {field}: {message}" if field else f"{where}: {message}"
        super().__init__(" ".join(text.split("\n")))


def as_failure(exc: InputError) -> Failure[ProviderError]:
    return Failure(ProviderError(ErrorKind.invalid_request, str(exc), details={"field": exc.field}))


def _input_error(path: Path, exc: OSError) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(path, "", "file not found")
    if exc.errno in (errno.EINVAL, errno.ENXIO, errno.EFBIG):  # read_regular's refusals
        return InputError(path, "", exc.strerror or str(exc))
    return InputError(path, "", f"cannot read: {exc.strerror}")


def read_bytes(path: Path, *, limit: int = 512 * 1024 * 1024) -> bytes:
    """The file's bytes, or `InputError` naming the file (missing, unreadable, over `limit`,
    or not a regular file: a graph.json linked to `/dev/zero` or a named pipe is refused
    at once, never read without end or waited on)."""
    try:
        data, _ = read_regular(path, limit)
    except OSError as exc:
        raise _input_error(path, exc) from None
    return data


def open_input(path: Path, *, limit: int = 512 * 1024 * 1024) -> BinaryIO:
    """Open a regular file for reading, or `InputError` naming it (missing, unreadable,
    over `limit`, not a regular file). The handle keeps the inode: later reads see these
    bytes even after a rename over it."""
    try:
        fd = open_regular_input(path)
    except OSError as exc:
        raise _input_error(path, exc) from None
    handle = os.fdopen(fd, "rb")
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        handle.close()
        raise InputError(path, "", f"file is {size} bytes; the limit is {limit}")
    return handle


def ensure_state(state_dir: Path) -> Path:
    """*state_dir* (`.deeprefine/`) as a real folder owned by the user, created private
    (0700) when missing; its parent too when that is `graphify-out/`. `OSError` otherwise,
    so a cloned repository's symlinked state folder is never written through."""
    if state_dir.parent.name == OUT_DIR and os.path.lexists(state_dir.parent):
        ensure_real_dir(state_dir.parent, create=False)
    return ensure_real_dir(state_dir, mode=0o700)


@contextlib.contextmanager
def graph_lock(state_dir: Path, timeout_s: float = 60.0) -> Iterator[None]:
    """Exclusive `flock` on `<state_dir>/graph.lock` so two refinements never interleave their
    read-review-write of graph.json. The kernel drops the lock when the holder dies (kill -9)."""
    ensure_state(state_dir)
    fd = open_lock_file(state_dir / "graph.lock")
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    raise InputError(
                        state_dir / "graph.lock", "", "another refinement holds the lock"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the flock


@dataclass(frozen=True, slots=True)
class Layout:
    """Where things live. `root` is the project root (parent of `graphify-out/`), which is
    also where graphify's `source_file` paths usually start (reference section 1.1)."""

    root: Path

    @property
    def out_dir(self) -> Path:
        return self.root / OUT_DIR

    @property
    def graph(self) -> Path:
        return self.out_dir / "graph.json"

    @property
    def state(self) -> Path:
        return self.out_dir / STATE_DIR

    @property
    def history(self) -> Path:
        return self.state / "history.jsonl"

    @property
    def memory(self) -> Path:
        return self.out_dir / "memory"

    def graph_mode(self) -> int | None:
        """The graph's permission bits (state and backups keep them), None when absent."""
        try:
            return stat.S_IMODE(self.graph.stat().st_mode)
        except OSError:
            return None

    @property
    def backup(self) -> Path:
        return self.state / "graph.json.bak"

    def trace_path(self, query_id: str) -> Path:
        return self.state / f"loop_trace_{query_id}.json"

    def actions_path(self, query_id: str) -> Path:
        return self.state / f"refinement_actions_{query_id}.txt"

    @classmethod
    def for_graph(cls, graph: Path) -> Layout:
        """Layout of an explicit graph path `<root>/graphify-out/graph.json`."""
        graph = graph.absolute()
        if graph.parent.name == OUT_DIR:
            return cls(graph.parent.parent)
        return _GraphLayout(graph.parent, graph)


@dataclass(frozen=True, slots=True)
class _GraphLayout(Layout):
    """A graph that does not sit in `graphify-out/`: state lives beside it."""

    graph_file: Path = Path()

    @property
    def out_dir(self) -> Path:
        return self.root

    @property
    def graph(self) -> Path:
        return self.graph_file


def find_layout(start: Path | None = None) -> Layout:
    """Walk up from `start` (default CWD) to the first directory holding
    `graphify-out/graph.json`; if none, the start directory (reference `find_project_root`)."""
    here = (start or Path.cwd()).absolute()
    for candidate in (here, *here.parents):
        if (candidate / OUT_DIR / "graph.json").is_file():
            return Layout(candidate)
    return Layout(here)
