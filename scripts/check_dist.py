"""Check a built sdist and wheel before anyone installs them: `python scripts/check_dist.py
pyproject.toml dist/`. The wheel must hold every file of src/agentport that git tracks (the
modules, py.typed, the skills) and nothing else (no tests, caches or scratch files); its
metadata must name the version, the Python range and the console scripts of pyproject.toml.
The sdist must build the same package and carry no virtualenv, cache or VCS folder.
Exits 1 with one line per problem."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

SCRATCH = (".pyc", ".pyo", ".orig", ".rej", ".swp", "~", ".DS_Store")
SCRATCH_DIRS = (
    "__pycache__",
    ".venv",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".git/",
    ".cache",
)


def tracked_package_files(repo: Path) -> set[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "src/agentport"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {line.removeprefix("src/") for line in out.splitlines() if line}


def scratch(name: str) -> bool:
    return name.endswith(SCRATCH) or any(d in name for d in SCRATCH_DIRS)


def check_wheel(wheel: Path, project: dict[str, object], repo: Path) -> list[str]:
    problems: list[str] = []
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
    package = {n for n in names if not n.startswith(dist_info)}
    want = tracked_package_files(repo)
    problems += [f"wheel lacks {n}" for n in sorted(want - package)]
    problems += [f"wheel carries {n}, which git does not track" for n in sorted(package - want)]
    problems += [f"wheel carries scratch file {n}" for n in sorted(names) if scratch(n)]
    if not any(n.startswith(f"{dist_info}/licenses/") for n in names):
        problems.append("wheel carries no license file")
    if meta["Version"] != project["version"]:
        problems.append(f"wheel Version {meta['Version']} != pyproject {project['version']}")
    if meta["Requires-Python"] != project["requires-python"]:
        problems.append(f"wheel Requires-Python {meta['Requires-Python']}")
    scripts = project.get("scripts", {})
    assert isinstance(scripts, dict)
    problems += [f"wheel lacks console script {s}" for s in scripts if f"{s} =" not in entry_points]
    return problems


def check_sdist(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as tf:
        names = [m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name]
    problems = [f"sdist carries {n}" for n in names if scratch(n)]
    needed_files = (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "src/agentport/py.typed",
    )
    for needed in needed_files:
        if needed not in names:
            problems.append(f"sdist lacks {needed}")
    return problems


def main(argv: list[str]) -> int:
    pyproject, dist = Path(argv[0]), Path(argv[1])
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    wheels, sdists = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"{dist}: want one wheel and one sdist, found {wheels + sdists}")
        return 1
    problems = check_wheel(wheels[0], project, pyproject.parent) + check_sdist(sdists[0])
    for problem in problems:
        print(f"{dist}: {problem}")
    if not problems:
        print(
            f"{wheels[0].name}: {len(zipfile.ZipFile(wheels[0]).namelist())} files; "
            f"{sdists[0].name}: metadata and contents checked"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
