"""House rule: no docstring or comment in src/ cites a file a clone does not have (the team's
design notes, its reference folder, the seeds and their "Task N" steps). A reader of the code
gets the fact itself, or a public source they can open (a CLI's version, an RFC, an issue).

The pattern is the one docs/ is held to (`_private_citations.PRIVATE_CITATION`). A citation cut
by a line break after a hyphen (`reference/deeprefine-` / `cli.md`) is found too."""

from __future__ import annotations

import re

from _helpers import ROOT
from _private_citations import PRIVATE_CITATION

SRC = ROOT / "src"

#: files still citing private notes, being rewritten on another branch; remove each entry once
#: its file is clean (test_known_exceptions_still_need_it says when)
KNOWN_EXCEPTIONS: frozenset[str] = frozenset()

_HYPHEN_BREAK = re.compile(r"-\n[ \t]*(?:#[ \t]*)?")


def citations(text: str) -> list[tuple[int, str]]:
    """(line number, cited text) of every private citation in *text*, including one whose
    name a hyphen breaks across two lines (joined, reported at the line it starts on)."""
    found = {
        (text.count("\n", 0, m.start()) + 1, m.group()) for m in PRIVATE_CITATION.finditer(text)
    }
    starts = [0]  # offset in the joined text -> offset in *text*, one entry per kept piece
    pieces, origins, pos = [], [], 0
    for brk in _HYPHEN_BREAK.finditer(text):
        pieces.append(text[pos : brk.start() + 1])
        origins.append(pos)
        pos = brk.end()
    pieces.append(text[pos:])
    origins.append(pos)
    joined = "".join(pieces)
    for piece in pieces[:-1]:
        starts.append(starts[-1] + len(piece))
    for m in PRIVATE_CITATION.finditer(joined):
        i = max(k for k, s in enumerate(starts) if s <= m.start())
        original = origins[i] + (m.start() - starts[i])
        found.add((text.count("\n", 0, original) + 1, m.group()))
    return sorted(found)


def _scan() -> dict[str, list[tuple[int, str]]]:
    hits: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(SRC.rglob("*.py")):
        found = citations(path.read_text(encoding="utf-8"))
        if found:
            hits[path.relative_to(ROOT).as_posix()] = found
    return hits


def test_the_scan_reads_every_source_file() -> None:
    assert len(list(SRC.rglob("*.py"))) > 100  # the walk found the package


def test_no_source_file_cites_a_private_file() -> None:
    hits = _scan()
    bad = [
        f"{name}:{line}: {cited}"
        for name, found in hits.items()
        if name not in KNOWN_EXCEPTIONS
        for line, cited in found
    ]
    assert bad == [], "say the fact or cite a public source instead:\n" + "\n".join(bad)


def test_known_exceptions_still_need_it() -> None:
    hits = _scan()
    stale = sorted(name for name in KNOWN_EXCEPTIONS if name not in hits)
    assert stale == [], f"clean now, remove from KNOWN_EXCEPTIONS: {stale}"


def test_the_pattern_catches_each_kind_of_citation() -> None:
    """Each form must be caught, including a name cut at a hyphen by a line break, and an
    ordinary word must not be."""
    text = (
        "x = 1  # see DESIGN.md\n"
        '"""Facts from cli-contracts.md §5 and reference/deeprefine-\n'
        'cli.md section 2; seed Task 8."""\n'
        "# per reference/undriveable-\n"
        "# clis.md §2\n"
        "seed: int | None = None  # a sampling seed, measured on codex-cli 0.171.0\n"
    )
    assert citations(text) == [
        (1, "DESIGN.md"),
        (2, "cli-contracts.md"),
        (2, "reference/deeprefine-cli.md"),
        (3, "Task 8"),
        (4, "reference/undriveable-clis.md"),
    ]
