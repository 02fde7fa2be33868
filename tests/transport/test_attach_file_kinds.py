"""`attach()` reads regular files only (after following a symlink), never more than the cap
plus one byte, and never blocks: a table over every kind of file a path can name."""

from __future__ import annotations

import os
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from agentport import attach
from agentport.core import FilePart, ImagePart
from agentport.core._parts import MAX_PART_BYTES


def _regular(p: Path) -> None:
    p.write_text("hello\n", encoding="utf-8")


def _link_to_regular(p: Path) -> None:
    target = p.with_name("target.txt")
    target.write_text("hello\n", encoding="utf-8")
    p.symlink_to(target)


def _folder(p: Path) -> None:
    p.mkdir()


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _link_to_fifo(p: Path) -> None:
    os.mkfifo(p.with_name("pipe"))
    p.symlink_to(p.with_name("pipe"))


def _dev_zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _socket(p: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(p))  # kept open for the test's life through the module list below
    _SOCKETS.append(server)


def _oversized(p: Path) -> None:
    with p.open("wb") as handle:
        handle.truncate(MAX_PART_BYTES + 1)  # sparse: no 20 MiB written


def _at_the_cap(p: Path) -> None:
    with p.open("wb") as handle:
        handle.truncate(MAX_PART_BYTES)


_SOCKETS: list[socket.socket] = []

# kind -> (how to make it, None when attach must succeed, else words the error says)
KINDS: dict[str, tuple[Callable[[Path], None], str | None]] = {
    "regular": (_regular, None),
    "symlink to regular": (_link_to_regular, None),
    "at the cap": (_at_the_cap, None),
    "folder": (_folder, "is a folder, not a regular file"),
    "fifo": (_fifo, "is a named pipe, not a regular file"),
    "symlink to fifo": (_link_to_fifo, "is a named pipe, not a regular file"),
    "symlink to /dev/zero": (_dev_zero, "is a character device, not a regular file"),
    "socket": (_socket, "is not a regular file"),
    "oversized": (_oversized, f"at most {MAX_PART_BYTES} are read"),
    "dangling symlink": (lambda p: p.symlink_to(p.with_name("gone")), "cannot read"),
}


def _attach_within(path: Path, seconds: float) -> ImagePart | FilePart | BaseException:
    """attach(*path*) in a daemon thread; fails the test if it has not returned in time."""
    box: list[ImagePart | FilePart | BaseException] = []

    def run() -> None:
        try:
            box.append(attach(path))
        except BaseException as exc:  # handed to the test thread
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"attach({path}) still blocked after {seconds} s"
    return box[0]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_attach_of_every_file_kind_answers_at_once(tmp_path: Path, kind: str) -> None:
    make, refusal = KINDS[kind]
    path = tmp_path / "thing"
    make(path)
    try:
        result = _attach_within(path, 30)
    finally:
        for sock in _SOCKETS:
            sock.close()
        _SOCKETS.clear()
    if refusal is None:
        assert isinstance(result, FilePart | ImagePart), result
        return
    assert isinstance(result, ValueError), result
    message = str(result)
    assert re.search(refusal, message), message
    assert message.startswith(f"{path}: ")
    assert "\n" not in message
