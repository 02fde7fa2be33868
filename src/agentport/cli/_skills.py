"""`deeprefine <agent> install|uninstall`: agentport's DeepRefine skill, written where each
agent reads its skills (the folders deeprefine-cli 0.2.0's `<agent> install` commands write
to), so the drop-in covers the reference's installer commands too.

- cursor (`install` = `cursor install`): `.cursor/skills/deeprefine/` (`--project`, the
  default) or `~/.cursor/skills/deeprefine/` (`--user`);
- copilot: `.github/skills/deeprefine/` or `~/.copilot/skills/deeprefine/`;
- codex: `.agents/skills/deeprefine/` or `~/.codex/skills/deeprefine/`;
- claude: `.claude/skills/deeprefine/` or `~/.claude/skills/deeprefine/`;
- opencode: `.opencode/skills/deeprefine/` and `.opencode/commands/deeprefine*.md`, or the
  same under `~/.opencode/`;
- gemini: an extension folder, `~/.gemini/extensions/deeprefine/` (`--target-dir`).

Every write and removal walks from the base folder (the current folder, the home folder, or
`--target-dir`) one component at a time without following a symbolic link: a component
that is a link (a cloned repository's `.claude/skills/deeprefine -> ~/.claude/...`) is
refused with one line naming it, and nothing is written or removed. One link is the user's
own and followed: with `--user`, the agent's folder in the home folder itself (`~/.claude`
made by GNU stow or a dotfiles checkout). Installing over a file
with other content first saves that content beside it (`SKILL.md.bak`, then `.bak.1`, ...);
installing twice rewrites nothing. Uninstalling removes only files whose bytes are exactly
what this install writes (a file you edited, or one from another version, is kept and
named), then the folders it leaves empty. The skill texts are agentport's own
(`cli/skills/`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..transport import descend, link_refusal
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


@dataclass(frozen=True)
class Target:
    """One installer target: the *base* folder the user named (cwd, home, `--target-dir`,
    opened as given) and every file an install writes below it, by relative path."""

    base: Path
    files: dict[PurePosixPath, bytes]


def skill_target(agent: Agent, user: bool) -> Target:
    """The base folder (cwd or home) and every file an install writes, with its content."""
    base = Path.home() if user else Path.cwd()
    folder = PurePosixPath(agent.user if user else agent.project)
    out = {folder / "SKILL.md": (SKILLS / agent.skill).read_bytes()}
    if agent.commands is not None:
        commands = folder.parent.parent / agent.commands  # .opencode/commands
        for src in sorted((SKILLS / "opencode-commands").glob("*.md")):
            out[commands / src.name] = src.read_bytes()
    return _own_top(Target(base, out)) if user else Target(base, out)


def _own_top(target: Target) -> Target:
    """A `--user` target whose agent folder in the home folder (`~/.claude`, `~/.gemini`) is
    a symbolic link the user made (GNU stow, a dotfiles checkout) is based at the link's
    folder: the user's own link is followed, once, at the top; every link below it is still
    refused. The project scope never follows one (a cloned repository's links are not yours)."""
    tops = {rel.parts[0] for rel in target.files}
    if len(tops) != 1:
        return target
    (top,) = tops
    linked = target.base / top
    if not linked.is_symlink() or not linked.resolve().is_dir():
        return target
    files = {PurePosixPath(*rel.parts[1:]): data for rel, data in target.files.items()}
    return Target(linked.resolve(), files)


def gemini_target(target: str | None) -> Target:
    """The extension (its manifest and GEMINI.md, the skill text without its frontmatter)
    in `--target-dir`, else `~/.gemini/extensions/deeprefine/`."""
    skill = (SKILLS / "SKILL.md").read_text(encoding="utf-8")
    body = skill.split("---", 2)[2].lstrip() if skill.startswith("---") else skill
    manifest = (SKILLS / "gemini" / "gemini-extension.json").read_bytes()
    json.loads(manifest)  # a broken manifest is a packaging bug: fail loudly here
    files = {"gemini-extension.json": manifest, "GEMINI.md": body.encode()}
    if target:  # the folder itself is below the base: a link there is refused too
        chosen = Path(target).expanduser().absolute()
        base, folder = chosen.parent, PurePosixPath(chosen.name)
    else:
        home = Target(
            Path.home(),
            {".gemini/extensions/deeprefine" / PurePosixPath(k): v for k, v in files.items()},
        )
        return _own_top(home)
    return Target(base, {folder / k: v for k, v in files.items()})


# -- walking below the base without following a link -------------------------------------


def _refuse(path: Path, why: str, code: int) -> OSError:
    return OSError(code, why, str(path))


def _read_at(dirfd: int, name: str, path: Path, verb: str) -> bytes | None:
    """The regular file *name*'s bytes, None when absent; `PathRefused` for a link, `OSError`
    for a non-regular file (opened O_NOFOLLOW | O_NONBLOCK, checked with fstat)."""
    refusal = link_refusal(dirfd, name, path)
    if refusal is not None:
        raise refusal
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise _refuse(path, f"is not a regular file; refusing to {verb} it", errno.EINVAL)
        return handle.read()


def _write_at(dirfd: int, name: str, data: bytes) -> None:
    """Atomically replace *name* in *dirfd* (temp file, fsync, rename, folder fsync)."""
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o644, dir_fd=dirfd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), 0o644)
            os.fsync(handle.fileno())
        os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dirfd)
        raise
    os.fsync(dirfd)


