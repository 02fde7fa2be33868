"""Write docs/backends/<name>.md and docs/backends/index.md from the catalog.

Usage: python scripts/gen_backend_docs.py [--check]   (--check exits 1 when a page is stale)
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentport._docs import render_backend_page, render_matrix
from agentport.catalog import all_backends

DOCS = Path(__file__).resolve().parent.parent / "docs" / "backends"


def pages() -> dict[Path, str]:
    out = {DOCS / "index.md": render_matrix()}
    for c in all_backends():
        intro_path = DOCS / f"{c.name}.intro.md"
        intro = intro_path.read_text(encoding="utf-8") if intro_path.exists() else ""
        out[DOCS / f"{c.name}.md"] = render_backend_page(c, intro)
    return out


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for path, text in pages().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if check else 'wrote'}: {path.relative_to(DOCS.parent.parent)}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
