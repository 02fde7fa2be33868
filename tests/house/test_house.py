"""The house rules of DESIGN.md "Style" that a reader can check without running anything: no
source file is over 600 lines. (The import rules, circles included: tests/house/test_layers.py.)"""

from __future__ import annotations

from _helpers import ROOT

SRC = ROOT / "src"


def test_no_source_file_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in (SRC / "agentport").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, long
