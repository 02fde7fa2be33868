"""The CLI executable a batch runs, pinned per process: a change is a typed failure.

At the first call of a CLI backend the resolved executable is recorded: its path, the chain
of symbolic links to the real file, the real file's sha256 and the version its package
declares (`BinaryInfo`). Before each later call every link of the chain and the real file
are `lstat`ed (device, inode, size, mtime, ctime: no read); when any of them changed the
file is hashed again. The same real file with the same bytes and package version (a `touch`,
a reinstall of the same build) is re-verified and the batch goes on; another file, other
bytes or another package version (an upgrade by the package manager, a retargeted link)
is `ErrorKind.binary_changed`, not retryable, for this and every later call of the process,
unless the caller opted in with `[llm.<backend>] on_binary_change = "reverify"`: then the
new binary is recorded and answers, and the receipt (`CompletionResponse.binary`) names it.
Never a silent switch.

Records are per process, keyed by backend and the executable's absolute path.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

from ..core import BinaryInfo, ErrorKind, ProviderError

__all__ = ["BinaryChange", "check_binary", "forget_binaries", "identify", "link_chain"]

BinaryChange = Literal["fail", "reverify"]
_CHANGES: tuple[str, ...] = ("fail", "reverify")
_MAX_LINKS = 40  # as the kernel's own bound on a path's links (ELOOP)
_MANIFEST_DEPTH = 4  # package.json at most this many folders above the real file

_Stamp = tuple[tuple[int, int, int, int, int], ...]


@dataclass(frozen=True, slots=True)
class _Known:
    info: BinaryInfo
    stamp: _Stamp


_KNOWN: dict[tuple[str, str], _Known] = {}


def forget_binaries() -> None:
    """Drop every record of this process (tests; a long-lived worker told to re-pin)."""
    _KNOWN.clear()


def link_chain(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """*path* made absolute, then each symbolic link's target in turn; the last entry is the
    real file (`os.path.realpath`, so a linked folder on the way is resolved too). Raises
    `OSError` for a loop or a missing target."""
    chain = [os.path.abspath(path)]
    while os.path.islink(chain[-1]):
        if len(chain) > _MAX_LINKS:
            raise OSError(f"{chain[0]}: more than {_MAX_LINKS} symbolic links")
        target = os.readlink(chain[-1])
        chain.append(os.path.normpath(os.path.join(os.path.dirname(chain[-1]), target)))
    real = os.path.realpath(chain[-1])
    if real != chain[-1]:
        chain.append(real)
    os.stat(real)  # a dangling link is an OSError here, not a record of nothing
    return tuple(chain)


def _stamp(chain: tuple[str, ...]) -> _Stamp:
    """What a change leaves on every entry of *chain*, without reading a byte."""
    out = []
    for entry in chain:
        st = os.lstat(entry)
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


def _version(real: str) -> str | None:
    """The version of the npm package the file belongs to: the nearest `package.json` above
    it that names one (npm links `bin/<cli>` into `node_modules/<pkg>/...`)."""
    folder = Path(real).parent
    for _ in range(_MANIFEST_DEPTH):
        manifest = folder / "package.json"
        if manifest.is_file():
            try:
                data: Any = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            version = data.get("version") if isinstance(data, Mapping) else None
            if isinstance(version, str) and version:
                return version
        if folder.parent == folder:
            break
        folder = folder.parent
    return None


def identify(path: str | os.PathLike[str]) -> tuple[BinaryInfo, _Stamp]:
    """The `BinaryInfo` of the executable at *path* and its stamp (reads the whole file).
    Raises `OSError` when it cannot be read."""
    chain = link_chain(path)
    stamp = _stamp(chain)
    with open(chain[-1], "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    info = BinaryInfo(
        path=chain[0], chain=chain, real_path=chain[-1], sha256=digest, version=_version(chain[-1])
    )
    return info, stamp


def _identity(info: BinaryInfo) -> tuple[str, str, str | None]:
    # the version too: an npm CLI's launcher script (codex.js) can keep its bytes across
    # releases while the package beside it, and the native binary it starts, change
    return info.real_path, info.sha256, info.version


def _describe(info: BinaryInfo) -> str:
    version = f" {info.version}" if info.version else ""
    return f"{info.real_path}{version} sha256 {info.sha256[:12]}"


def _changed(backend: str, before: BinaryInfo, after: BinaryInfo | None, why: str) -> ProviderError:
    now = "gone" if after is None else _describe(after)
    return ProviderError(
        ErrorKind.binary_changed,
        f"{before.path} changed since this process first called it ({why}): was "
        f"{_describe(before)}, now {now}; restart the batch, or set [llm.{backend}] "
        'on_binary_change = "reverify" to accept a changed binary',
        backend=backend,
        retryable=False,
        request_sent=False,
        details={
            "before": before.model_dump(mode="json"),
            "after": None if after is None else after.model_dump(mode="json"),
        },
    )


async def check_binary(
    backend: str, path: str, on_change: object = "fail"
) -> BinaryInfo | ProviderError:
    """The checked `BinaryInfo` of *backend*'s executable at *path* (module docstring), or
    the failure: `binary_changed` (another file or other bytes than this process first
    ran, *on_change* `"fail"`), `config` (*on_change* not `"fail"` / `"reverify"`)."""
    if on_change not in _CHANGES:
        return ProviderError(
            ErrorKind.config,
            f"[llm.{backend}] on_binary_change must be one of {', '.join(_CHANGES)} "
            f"(got {on_change!r})",
            backend=backend,
        )
    key = (backend, os.path.join(os.getcwd(), path))  # abspath without its normalising
    known = _KNOWN.get(key)
    if known is not None:
        try:
            if _stamp(link_chain(path)) == known.stamp:
                return known.info  # the cheap path: nothing on the chain moved
        except OSError:
            pass  # gone or unreadable: identify below says which
    try:
        info, stamp = await anyio.to_thread.run_sync(identify, path)
    except OSError as exc:
        if known is None:
            return ProviderError(
                ErrorKind.not_installed, f"{path}: cannot read the executable ({exc})",
                backend=backend, retryable=False,
            )  # fmt: skip
        return _changed(backend, known.info, None, str(exc))
    if known is not None and _identity(info) != _identity(known.info):
        why = (
            "another file"
            if info.real_path != known.info.real_path
            else "other bytes"
            if info.sha256 != known.info.sha256
            else "another package version"
        )
        if on_change != "reverify":
            return _changed(backend, known.info, info, why)
    # first call, the same bytes re-verified, or a change the caller accepts
    _KNOWN[key] = _Known(info, stamp)
    return info
