"""The longest functions and the highest cyclomatic complexity in a source tree.

Length is the number of source lines a `def` spans (decorators excluded, nested functions
included, as a reader scrolls it), counted with `ast`. Complexity is McCabe's, as ruff's
C901 rule computes it (1 + one per branch, loop, boolean operator, except clause, match case;
a nested function's branches count towards its parent too); ruff is run from the Python
environment running this script, else from PATH.

    python benchmarks/function_size.py [ROOT ...] [--top N] [--max-lines 80] [--max-complexity 20]

ROOT defaults to src/agentport and src/agentport/workflows (each summarised). Exit status is
0; the counts over the limits are printed, never asserted here
(tests/house/test_house_function_size.py holds the rule).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Function:
    """One `def` in one file: `path:line name`, its length in lines, its McCabe number."""

    path: str
    line: int
    name: str
    lines: int
    complexity: int

    def where(self) -> str:
        return f"{self.path}:{self.line} {self.name}"


def _ruff() -> str:
    beside = Path(sys.executable).parent / "ruff"
    if beside.exists():
        return str(beside)
    found = shutil.which("ruff")
    if found is None:
        raise SystemExit("function_size: ruff is not installed (pip install ruff)")
    return found


_MESSAGE = re.compile(r"is too complex \((\d+) > 0\)")


def _complexities(root: Path) -> dict[tuple[str, int], int]:
    """(absolute path, def line) -> McCabe number for every function under `root`."""
    argv = [_ruff(), "check", str(root), "--select", "C901", "--output-format", "json"]
    argv += ["--config", "lint.mccabe.max-complexity=0", "--no-cache", "--exit-zero"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    found: dict[tuple[str, int], int] = {}
    for item in json.loads(out):
        match = _MESSAGE.search(item["message"])
        if match is not None:
            path = os.path.realpath(item["filename"])
            found[(path, item["location"]["row"])] = int(match.group(1))
    return found


def _defs(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.AST]]:
    found: list[tuple[str, ast.AST]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            found.append((name, node))
            found += _defs(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            found += _defs(node, f"{prefix}{node.name}.")
        else:
            found += _defs(node, prefix)
    return found


def measure(root: Path) -> list[Function]:
    """Every function under `root` (a directory of .py files, or one file)."""
    complexity = _complexities(root)
    files = [root] if root.is_file() else sorted(root.rglob("*.py"))
    functions: list[Function] = []
    for file in files:
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        real = os.path.realpath(file)
        shown = os.path.relpath(file, REPO) if file.is_relative_to(REPO) else str(file)
        for name, node in _defs(tree):
            assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            end = node.end_lineno or node.lineno
            number = complexity.get((real, node.lineno), 1)
            functions.append(Function(shown, node.lineno, name, end - node.lineno + 1, number))
    return functions


def _report(root: Path, top: int, max_lines: int, max_complexity: int) -> None:
    functions = measure(root)
    longest = sorted(functions, key=lambda f: (-f.lines, f.where()))
    knottiest = sorted(functions, key=lambda f: (-f.complexity, f.where()))
    over_lines = sum(f.lines > max_lines for f in functions)
    over_complexity = sum(f.complexity > max_complexity for f in functions)
    print(f"== {os.path.relpath(root, REPO)}: {len(functions)} functions")
    print(f"longest: {longest[0].lines} lines ({longest[0].where()})")
    print(f"highest complexity: {knottiest[0].complexity} ({knottiest[0].where()})")
    print(f"over {max_lines} lines: {over_lines}; over complexity {max_complexity}: ", end="")
    print(over_complexity)
    print(f"-- top {top} by length")
    for f in longest[:top]:
        print(f"  {f.lines:4d} lines  cc {f.complexity:3d}  {f.where()}")
    print(f"-- top {top} by complexity")
    for f in knottiest[:top]:
        print(f"  cc {f.complexity:3d}  {f.lines:4d} lines  {f.where()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", type=Path)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--max-lines", type=int, default=80)
    parser.add_argument("--max-complexity", type=int, default=20)
    args = parser.parse_args()
    roots = args.roots or [REPO / "src" / "agentport", REPO / "src" / "agentport" / "workflows"]
    for root in roots:
        _report(root.resolve(), args.top, args.max_lines, args.max_complexity)


if __name__ == "__main__":
    main()
