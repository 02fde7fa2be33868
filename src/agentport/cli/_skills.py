"""`deeprefine <agent> install|uninstall`: agentport's DeepRefine skill, written where each
agent reads its skills (the folders deeprefine-cli 0.2.0 installs to, reference/deeprefine-
cli.md section 2.2), so the drop-in covers the reference's installer commands too.

- cursor (`install` = `cursor install`): `.cursor/skills/deeprefine/` (`--project`, the
  default) or `~/.cursor/skills/deeprefine/` (`--user`);
- copilot: `.github/skills/deeprefine/` or `~/.copilot/skills/deeprefine/`;
- codex: `.agents/skills/deeprefine/` or `~/.codex/skills/deeprefine/`;
- claude: `.claude/skills/deeprefine/` or `~/.claude/skills/deeprefine/`;
- opencode: `.opencode/skills/deeprefine/` and `.opencode/commands/deeprefine*.md`, or the
  same under `~/.opencode/`;
- gemini: an extension folder, `~/.gemini/extensions/deeprefine/` (`--target-dir`).

Installing twice rewrites the same files (atomically); uninstalling removes exactly the
files an install writes and then the folders it leaves empty, never a file it did not
write. The skill texts are agentport's own (`cli/skills/`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from ..transport._fs import atomic_write
from ._out import echo

__all__ = ["AGENTS", "add_installers"]

SKILLS = Path(__file__).with_name("skills")


@dataclass(frozen=True)
class Agent:
    """Where one agent reads skills: `project` (relative to the current folder) and `user`
    (relative to the home folder) skill folders; `commands` the sibling folder of the
    agent's slash commands (opencode), `skill` the source file."""

    project: str
    user: str
    skill: str = "SKILL.md"
    commands: str | None = None


AGENTS = {
    "cursor": Agent(".cursor/skills/deeprefine", ".cursor/skills/deeprefine"),
    "copilot": Agent(".github/skills/deeprefine", ".copilot/skills/deeprefine"),
    "codex": Agent(".agents/skills/deeprefine", ".codex/skills/deeprefine"),
    "claude": Agent(".claude/skills/deeprefine", ".claude/skills/deeprefine"),
    "opencode": Agent(
        ".opencode/skills/deeprefine",
        ".opencode/skills/deeprefine",
        skill="SKILL_OPENCODE.md",
        commands="commands",
    ),
}


def _files(agent: Agent, user: bool) -> tuple[Path, dict[Path, bytes]]:
    """The base folder (cwd or home) and every file an install writes, with its content."""
    base = Path.home() if user else Path.cwd()
    folder = base / (agent.user if user else agent.project)
    out = {folder / "SKILL.md": (SKILLS / agent.skill).read_bytes()}
    if agent.commands is not None:
        commands = folder.parent.parent / agent.commands  # .opencode/commands
        for src in sorted((SKILLS / "opencode-commands").glob("*.md")):
            out[commands / src.name] = src.read_bytes()
    return base, out


def _prune(folder: Path, stop: Path) -> None:
    """Remove *folder* and its parents up to (not including) *stop* while they are empty."""
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def install(agent: Agent, user: bool) -> list[Path]:
    _, files = _files(agent, user)
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data, mode=0o644)
    return list(files)


def uninstall(agent: Agent, user: bool) -> list[Path]:
    base, files = _files(agent, user)
    removed = []
    for path in files:
        if path.is_file() and not path.is_symlink():
            path.unlink()
            removed.append(path)
        _prune(path.parent, base)
    return removed


def _gemini_folder(target: str | None) -> Path:
    return Path(target).expanduser() if target else Path.home() / ".gemini/extensions/deeprefine"


def _gemini_files() -> dict[str, bytes]:
    """The extension: its manifest and GEMINI.md (the skill text without its frontmatter)."""
    skill = (SKILLS / "SKILL.md").read_text(encoding="utf-8")
    body = skill.split("---", 2)[2].lstrip() if skill.startswith("---") else skill
    manifest = (SKILLS / "gemini" / "gemini-extension.json").read_bytes()
    json.loads(manifest)  # a broken manifest is a packaging bug: fail loudly here
    return {"gemini-extension.json": manifest, "GEMINI.md": body.encode()}


def _run(args: argparse.Namespace) -> int:
    agent = AGENTS[args.agent]
    user = bool(args.user)
    paths = install(agent, user) if args.action == "install" else uninstall(agent, user)
    scope = "user" if user else "project"
    verb = "installed" if args.action == "install" else "removed"
    if not paths:
        echo(f"deeprefine: no {args.agent} skill installed ({scope}); nothing to remove")
    for path in paths:
        echo(f"{verb} {path}")
    return 0


def _gemini(args: argparse.Namespace) -> int:
    folder = _gemini_folder(getattr(args, "target_dir", None))
    if args.action == "path":
        echo(SKILLS / "gemini" if args.bundled else folder)
        return 0
    if args.action == "link":
        echo(f"run: gemini extensions link {folder} (after `deeprefine gemini install`)")
        return 0
    if args.action == "install":
        for name, data in _gemini_files().items():
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write(folder / name, data, mode=0o644)
            echo(f"installed {folder / name}")
        return 0
    for name in _gemini_files():
        if (folder / name).is_file():
            (folder / name).unlink()
            echo(f"removed {folder / name}")
    _prune(folder, folder.parent)
    return 0


def _scope(p: argparse.ArgumentParser, where: str) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--project", action="store_true", help=f"{where} in the current folder (default)"
    )
    group.add_argument("--user", action="store_true", help=f"{where} in your home folder")


def add_installers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The installer commands of deeprefine-cli 0.2.0 on a `deeprefine` subparser set."""
    for name in AGENTS:
        parser = sub.add_parser(name, help=f"Install agentport's DeepRefine skill for {name}.")
        actions = parser.add_subparsers(dest="action", required=True)
        for action in ("install", "uninstall"):
            p = actions.add_parser(action, help=f"{action.capitalize()} the skill.")
            _scope(p, "skill")
            p.set_defaults(handler=_run, agent=name)
    for action in ("install", "uninstall"):  # the reference's `install` = `cursor install`
        p = sub.add_parser(action, help=f"{action.capitalize()} the Cursor skill.")
        _scope(p, "skill")
        p.set_defaults(handler=_run, agent="cursor", action=action)
    gemini = sub.add_parser("gemini", help="Install agentport's DeepRefine Gemini extension.")
    gsub = gemini.add_subparsers(dest="action", required=True)
    path = gsub.add_parser("path", help="Print the extension folder.")
    path.add_argument("--bundled", action="store_true", help="the copy inside agentport")
    link = gsub.add_parser("link", help="Print the `gemini extensions link` command.")
    link.add_argument("--source")
    for action in ("install", "uninstall"):
        p = gsub.add_parser(action, help=f"{action.capitalize()} the extension (a copy).")
        p.add_argument("--target-dir", help="extension folder (default ~/.gemini/extensions/…)")
        p.add_argument("--copy-only", action="store_true", help="accepted: always a copy")
        if action == "install":
            p.add_argument("--source", help="accepted; the extension is agentport's own")
            p.add_argument("--no-consent", action="store_true", help="accepted")
    for p in gsub.choices.values():
        p.set_defaults(handler=_gemini)
