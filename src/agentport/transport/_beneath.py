"""The path authority: a path someone else named is a root plus components walked beneath it.

A Temporal worker (and any server) touches files named by input it does not trust: another
client of the namespace writes that input. Every such file goes through here:

- `Roots.locate(text, what)` accepts only an absolute, normalised path (no `..`, no `.`, no
  `//`, no NUL) that lies lexically under one of the roots, and returns a `Rooted`;
- `Rooted.child(name)` appends one validated file name (`safe_name`: no `/`, not `.` or
  `..`, no NUL): a request's id joined to a folder can never climb out of it;
- every operation walks the components from an open descriptor of the root with
  `O_NOFOLLOW`, one `openat` at a time, so a symbolic link anywhere below the root (planted
  before the call or swapped in during it) is refused, never followed. `write_text` writes
  through that walk (temp file created `O_EXCL | O_NOFOLLOW` in the parent descriptor, then
  `renameat`), `read_text` reads through it (regular files only, bounded), `check` walks
  the components that exist so a path-based library call can follow.

Refusals are `PathRefused` (a `ValueError`) whose `str` is one line naming the path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PathRefused", "Rooted", "Roots", "descend", "link_refusal", "safe_name"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_NAME_BYTES = 255
_MAX_PATH_BYTES = 4096


class PathRefused(ValueError):
    """A path outside the roots, not normalised, or through a symbolic link."""

    def __init__(self, path: object, why: str) -> None:
        super().__init__(f"{path!s}: {why}")
        self.path = str(path)
        self.why = why


def safe_name(name: str, what: str = "name") -> str:
    """*name* when it is one file name (non-empty, at most 255 bytes, no `/`, no NUL, not
    `.` or `..`); else `PathRefused` naming it."""
    if not isinstance(name, str) or not name:
        raise PathRefused(repr(name), f"{what} must be a non-empty file name")
    if "/" in name or "\0" in name or name in (".", ".."):
        raise PathRefused(repr(name), f"{what} must be one file name (no '/', NUL, '.' or '..')")
    if len(name.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES:
        raise PathRefused(repr(name[:40]), f"{what} is longer than {_MAX_NAME_BYTES} bytes")
    return name


@dataclass(frozen=True)
class Roots:
    """The folders a worker serves, as real absolute paths (`Roots.of`)."""

    paths: tuple[Path, ...]

    @classmethod
    def of(cls, folders: Iterable[str | Path]) -> Roots:
        """Each folder resolved once, at start (`OSError` naming one that is not a folder)."""
        real: list[Path] = []
        for folder in folders:
            path = Path(os.path.realpath(folder))
            if not path.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "is not a folder", str(folder))
            real.append(path)
        return cls(tuple(real))

    def locate(self, text: str | Path, what: str = "path") -> Rooted:
        """*text* as a `Rooted` under the root that holds it. `PathRefused` when it is not
        an absolute normalised path under one of the roots."""
        text = str(text)
        if "\0" in text:
            raise PathRefused(repr(text), f"{what} holds a NUL byte")
        if len(text.encode("utf-8", "surrogatepass")) > _MAX_PATH_BYTES:
            raise PathRefused(repr(text[:60]), f"{what} is longer than {_MAX_PATH_BYTES} bytes")
        if not text.startswith("/") or text.startswith("//"):
            raise PathRefused(text, f"{what} must be an absolute path")
        if os.path.normpath(text) != text:
            raise PathRefused(text, f"{what} must be a normalised path (no '..', '.' or '//')")
        for root in self.paths:
            base = str(root)
            if text == base:
                return Rooted(root, ())
            prefix = base if base.endswith("/") else base + "/"
            if text.startswith(prefix):
                return Rooted(root, tuple(text[len(prefix) :].split("/")))
        roots = ", ".join(map(str, self.paths)) or "none"
        raise PathRefused(text, f"{what} is outside the allowed roots ({roots})")


@dataclass(frozen=True)
class Rooted:
    """A root and the components below it (each a `safe_name`)."""

    root: Path
    parts: tuple[str, ...]

    def __post_init__(self) -> None:
        for part in self.parts:
            safe_name(part, "path component")

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts)

    def __str__(self) -> str:
        return str(self.path)

    def child(self, name: str, what: str = "file name") -> Rooted:
        """This folder's entry *name* (`safe_name`)."""
        return Rooted(self.root, (*self.parts, safe_name(name, what)))

    def within(self, other: Rooted) -> bool:
        """Whether this path is *other* or lies below it."""
        return self.root == other.root and self.parts[: len(other.parts)] == other.parts

    @contextlib.contextmanager
    def _parent(self, *, create: bool) -> Iterator[int | None]:
        """A descriptor of the folder holding the last component, walked with `O_NOFOLLOW`;
        None when a folder on the way does not exist (and not *create*)."""
        folders = self.parts[:-1]
        with descend(self.root, folders, create=create) as chain:
            yield chain[-1] if len(chain) == len(folders) + 1 else None

    def check(self, *, kind: str = "any") -> Path:
        """Walk the components that exist (none may be a symbolic link) and return the
        path for a path-based call. *kind*: `file` / `dir` when it must exist as one,
        `any` when it may be missing. `PathRefused` otherwise."""
        if not self.parts:
            return self.root
        with self._parent(create=False) as parent:
            if parent is None:
                info = None
            else:
                try:
                    info = os.stat(self.parts[-1], dir_fd=parent, follow_symlinks=False)
                except FileNotFoundError:
                    info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise PathRefused(self, "is a symbolic link; refusing to follow it")
        want = {"file": stat.S_ISREG, "dir": stat.S_ISDIR}.get(kind)
        if want is not None and (info is None or not want(info.st_mode)):
            raise PathRefused(self, "does not exist" if info is None else f"is not a {kind}")
        return self.path

    def read_text(self, limit: int = 64 << 20) -> str | None:
        """The file's text (UTF-8, at most *limit* bytes), None when it does not exist.
        `PathRefused` for a symbolic link or anything but a regular file."""
        if not self.parts:
            raise PathRefused(self, "is a folder, not a file")
        with self._parent(create=False) as parent:
            if parent is None:
                return None
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            try:
                fd = os.open(self.parts[-1], flags, dir_fd=parent)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise _refusal(self, exc) from None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise PathRefused(self, "is not a regular file")
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise PathRefused(self, f"is larger than {limit} bytes")
        return data.decode("utf-8", "replace")

    def write_text(self, text: str, *, mode: int | None = None) -> None:
        """Replace the file with *text* (UTF-8) atomically: missing folders made on the
        way, a temp file created `O_EXCL | O_NOFOLLOW` beside it, fsync, `renameat`. An
        existing file keeps its mode; a symbolic link in its place is replaced, never
        followed. `PathRefused` for a link on the way; `OSError` as the system says."""
        if not self.parts:
            raise PathRefused(self, "is a folder, not a file")
        name = self.parts[-1]
        with self._parent(create=True) as parent:
            assert parent is not None
            if mode is None:
                mode = _existing_mode(name, parent)
            tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(tmp, flags, 0o600, dir_fd=parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(text.encode("utf-8", "surrogatepass"))
                    handle.flush()
                    os.fchmod(handle.fileno(), mode)
                    os.fsync(handle.fileno())
                os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=parent)
                raise
            with contextlib.suppress(OSError):
                os.fsync(parent)


