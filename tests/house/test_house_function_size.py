"""No function in src is over 80 lines or McCabe complexity 20 (measured as
benchmarks/function_size.py measures: the lines a `def` spans, ruff's C901 number).

The workflows hold to it but for the functions of `ALLOWED` there; the rest of src holds
to it but for `ALLOWED` too. The list can only shrink: a listed function may not grow past
its recorded size, and an entry whose function is gone or back within the limits fails
until it is removed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from _helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import function_size

MAX_LINES = 80
MAX_COMPLEXITY = 20

# "path qualname": (lines, complexity) as measured when the entry was added: the ceiling
ALLOWED: dict[str, tuple[int, int]] = {}  # none left: every function holds to the rule


def _key(f: function_size.Function) -> str:
    return f"{f.path} {f.name}"


@pytest.fixture(scope="module")
def functions() -> list[function_size.Function]:
    if shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists():
        pytest.skip("ruff (the [dev] extra) measures the complexity")
    return function_size.measure(ROOT / "src" / "agentport")


def test_no_function_is_over_80_lines_or_complexity_20(
    functions: list[function_size.Function],
) -> None:
    over = {
        _key(f): (f.lines, f.complexity)
        for f in functions
        if f.lines > MAX_LINES or f.complexity > MAX_COMPLEXITY
    }
    grown = {
        key: (size, ALLOWED.get(key))
        for key, size in over.items()
        if key not in ALLOWED or size[0] > ALLOWED[key][0] or size[1] > ALLOWED[key][1]
    }
    assert not grown, f"split these (lines, complexity; allowed): {grown}"
    stale = sorted(set(ALLOWED) - set(over))
    assert not stale, f"within the limits now (or gone): remove from ALLOWED: {stale}"


def test_the_measure_counts_lines_and_branches(tmp_path: Path) -> None:
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(21))
    (tmp_path / "m.py").write_text(
        f"def knotty(x):\n{branches}\n    return -1\n\n\ndef flat():\n    return 0\n"
    )
    found = {f.name: f for f in function_size.measure(tmp_path)}
    assert (found["knotty"].lines, found["knotty"].complexity) == (44, 22)
    assert (found["flat"].lines, found["flat"].complexity) == (2, 1)
