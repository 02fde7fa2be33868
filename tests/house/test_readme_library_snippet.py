"""README's "Library use" snippet, run as a user copies it: a setup problem (no backend, an
unknown one, a missing extra) ends in one `agentport: ...` line and exit 1, never a
traceback; a failure during the call is printed from the `Failure` branch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import ROOT


def _snippet() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Library use", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block is not None, "README.md: no python block under '## Library use'"
    return block.group(1)


def _run(tmp_path: Path, backend: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env |= {
        "AGENTPORT_LLM_BACKEND": backend,
        "AGENTPORT_CONFIG_FILE": str(tmp_path / "none.toml"),
        "AGENTPORT_STATE_DIR": str(tmp_path / "state"),
        "PATH": os.path.dirname(sys.executable),  # no agent CLI on PATH
        "HOME": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, "-c", _snippet()],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("backend", ["nosuch", "codex|nosuch"])
def test_a_setup_problem_is_one_line_not_a_traceback(tmp_path: Path, backend: str) -> None:
    done = _run(tmp_path, backend)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("agentport: "), done.stderr
    assert done.stderr.count("\n") <= 1, done.stderr
    assert "nosuch" in done.stderr


def test_a_backend_that_is_not_installed_prints_the_failure(tmp_path: Path) -> None:
    done = _run(tmp_path, "codex")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.startswith("not_installed "), done.stdout
