"""The reference package's own tests against agentport's `deeprefine`.

deeprefine-cli 0.2.0 ships one test file in its sdist (tests/test_opencode_integration.py:
20 tests of its OpenCode skill, commands and installer). .ci/steps/24-deeprefine-reference
unpacks it; this test runs that file unchanged with pytest, and a conftest of ours points
the three names it uses at agentport: `_run_cli` runs agentport's `deeprefine` script
instead of `python -m deeprefine_skill.cli`, and `SKILL_OPENCODE` / `COMMANDS_DIR` are
agentport's skill files instead of the reference's. The reference itself passes 18 of 20
there (measured by running the file as shipped); agentport must pass at least as many (it
passes all 20).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REFERENCE = Path(
    os.environ.get("AGENTPORT_DEEPREFINE_REFERENCE")
    or Path.home() / ".cache" / "agentport-ci" / "deeprefine-reference"
)
SUITE = REFERENCE / "deeprefine_cli-0.2.0" / "tests" / "test_opencode_integration.py"
REFERENCE_PASSES = 18

_CONFTEST = """
import subprocess
from pathlib import Path

import pytest

from agentport.cli._skills import SKILLS

EXE = {exe!r}


@pytest.fixture(autouse=True)
def _agentport_instead_of_the_reference(request, monkeypatch):
    module = request.module
    monkeypatch.setattr(module, "SKILL_OPENCODE", SKILLS / "SKILL_OPENCODE.md")
    monkeypatch.setattr(module, "COMMANDS_DIR", SKILLS / "opencode-commands")

    def run_cli(*args, cwd=None):
        return subprocess.run(
            [EXE, *args], text=True, cwd=str(cwd or Path.cwd()), capture_output=True
        )

    monkeypatch.setattr(module, "_run_cli", run_cli)
"""


def test_the_reference_suite_passes_on_agentports_deeprefine(tmp_path: Path) -> None:
    if not SUITE.is_file():
        pytest.skip(
            "deeprefine-cli 0.2.0's sdist is not unpacked (.ci/steps/24-deeprefine-reference)"
        )
    pytest.importorskip("yaml", reason="the reference's tests read frontmatter with PyYAML")
    exe = Path(sys.executable).with_name("deeprefine")
    assert exe.is_file(), "agentport's `deeprefine` console script is not installed"
    suite = tmp_path / "tests"
    suite.mkdir()
    shutil.copy(SUITE, suite / SUITE.name)
    (suite / "conftest.py").write_text(_CONFTEST.format(exe=str(exe)), encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env["HOME"] = str(home)  # an installer that ignored --project would write here
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", summary)) else 0
    assert passed >= REFERENCE_PASSES, done.stdout[-3000:]
    assert "failed" not in summary, done.stdout[-3000:]
    assert not any(home.iterdir()), "a --project install wrote into the home folder"
