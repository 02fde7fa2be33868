"""`deeprefine <agent> install|uninstall` for every agent the reference supports, as a
user runs them (the console script, in a project folder, HOME private): the skill lands
where the agent reads it, twice is the same as once, uninstall removes exactly what install
wrote, and deeprefine-cli installed beside agentport is named, not silently swapped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentport.cli._deeprefine import command_owner
from agentport.cli._skills import AGENTS

EXE = Path(sys.executable).with_name("deeprefine")
SKILL_DIRS = {
    "cursor": ".cursor/skills/deeprefine",
    "copilot": (".github/skills/deeprefine", ".copilot/skills/deeprefine"),
    "codex": (".agents/skills/deeprefine", ".codex/skills/deeprefine"),
    "claude": ".claude/skills/deeprefine",
    "opencode": ".opencode/skills/deeprefine",
}


def _run(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env["HOME"] = str(home)
    return subprocess.run([str(EXE), *args], cwd=cwd, env=env, capture_output=True, text=True)


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_install_is_idempotent_and_uninstall_leaves_nothing(
    places: tuple[Path, Path], agent: str, scope: str
) -> None:
    project, home = places
    base, other = (project, home) if scope == "--project" else (home, project)
    dirs = SKILL_DIRS[agent]
    folder = dirs if isinstance(dirs, str) else dirs[scope == "--user"]
    (base / "keep.txt").write_text("mine")  # a file of the user's, never touched
    first = _run(agent, "install", scope, cwd=project, home=home)
    assert first.returncode == 0, first.stderr
    skill = base / folder / "SKILL.md"
    assert skill.read_text(encoding="utf-8").startswith("---\nname: deeprefine\n")
    after_one = _tree(base)
    assert _run(agent, "install", scope, cwd=project, home=home).returncode == 0
    assert _tree(base) == after_one, "a second install changed what the first wrote"
    assert not any(other.iterdir()), f"{scope} install wrote outside its folder"
    done = _run(agent, "uninstall", scope, cwd=project, home=home)
    assert done.returncode == 0, done.stderr
    assert _tree(base) == {"keep.txt"}
    again = _run(agent, "uninstall", scope, cwd=project, home=home)
    assert again.returncode == 0
    assert "nothing to remove" in again.stdout


def test_uninstall_keeps_a_command_the_user_wrote(places: tuple[Path, Path]) -> None:
    project, home = places
    assert _run("opencode", "install", cwd=project, home=home).returncode == 0
    mine = project / ".opencode" / "commands" / "mine.md"
    mine.write_text("my command")
    assert _run("opencode", "uninstall", cwd=project, home=home).returncode == 0
    assert mine.read_text() == "my command"
    assert not (project / ".opencode" / "skills").exists()


def test_plain_install_is_the_cursor_install(places: tuple[Path, Path]) -> None:
    project, home = places
    assert _run("install", cwd=project, home=home).returncode == 0
    assert (project / ".cursor/skills/deeprefine/SKILL.md").is_file()
    assert _run("uninstall", cwd=project, home=home).returncode == 0
    assert _tree(project) == set()


def test_gemini_extension_install_and_uninstall(places: tuple[Path, Path]) -> None:
    project, home = places
    assert _run("gemini", "install", "--no-consent", cwd=project, home=home).returncode == 0
    ext = home / ".gemini" / "extensions" / "deeprefine"
    assert (ext / "gemini-extension.json").is_file()
    assert not (ext / "GEMINI.md").read_text(encoding="utf-8").startswith("---")
    path = _run("gemini", "path", cwd=project, home=home)
    assert path.stdout.strip() == str(ext)
    assert _run("gemini", "uninstall", cwd=project, home=home).returncode == 0
    assert not ext.exists()


def test_deeprefine_cli_beside_agentport_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "site" / "deeprefine_cli-0.2.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: deeprefine-cli\nVersion: 0.2.0\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "deeprefine"
    script.write_text("#!/bin/sh\n# from deeprefine_skill.cli import main\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    assert command_owner() == ("deeprefine-cli", None), "no clash without the package"
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    owner, clash = command_owner()
    assert owner == "deeprefine-cli"
    assert clash is not None
    assert "agentport-deeprefine" in clash
