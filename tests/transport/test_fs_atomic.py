"""agentport.transport._fs.atomic_write: atomic replacement that keeps file modes."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest

from agentport.transport._fs import atomic_write


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_replacing_a_file_keeps_its_mode(tmp_path: Path) -> None:
    # Regression: mkstemp's 0600 used to replace graph.json's 0644 on every apply.
    target = tmp_path / "graph.json"
    target.write_text("old")
    target.chmod(0o644)
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert _mode(target) == 0o644


def test_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        atomic_write(tmp_path / "sub" / "report.md", b"x")
    finally:
        os.umask(previous)
    assert _mode(tmp_path / "sub" / "report.md") == 0o644


def test_binary_stream_is_copied_from_its_start(tmp_path: Path) -> None:
    source = io.BytesIO(b"abcdef")
    source.read(3)
    atomic_write(tmp_path / "f", source)
    assert (tmp_path / "f").read_bytes() == b"abcdef"


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("old")

    class Boom(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            raise OSError("disk on fire")

    with pytest.raises(OSError, match="disk on fire"):
        atomic_write(target, Boom())
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
