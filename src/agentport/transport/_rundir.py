"""Private run folders: where every CLI run's working and scratch folders live.

Not directly under the shared temp directory: agent CLIs discover configuration by walking up
from their working directory (opencode's `opencode.json` and `.opencode/plugin/`, pi's and
opencode's `AGENTS.md`, ...), so a run folder in `/tmp` would read what any other local user
planted in `/tmp`. The base is `$XDG_RUNTIME_DIR/agentport` when that is set (per user, 0700
by the XDG spec), else `<user cache>/agentport/run` (`$XDG_CACHE_HOME`, default
`~/.cache`); it is created 0700, must be a real folder owned by this user, and is made 0700
when it is not. Every folder above it is then one only this user (or root) can write.

When neither can be made (a read-only home), the base falls back to a fresh 0700 folder from
`tempfile.mkdtemp` with a warning, which is no worse than before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

__all__ = ["empty_folder", "private_base", "private_tempdir"]

_LOCK = threading.Lock()
_BASE: Path | None = None


def _candidates() -> list[Path]:
    out = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        out.append(Path(runtime) / "agentport")
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    out.append(Path(cache) / "agentport" / "run")
    return out


def _usable(base: Path) -> bool:
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(base)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return False
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(base, 0o700)
        probe = tempfile.mkdtemp(dir=base)
        os.rmdir(probe)
    except OSError:
        return False
    return True


def private_base() -> Path:
    """The 0700 folder run folders are made in (see the module docstring); chosen once per
    process, checked again when it disappears."""
    global _BASE
    with _LOCK:
        if _BASE is not None and _BASE.is_dir():
            return _BASE
        for base in _candidates():
            if _usable(base):
                _BASE = base
                return base
        fallback = Path(tempfile.mkdtemp(prefix="agentport-run-"))
        warnings.warn(
            f"no private folder for CLI runs under {', '.join(map(str, _candidates()))}; "
            f"using {fallback}",
            RuntimeWarning,
            stacklevel=2,
        )
        _BASE = fallback
        return fallback


@contextlib.contextmanager
def private_tempdir(prefix: str) -> Iterator[Path]:
    """A fresh 0700 folder under `private_base()`, removed afterwards: its files and empty
    folders one call each (the common case: a run's own files and its emptied `work/`), a
    full rmtree when something deeper is left."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=private_base()))
    try:
        yield path
    finally:
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        os.rmdir(entry.path)
                    else:
                        os.unlink(entry.path)
            os.rmdir(path)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)


def empty_folder(folder: Path) -> None:
    """Remove everything inside *folder* (an earlier call's files), keeping the folder; a
    symlink is removed, never followed."""
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
