"""The suite's layout: every test module sits in the folder of the layer it tests (the
README's "Tests" section lists them), shared helpers sit at the top of tests/ once each,
and a test module imports another test module only from its own folder (pytest puts a test
module's own folder on the import path, and the top of tests/ through conftest.py). No
folder is named like an importable package: `tests/` is on the import path, so a folder
`tests/mcp/` would be found by `import mcp` (a namespace package) where the mcp extra is
not installed, and every "skip without the extra" check would pass."""

from __future__ import annotations

import ast

from _helpers import ROOT, TESTS

FOLDERS = {
    "backends", "cli", "config", "contract", "core", "house", "mcp_server", "policies", "sessions",
    "structured", "temporal", "testing", "transport", "web", "workflows",
}  # fmt: skip


def test_every_test_module_is_in_a_layer_folder() -> None:
    stray = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert stray == [], f"test modules at the top of tests/, move them to a layer folder: {stray}"
    folders = {p.parent.name for p in TESTS.glob("*/test_*.py")}
    assert folders <= FOLDERS, f"unknown test folders: {sorted(folders - FOLDERS)}"
    assert not list(TESTS.glob("*/*/test_*.py")), "one level of folders only"


def test_the_readme_names_every_folder() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = sorted(f for f in FOLDERS if f"`tests/{f}/`" not in readme)
    assert missing == [], f"README's Tests section does not name: {missing}"


def test_helpers_are_shared_from_the_top_and_test_modules_import_only_siblings() -> None:
    assert not list(TESTS.glob("*/_*.py")), "shared helpers belong at the top of tests/"
    for path in TESTS.glob("*/test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )  # fmt: skip
            for name in names:
                if name.startswith("test_"):
                    sibling = path.parent / f"{name.split('.')[0]}.py"
                    assert sibling.exists(), (
                        f"{path.relative_to(ROOT)} imports {name} from another folder"
                    )


def test_no_folder_shadows_a_package_a_test_imports() -> None:
    import importlib.util
    import sys

    checked = ("mcp", "temporalio", "litellm", "trafilatura", "llama_cpp", "hypothesis")
    for folder in FOLDERS:
        assert folder not in checked, f"tests/{folder}/ would shadow `import {folder}`"
    saved = sys.path[:]
    try:
        sys.path.insert(0, str(TESTS))
        for name in checked:
            spec = importlib.util.find_spec(name)
            origin = "" if spec is None else str(spec.origin or spec.submodule_search_locations)
            assert str(TESTS) not in origin, f"`import {name}` finds {origin}"
    finally:
        sys.path[:] = saved
