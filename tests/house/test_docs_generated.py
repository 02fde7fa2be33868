"""Backend docs pages are generated from the catalog and must be current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from _helpers import ROOT
from agentport.catalog import all_backends
from agentport.core import Param

_SCRIPT = ROOT / "scripts" / "gen_backend_docs.py"


def _pages() -> dict[Path, str]:
    spec = importlib.util.spec_from_file_location("gen_backend_docs", _SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pages: dict[Path, str] = module.pages()
    return pages


def test_backend_pages_are_current() -> None:
    stale = [
        p.name
        for p, text in _pages().items()
        if not p.exists() or p.read_text(encoding="utf-8") != text
    ]
    assert not stale, f"run `python scripts/gen_backend_docs.py`: stale {stale}"


def test_every_backend_has_a_page_with_every_param() -> None:
    pages = _pages()
    for c in all_backends():
        text = pages[_SCRIPT.parent.parent / "docs" / "backends" / f"{c.name}.md"]
        for p in Param:
            assert f"| `{p.value}` |" in text
