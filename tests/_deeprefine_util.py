"""Helpers for the deeprefine tests: a real graphify graph built once per session from a few
of agentport's own source files, and a tiny hand-made graph for rule-level tests."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "agentport"
#: real code graphify extracts (core types, the retry policy, structured output), wherever
#: the package keeps it today; small enough to build in a few seconds
SOURCES = sorted(
    p
    for pattern in ("core/*.py", "policies/*.py", "structured.py", "structured/*.py")
    for p in SRC.glob(pattern)
)


def graphify_exe() -> str:
    exe = shutil.which("graphify") or shutil.which(
        "graphify", path=str(Path(sys.executable).parent)
    )
    if exe is None:
        pytest.skip("graphify (PyPI graphifyy, dev extra) is not installed")
    return exe


def build_real_project(base: Path) -> Path:
    """`graphify update .` inside a folder holding copies of agentport source files, so
    `source_file` paths are relative to the project root (reference section 1.1)."""
    project = base / "proj"
    project.mkdir()
    for source in SOURCES:
        target = project / source.relative_to(SRC)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    done = subprocess.run(
        [graphify_exe(), "update", "."], cwd=project, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (project / "graphify-out" / "graph.json").is_file()
    return project


def copy_project(built: Path, dest: Path) -> Path:
    target = dest / "proj"
    shutil.copytree(built, target, ignore=shutil.ignore_patterns("cache", "graph.html"))
    return target


def write_tiny(root: Path) -> Path:
    """A 6-node graph in graphify's layout with real source files."""
    (root / "app").mkdir(parents=True)
    (root / "app" / "cli.py").write_text(
        "from app.util import helper\n\n\ndef main():\n    run()\n\n\ndef run():\n"
        "    return helper()\n",
        encoding="utf-8",
    )
    (root / "app" / "util.py").write_text(
        "def helper():\n    return 1\n\n\nclass Runner:\n    def go(self):\n"
        "        return helper()\n\n\ndef main():\n    pass\n",
        encoding="utf-8",
    )

    def node(i: str, label: str, f: str, loc: str, c: int) -> dict[str, Any]:
        return {"id": i, "label": label, "community": c, "file_type": "code",
                "norm_label": label.lower(), "source_file": f, "source_location": loc}  # fmt: skip

    def link(s: str, t: str, r: str, conf: str = "EXTRACTED") -> dict[str, Any]:
        return {"source": s, "target": t, "relation": r, "confidence": conf,
                "confidence_score": 1.0, "source_file": "app/cli.py", "weight": 1.0}  # fmt: skip

    graph = {
        "directed": False,
        "multigraph": False,
        "graph": {"schema_version": 1, "graphify_version": "0.9.96"},
        "nodes": [
            node("app_cli_main", "main()", "app/cli.py", "L4", 0),
            node("app_cli_run", "run()", "app/cli.py", "L8", 0),
            node("app_util_helper", "helper()", "app/util.py", "L1", 0),
            node("app_util_runner", "Runner", "app/util.py", "L5", 1),
            node("app_util_runner_go", ".go()", "app/util.py", "L6", 1),
            node("app_util_main", "main()", "app/util.py", "L10", 1),
            node("app_cli", "cli.py", "app/cli.py", "L1", 0),
        ],
        "links": [
            link("app_cli_main", "app_cli_run", "calls"),
            link("app_cli_run", "app_util_helper", "calls", "INFERRED"),
            link("app_util_runner", "app_util_runner_go", "method"),
            link("app_cli", "app_util_helper", "imports_from"),
        ],
        "hyperedges": [],
        "custom_key": {"kept": "\u00e9"},
    }
    out = root / "graphify-out"
    out.mkdir()
    path = out / "graph.json"
    path.write_bytes(json.dumps(graph, separators=(",", ":"), ensure_ascii=True).encode())
    return path


_BUILT: dict[str, Path] = {}


def real_copy(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A private copy of the real graphify project (built once per test session)."""
    if "real" not in _BUILT:
        _BUILT["real"] = build_real_project(tmp_path_factory.mktemp("deeprefine-real"))
    return copy_project(_BUILT["real"], tmp_path)
