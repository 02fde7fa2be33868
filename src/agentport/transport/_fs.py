"""Safe file writes, shared by every writer in agentport (workflows, caches, reports).

`atomic_write`: a reader, or a crash (kill -9 included), sees either the old file or the new
one, never a torn one. The new file keeps the mode of the file it replaces (or the `mode`
asked for); a new file gets the usual `0o666 & ~umask` (not `mkstemp`'s private 0600). A
symlink in the target's place is replaced, never followed.

`append_text` and `open_lock_file` open with `O_NOFOLLOW` and refuse anything but a regular
file, and `ensure_real_dir` refuses a folder that is a symlink or belongs to another user: a
cloned repository cannot point agentport's state files at, say, a shell start-up file.
Refusals are `OSError`s whose `filename` names the path and `strerror` says why.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "append_text",
    "atomic_write",
    "check_writable",
    "ensure_private_dir",
    "ensure_real_dir",
    "open_lock_file",
    "open_regular_input",
    "read_regular",
]

_CHUNK = 1 << 20


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _mode_for(path: Path) -> int:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return 0o666 & ~_umask()
    if stat.S_ISLNK(info.st_mode):  # the link is replaced; its target's mode is not ours
        return 0o666 & ~_umask()
    return stat.S_IMODE(info.st_mode)


def _refuse(path: Path, why: str, code: int = errno.ELOOP) -> OSError:
    return OSError(code, why, str(path))


def ensure_real_dir(path: Path, *, mode: int = 0o777, create: bool = True) -> Path:
    """*path* as a real folder owned by this user, created (parents too) with *mode* when
    missing and *create*. `OSError` when it is a symlink, not a folder, or someone else's."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        if not create:
            raise
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=mode)
        info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise _refuse(path, "is a symbolic link; agentport only writes in real folders")
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, "is not a folder", errno.ENOTDIR)
    if info.st_uid != os.geteuid():
        raise _refuse(path, "belongs to another user; refusing to write in it", errno.EPERM)
    return path


def check_writable(folder: Path) -> None:
    """`OSError` naming *folder* unless a file can be created in it (checked by creating and
    removing one): callers check before the first model call, not after it."""
    fd, name = tempfile.mkstemp(prefix=".agentport-probe-", dir=folder)
    os.close(fd)
    os.unlink(name)


def ensure_private_dir(path: Path) -> Path:
    """*path* as a state folder: a real folder of this user's (`ensure_real_dir`), created
    0700. `OSError` naming it when another user can write in it (group- or world-writable):
    state files there could be replaced under us."""
    ensure_real_dir(path, mode=0o700)
    if stat.S_IMODE(path.lstat().st_mode) & 0o022:
        raise _refuse(
            path, "can be written by other users; refusing it as a state folder (chmod 700)",
            errno.EPERM,
        )  # fmt: skip
    return path


def _kind(mode: int) -> str:
    """What a non-regular file is, for a refusal line."""
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return f"is {name}, not a regular file"
    return "is not a regular file"


def _open_regular(
    path: Path, flags: int, mode: int, *, follow: bool = False, verb: str = "write to"
) -> int:
    """A blocking descriptor on the regular file *path*; checked on the opened descriptor
    (`fstat`), so what is checked is what is read or written. O_NONBLOCK on the open keeps a
    named pipe without a peer from hanging us."""
    nofollow = 0 if follow else os.O_NOFOLLOW
    try:
        fd = os.open(path, flags | nofollow | os.O_CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(path, "is a symbolic link; refusing to follow it") from None
        if exc.errno == errno.ENXIO:  # a fifo with no peer, or a socket
            raise _refuse(
                path, f"is not a regular file; refusing to {verb} it", exc.errno
            ) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _refuse(path, f"{_kind(info.st_mode)}; refusing to {verb} it", errno.EINVAL)
    os.set_blocking(fd, True)
    return fd


def open_regular_input(path: Path) -> int:
    """A blocking read-only descriptor on *path* once it is known to be a regular file (a
    symlink followed); the caller bounds what it reads. `OSError` as `read_regular`."""
    return _open_regular(path, os.O_RDONLY, 0, follow=True, verb="read")


def read_regular(path: Path, limit: int, *, follow: bool = True) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file *path* (at most *limit*) and the `fstat` of the very
    descriptor they were read from (its identity: `st_dev`, `st_ino`).

    Never blocks and never reads more than *limit* + 1 bytes: a folder, a named pipe, a
    socket or a device (`/dev/zero` too, behind a symlink) is refused before any read.
    *follow* False refuses a symlink in the last component. Raises `OSError` whose `filename`
    names *path* and `strerror` says why (`EFBIG` when the file is over *limit*)."""
    fd = _open_regular(path, os.O_RDONLY, 0, follow=follow, verb="read")
    with os.fdopen(fd, "rb") as handle:  # closed on every path, refusals included
        info = os.fstat(handle.fileno())
        if info.st_size > limit:
            raise _refuse(path, f"is {info.st_size} bytes; at most {limit} are read", errno.EFBIG)
        data = handle.read(limit + 1)  # a file grown since the fstat stops here too
    if len(data) > limit:
        raise _refuse(path, f"is over {limit} bytes; at most {limit} are read", errno.EFBIG)
    return data, info


def append_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Append *text* (UTF-8) to *path*, created with *mode* (default `0o666 & ~umask`).
    Refuses a symlink, a fifo, a device: `OSError`."""
    fd = _open_regular(
        path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666 if mode is None else mode
    )
    with os.fdopen(fd, "ab") as handle:
        handle.write(text.encode("utf-8"))


def open_lock_file(path: Path, *, mode: int = 0o644) -> int:
    """A read-write descriptor on *path* (created with *mode*) for `flock`; refuses a
    symlink or anything but a regular file (`OSError`)."""
    return _open_regular(path, os.O_RDWR | os.O_CREAT, mode)


def atomic_write(
    path: Path, data: bytes | str | BinaryIO, *, mode: int | None = None, durable: bool = True
) -> None:
    """Replace *path* with *data*: temp file in the same folder, fsync, rename, folder fsync.

    A `str` is written as UTF-8 in bounded chunks; a binary file is copied from its start.
    *mode* (e.g. the graph's, for its backup) beats the mode of the file replaced.
    *durable* False skips both fsyncs, for advisory snapshots written on every call (readers
    still see the old file or the new one, never a mix; a power cut may lose the last one).
    Creates missing parent folders. Raises `OSError` (the temp file is removed first).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(path) if mode is None else mode
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
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_dir(path.parent)
