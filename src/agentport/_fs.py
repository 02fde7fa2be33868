"""Atomic file replacement, shared by every writer in agentport (workflows, caches, reports).

A reader, or a crash (kill -9 included), sees either the old file or the new one, never a torn
one. The new file keeps the mode of the file it replaces; a new file gets the usual
`0o666 & ~umask` (not `mkstemp`'s private 0600).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write"]

_CHUNK = 1 << 20


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write(path: Path, data: bytes | str | BinaryIO) -> None:
    """Replace *path* with *data*: temp file in the same folder, fsync, rename, folder fsync.

    A `str` is written as UTF-8 in bounded chunks; a binary file is copied from its start.
    Creates missing parent folders. Raises `OSError` (the temp file is removed first).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, str):
                for start in range(0, len(data), _CHUNK):
                    handle.write(data[start : start + _CHUNK].encode("utf-8"))
            elif isinstance(data, bytes):
                handle.write(data)
            else:
                data.seek(0)
                while chunk := data.read(_CHUNK):
                    handle.write(chunk)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
