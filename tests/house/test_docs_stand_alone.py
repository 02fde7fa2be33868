"""The documentation stands alone: every relative link in docs/ (and README.md) resolves to
a file of the repository, no page names a file outside it (the team's design notes, its
reference folder, the seeds), and docs/index.md links every page of the site's nav."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _helpers import ROOT
from _private_citations import PRIVATE_CITATION

PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"])
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_OUTSIDE = PRIVATE_CITATION


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists() or ROOT not in path.parents:
            broken.append(target)
    assert broken == [], f"{page.name}: links to nothing in the repository: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_names_a_file_outside_the_repository(page: Path) -> None:
    found = _OUTSIDE.findall(page.read_text(encoding="utf-8"))
    assert found == [], f"{page.name} names files a reader does not have: {found}"


def test_the_index_links_every_page_of_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {m for m in re.findall(r":\s*([\w./-]+\.md)\s*$", nav, re.M) if "/" not in m}
    assert len(pages) > 10, pages  # the nav was read
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(_LINK.findall(index))
    missing = sorted(p for p in pages - {"index.md"} if p not in linked)
    assert missing == [], f"docs/index.md does not link: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_table_is_broken_by_a_paragraph(page: Path) -> None:
    """A table row cut off from its header renders as text (the DeepRefine "Files" table
    had a paragraph in its middle)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    in_code = False
    for i, line in enumerate(lines[1:], start=1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("|"):
            continue
        if lines[i - 1].startswith("|"):
            continue
        # a row after a blank or a paragraph line starts a table: it must be a header
        header = i + 1 < len(lines) and re.match(r"^\|\s*:?-", lines[i + 1]) is not None
        assert header, f"{page.name}:{i + 1}: a table row cut off from its table"
