"""The house rules of DESIGN.md "Style" that a reader can check without running anything:
no two modules of `agentport` import each other (at module level, inside a function or
under TYPE_CHECKING: each is a circle a reader must hold in their head), and no source file
is over 600 lines.

Regression: four two-module circles (local/_local_models, cli/_batch/_research,
testing/_fake_http/_fake_server, deeprefine/_budget/_workflow)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "agentport").rglob("*.py")):
        parts = path.with_suffix("").relative_to(SRC).parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, source: str, modules: set[str], *, is_package: bool = False) -> set[str]:
    """The agentport modules *name* imports anywhere in *source*; `from pkg import sub`
    counts as importing `pkg.sub` alone when `sub` is a module."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = {f"{target}.{a.name}" for a in node.names} & modules
            found |= subs
            if len(subs) < len(node.names) and target in modules:
                found.add(target)
    found.discard(name)
    return found


def test_no_two_modules_import_each_other() -> None:
    modules = _modules()
    edges = {
        name: _imports(name, path.read_text(encoding="utf-8"), set(modules),
                       is_package=path.name == "__init__.py")
        for name, path in modules.items()
    }  # fmt: skip
    circles = sorted(
        f"{a} <-> {b}" for a, outs in edges.items() for b in outs if a < b and a in edges[b]
    )
    assert not circles, circles


def test_a_circle_is_found() -> None:
    """The check sees a circle hidden in a function and under TYPE_CHECKING."""
    modules = {"agentport", "agentport.a", "agentport.b"}
    a = _imports("agentport.a", "def f():\n    from .b import x\n", modules)
    b = _imports("agentport.b", "if TYPE_CHECKING:\n    from agentport import a\n", modules)
    assert (a, b) == ({"agentport.b"}, {"agentport.a"})


def test_no_source_file_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in (SRC / "agentport").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, long
