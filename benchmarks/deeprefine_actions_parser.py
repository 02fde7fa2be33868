"""DeepRefine actions parser: hostile inputs parse in linear time.

Each input is built at 24 KB, 48 KB and 96 KB; the 96 KB time must be well under a second
and doubling the size must roughly double the time (a quadratic parser quadruples it; the
old one took 30 s at 96 KB of repeated `insert_edge(`).

    python benchmarks/deeprefine_actions_parser.py
"""

from __future__ import annotations

import time

from agentport.workflows.deeprefine import parse_refinement

INPUTS = {
    "repeated insert_edge(": lambda n: "insert_edge(" * (n // 12),
    "repeated <refinement>": lambda n: "<refinement>" * (n // 12),
    "open block + insert_edge(": lambda n: "<refinement>" + "insert_edge(" * (n // 12),
    "closed block + insert_edge(": lambda n: (
        "<refinement>" + "insert_edge(" * (n // 12) + "</refinement>"
    ),
    "unclosed quotes per line": lambda n: 'insert_edge("a\n' * (n // 15),
    "valid actions": lambda n: (
        "<refinement>"
        + "|".join(f'insert_edge("n{i}", "calls", "m{i}")' for i in range(n // 34))
        + "</refinement>"
    ),
}


def _time(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        parse_refinement(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    worst = 0.0
    for name, make in INPUTS.items():
        times = [_time(make(size)) for size in (24_000, 48_000, 96_000)]
        ratio = times[2] / max(times[1], 1e-6)
        worst = max(worst, times[2])
        print(
            f"{name:30s} 24KB {times[0] * 1000:7.1f} ms  48KB {times[1] * 1000:7.1f} ms  "
            f"96KB {times[2] * 1000:7.1f} ms  96/48 x{ratio:.1f}"
        )
    print(f"worst 96 KB: {worst * 1000:.1f} ms (goal < 1000 ms)")


if __name__ == "__main__":
    main()
