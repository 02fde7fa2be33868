"""A file the user names (the user config through `AGENTPORT_CONFIG_FILE`, a research
`--out`, codex's own config) that is a named pipe or a device is refused at once with one
line naming it; nothing blocks waiting for a writer, and no device is replaced by a report.
Run as the user runs it: the installed command in a subprocess, with a deadline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentport.backends._policy import codex_config_env


def _agentport(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentport", *args],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,  # a blocked open would hang forever; the deadline turns it into a failure
    )


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_user_config_that_is_a_named_pipe_is_refused(fifo: Path, tmp_path: Path) -> None:
    done = _agentport(["config"], {"AGENTPORT_CONFIG_FILE": str(fifo)}, tmp_path)
    assert done.returncode == 2
    assert f"{fifo}: is a named pipe" in done.stderr


@pytest.mark.parametrize("target", ["fifo", "/dev/null"])
def test_research_out_that_is_not_a_regular_file_is_refused_before_any_call(
    target: str, fifo: Path, tmp_path: Path
) -> None:
    out = str(fifo) if target == "fifo" else target
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nThe answer is 42.\n", encoding="utf-8")
    done = _agentport(
        ["research", "What is the answer?", "--backend", "echo", "--corpus", str(corpus),
         "--out", out],
        {"XDG_CACHE_HOME": str(tmp_path / "cache")},
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"{out}: is not a regular file" in done.stderr
    assert Path(out).exists()
    assert not Path(out).is_file()


def test_codex_config_that_is_a_named_pipe_names_no_variables(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config.toml")
    assert codex_config_env(str(tmp_path)) == ()
