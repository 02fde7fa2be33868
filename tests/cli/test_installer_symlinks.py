"""The skill installers never write or remove through a symbolic link: a cloned repository
(or a home folder) whose `.claude/skills/deeprefine`, `.opencode/commands`, ... is a link to
the user's own files gets a one-line refusal naming the link, and the user's files stay as
they were. Over every installer target and every component of every path it writes; plus
backups of what an install overwrites and an uninstall that removes only its own bytes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from agentport.cli._deeprefine import main
from agentport.cli._skills import AGENTS, Target, gemini_target, skill_target

MINE = b"the user's own skill, not deeprefine's\n"


def _targets() -> dict[str, tuple[list[str], Target]]:
    """Every installer target: its command line and its files (relative to its base)."""
    out: dict[str, tuple[list[str], Target]] = {}
    for name, agent in sorted(AGENTS.items()):
        for scope in ("--project", "--user"):
            out[f"{name}{scope}"] = (
                [name, "{action}", scope],
                skill_target(agent, scope == "--user"),
            )
    out["gemini"] = (["gemini", "{action}"], gemini_target(None))
    return out


TARGETS = _targets()


def _components(target: Target) -> list[PurePosixPath]:
    """Every path below the base an install walks through or writes: folders and files."""
    seen: list[PurePosixPath] = []
    for rel in target.files:
        for depth in range(1, len(rel.parts) + 1):
            part = PurePosixPath(*rel.parts[:depth])
            if part not in seen:
                seen.append(part)
    return seen


def _user_scope(key: str) -> bool:
    return "--user" in TARGETS[key][0] or key == "gemini"


CASES = [
    pytest.param(key, component, id=f"{key}:{component}")
    for key, (_, target) in TARGETS.items()
    for component in _components(target)
    # the user's own agent folder in the home folder may be their link (GNU stow): followed
    if not (_user_scope(key) and len(component.parts) == 1)
]


def _snapshot(root: Path) -> dict[str, bytes | str]:
    return {
        p.relative_to(root).as_posix(): (
            f"-> {os.readlink(p)}" if p.is_symlink() else p.read_bytes() if p.is_file() else "/"
        )
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(("key", "component"), CASES)
def test_a_symlinked_component_is_refused_and_the_users_files_stay(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    key: str,
    component: PurePosixPath,
) -> None:
    project, home, victim = tmp_path / "project", tmp_path / "home", tmp_path / "victim"
    for folder in (project, home, victim):
        folder.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    argv, template = TARGETS[key]
    base = home if "--user" in argv or key == "gemini" else project
    # the user's own files where the link leads, at the place deeprefine would write
    for rel in template.files:
        if rel == component or component in rel.parents:
            mine = victim / rel.relative_to(component) if rel != component else victim / "own"
            mine.parent.mkdir(parents=True, exist_ok=True)
            mine.write_bytes(MINE)
    link = base / component
    link.parent.mkdir(parents=True, exist_ok=True)
    to = victim / "own" if component in template.files else victim
    link.symlink_to(to)
    before = _snapshot(victim)
    for action in ("install", "uninstall"):
        code = main([a.replace("{action}", action) for a in argv])
        err = capsys.readouterr().err
        assert code == 1, (action, err)
        assert f"{link}: is a symbolic link (to {to})" in err, err
        assert len(err.strip().splitlines()) == 1
        assert _snapshot(victim) == before, f"{action} changed the user's files"
    assert link.is_symlink()


@pytest.mark.parametrize("key", sorted(TARGETS))
def test_install_backs_up_what_it_overwrites_and_uninstall_keeps_what_it_did_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    argv, template = TARGETS[key]
    base = home if "--user" in argv or key == "gemini" else project
    first, *rest = list(template.files)
    (base / first).parent.mkdir(parents=True)
    (base / first).write_bytes(MINE)  # the user's own file where the skill goes
    assert main([a.replace("{action}", "install") for a in argv]) == 0
    out = capsys.readouterr().out
    backup = (base / first).with_name(first.name + ".bak")
    assert f"backed up {base / first} to {backup}" in out
    assert backup.read_bytes() == MINE
    assert (base / first).read_bytes() == template.files[first]
    # twice is once: no second backup, nothing rewritten
    assert main([a.replace("{action}", "install") for a in argv]) == 0
    assert "backed up" not in capsys.readouterr().out
    assert sorted(p.name for p in (base / first).parent.iterdir() if ".bak" in p.name) == [
        backup.name
    ]
    # an installed file the user edited since is kept, the others removed
    edited = rest[0] if rest else first
    (base / edited).write_bytes(MINE + b"edited\n")
    assert main([a.replace("{action}", "uninstall") for a in argv]) == 0
    out = capsys.readouterr().out
    assert f"kept {base / edited}" in out
    assert (base / edited).read_bytes() == MINE + b"edited\n"
    assert backup.read_bytes() == MINE
    for rel in template.files:
        if rel != edited:
            assert not (base / rel).exists(), rel
            assert f"removed {base / rel}" in out


def test_the_console_script_refuses_a_clones_link_into_home(tmp_path: Path) -> None:
    """As a user hits it: a cloned repository ships `.claude/skills/deeprefine` as a link to
    the user's own skill folder; `deeprefine claude uninstall` and `install` leave it."""
    project, home = tmp_path / "clone", tmp_path / "home"
    own = home / ".claude" / "skills" / "deeprefine"
    own.mkdir(parents=True)
    (own / "SKILL.md").write_bytes(MINE)
    (project / ".claude" / "skills").mkdir(parents=True)
    (project / ".claude" / "skills" / "deeprefine").symlink_to(own)
    exe = Path(sys.executable).with_name("deeprefine")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env |= {"HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    for action in ("uninstall", "install"):
        done = subprocess.run(
            [str(exe), "claude", action], cwd=project, env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert done.returncode == 1, done.stdout
        assert str(project / ".claude/skills/deeprefine") in done.stderr
        assert "is a symbolic link" in done.stderr
        assert (own / "SKILL.md").read_bytes() == MINE
        assert sorted(p.name for p in own.iterdir()) == ["SKILL.md"]


@pytest.mark.parametrize("key", sorted(k for k in TARGETS if _user_scope(k)))
def test_a_user_install_follows_the_users_own_stow_link_at_the_top_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    """`~/.claude -> ~/dotfiles/claude/.claude` (GNU stow's tree folding) is the user's own
    setup: `--user` installs into it and uninstalls from it, and the link stays a link."""
    home, dotfiles = tmp_path / "home", tmp_path / "dotfiles"
    home.mkdir()
    argv, template = TARGETS[key]
    (top,) = {rel.parts[0] for rel in template.files}
    (dotfiles / top).mkdir(parents=True)
    (home / top).symlink_to(dotfiles / top)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    assert main([a.replace("{action}", "install") for a in argv]) == 0, capsys.readouterr().err
    for rel, data in template.files.items():
        assert (dotfiles / rel).read_bytes() == data
    assert main([a.replace("{action}", "uninstall") for a in argv]) == 0
    assert not any(p.is_file() for p in (dotfiles / top).rglob("*"))
    assert (home / top).is_symlink()