def _backup_name(dirfd: int, name: str) -> str:
    """`<name>.bak`, else the first free `<name>.bak.N`: an earlier backup is never lost."""
    for n in range(1000):
        candidate = f"{name}.bak" + (f".{n}" if n else "")
        try:
            os.stat(candidate, dir_fd=dirfd, follow_symlinks=False)
        except FileNotFoundError:
            return candidate
    raise _refuse(Path(name), "has 1000 backups already; remove some", errno.EEXIST)


def install(target: Target) -> list[str]:
    """Write every file of *target*; one output line per file written or backed up. A file
    already holding these bytes is left alone; other content is saved to a backup first."""
    target.base.mkdir(parents=True, exist_ok=True)  # a new --target-dir's parents
    # check every path before writing any, so a refusal leaves nothing half-installed
    for rel in target.files:
        with descend(target.base, rel.parent.parts, create=False) as chain:
            if len(chain) == len(rel.parent.parts) + 1:
                _read_at(chain[-1], rel.name, target.base / rel, "install over")
    lines = []
    for rel, data in target.files.items():
        path = target.base / rel
        with descend(target.base, rel.parent.parts, create=True) as chain:
            before = _read_at(chain[-1], rel.name, path, "install over")
            if before == data:
                lines.append(f"installed {path} (unchanged)")
                continue
            if before is not None:
                backup = _backup_name(chain[-1], rel.name)
                _write_at(chain[-1], backup, before)
                lines.append(f"backed up {path} to {path.with_name(backup)}")
            _write_at(chain[-1], rel.name, data)
            lines.append(f"installed {path}")
    return lines


def uninstall(target: Target) -> tuple[list[str], bool]:
    """Remove the files of *target* that hold exactly the bytes an install writes, then the
    folders left empty (up to the base). Returns the output lines and whether anything was
    removed; a file with other content is kept and named."""
    for rel in target.files:  # refuse before removing anything
        with descend(target.base, rel.parent.parts, create=False) as chain:
            if len(chain) == len(rel.parent.parts) + 1:
                _read_at(chain[-1], rel.name, target.base / rel, "remove")
    lines, removed = [], False
    for rel, data in target.files.items():
        path = target.base / rel
        with descend(target.base, rel.parent.parts, create=False) as chain:
            if len(chain) < len(rel.parent.parts) + 1:
                continue
            current = _read_at(chain[-1], rel.name, path, "remove")
            if current is None:
                pass
            elif current != data:
                lines.append(
                    f"kept {path}: it is not what deeprefine installs (edited, or from another "
                    "version); remove it yourself if you want it gone"
                )
            else:
                os.unlink(rel.name, dir_fd=chain[-1])
                lines.append(f"removed {path}")
                removed = True
            # prune the folders this left empty, deepest first, never the base
            for depth in range(len(rel.parent.parts), 0, -1):
                try:
                    os.rmdir(rel.parent.parts[depth - 1], dir_fd=chain[depth - 1])
                except OSError:
                    break
    return lines, removed


def _run(args: argparse.Namespace) -> int:
    target = skill_target(AGENTS[args.agent], bool(args.user))
    scope = "user" if args.user else "project"
    if args.action == "install":
        lines = install(target)
    else:
        lines, removed = uninstall(target)
        if not removed:
            lines.append(
                f"deeprefine: no {args.agent} skill installed ({scope}); nothing to remove"
            )
    for line in lines:
        echo(line)
    return 0


def _gemini(args: argparse.Namespace) -> int:
    target = gemini_target(getattr(args, "target_dir", None))
    folder = target.base / next(iter(target.files)).parent
    if args.action == "path":
        echo(SKILLS / "gemini" if args.bundled else folder)
        return 0
    if args.action == "link":
        echo(f"run: gemini extensions link {folder} (after `deeprefine gemini install`)")
        return 0
    if args.action == "install":
        lines = install(target)
    else:
        lines, _ = uninstall(target)
    for line in lines:
        echo(line)
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
