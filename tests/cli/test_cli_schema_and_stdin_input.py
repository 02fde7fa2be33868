"""`agentport complete` with input a user can get wrong: every `--schema` that is not a
small UTF-8 JSON file (binary bytes, a named pipe, a folder, a file over the cap) and `-`
with standard input closed end in one `agentport: ...` line naming it, exit 2, never a
traceback or a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(args: list[str], cwd: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys; from agentport.cli import main; "
        "sys.argv = ['agentport', *sys.argv[1:]]; main()"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
        timeout=60, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["binary", "fifo", "folder", "huge"])
def test_a_bad_schema_file_is_one_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "schema.json"
    if kind == "binary":
        path.write_bytes(b"\xff\xfe\x00")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"{" + b" " * (5 * 1024 * 1024) + b"}")
    done = _run(["complete", "hi", "--backend", "echo", "--schema", str(path)], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("agentport: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "schema.json" in done.stderr


def test_a_dash_prompt_with_stdin_closed_is_one_line(tmp_path: Path) -> None:
    done = _run(["complete", "-", "--backend", "echo"], tmp_path, stdin=subprocess.DEVNULL,
                preexec_fn=lambda: os.close(0))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "standard input is closed" in done.stderr