@contextlib.contextmanager
def descend(base: Path, parts: Sequence[str], *, create: bool) -> Iterator[list[int]]:
    """Descriptors on *base* (opened as given) and on each folder of *parts* below it,
    opened one `openat` at a time with `O_NOFOLLOW` (made, mode 0o777 less the umask, when
    missing and *create*). Fewer descriptors than `len(parts) + 1` when one is missing.
    `PathRefused` naming the component that is a symbolic link (and where it points) or no
    folder. Every walk below a root, the worker's and the skill installers', is this one."""
    chain = [os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    try:
        for index, name in enumerate(parts):
            try:
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=chain[-1])
                except FileNotFoundError:
                    if not create:
                        break
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=chain[-1])
                    child = os.open(name, _DIR_FLAGS, dir_fd=chain[-1])
            except OSError as exc:
                where = base.joinpath(*parts[: index + 1])
                raise (link_refusal(chain[-1], name, where) or _refusal(where, exc)) from None
            chain.append(child)
        yield chain
    finally:
        for fd in chain:
            os.close(fd)


def link_refusal(dirfd: int, name: str, where: object) -> PathRefused | None:
    """The refusal for entry *name* of folder *dirfd* (shown as *where*) when it is a
    symbolic link, naming where it points; None otherwise (missing included)."""
    try:
        info = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISLNK(info.st_mode):
        return None
    to = os.readlink(name, dir_fd=dirfd)
    return PathRefused(where, f"is a symbolic link (to {to}); refusing to follow it")


def _refusal(where: object, exc: OSError) -> PathRefused | OSError:
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return PathRefused(where, "is a symbolic link; refusing to follow it")
    if exc.errno == errno.ENOTDIR:
        return PathRefused(where, "is not a folder (or is a symbolic link)")
    if exc.errno == errno.ENXIO:
        return PathRefused(where, "is not a regular file")
    return exc


def _existing_mode(name: str, parent: int) -> int:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    if info is None or stat.S_ISLNK(info.st_mode):
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
    return stat.S_IMODE(info.st_mode)
