"""Measure `python -c "import agentport"` wall time (goal <= 0.25 s), minus bare start-up.

Usage: python benchmarks/import_time.py [runs]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def _median(code: str, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    bare = _median("pass", runs)
    full = _median("import agentport", runs)
    print(f"interpreter start-up: {bare * 1000:.0f} ms (median of {runs})")
    print(f"python -c 'import agentport': {full * 1000:.0f} ms")
    print(f"import alone: {(full - bare) * 1000:.0f} ms")
    print("goal: <= 250 ms")


if __name__ == "__main__":
    main()
