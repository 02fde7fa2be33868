"""The base install runs: `agentport` and `import agentport` work with only the required
dependencies of pyproject.toml (and what they require), whatever else this environment has.
A module-level import of anything an extra or the dev tools bring (click once came in
through an old typer) breaks `pip install agentport` for every user; here a `python -S`
subprocess sees only links to the required distributions and runs the commands."""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from _helpers import ROOT

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure() -> set[str]:
    """The required dependencies and everything they require (extras' markers skipped)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    todo = [_NAME.match(d).group(0) for d in project["dependencies"]]  # type: ignore[union-attr]
    seen: set[str] = set()
    while todo:
        name = _canonical(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        todo += [_NAME.match(r).group(0) for r in requires if "extra ==" not in r]  # type: ignore[union-attr]
    return seen


def _base_only(folder: Path) -> Path:
    """A folder holding links to the required distributions only (their packages, modules and
    metadata), for a `python -S` with nothing else on its path."""
    allowed = _closure()
    for dist in md.distributions():
        name = _canonical(dist.metadata["Name"] or "")
        if name not in allowed or name == "agentport":
            continue
        for file in dist.files or ():
            top = file.parts[0]
            target = folder / top
            source = Path(str(dist.locate_file(top)))
            if top.endswith(".pth") or top == ".." or target.exists() or not source.exists():
                continue
            target.symlink_to(source)
    return folder


_PRELUDE = """
import sys
sys.argv = {argv}
from agentport.cli import main
main()
"""


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["--help"], ["backends", "--json"], ["config"], ["complete", "--help"],
     ["research", "--help"], ["doctor", "--help"], ["mcp", "--help"], ["worker", "--help"],
     ["refine", "--help"], ["quota", "--help"], ["batch", "--help"]],
    ids=lambda a: " ".join(a),
)  # fmt: skip
def test_the_cli_runs_with_only_the_required_dependencies(
    argv: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = _base_only(tmp_path_factory.mktemp("base-only"))
    code = _PRELUDE.format(argv=["agentport", *argv])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path_factory.mktemp("home")),
           "PYTHONPATH": f"{ROOT / 'src'}:{base}"}  # fmt: skip
    env |= {k: v for k, v in os.environ.items() if k.startswith("AGENTPORT_")}
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120,
        cwd=ROOT, env=env,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode in (0, 2), done.stderr[-2000:]
