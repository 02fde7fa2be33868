"""Measure `python -c "import agentport"` wall time against its own dependencies.

Prints, as medians of *runs* fresh interpreters: bare start-up, `import agentport`, and the
dependencies alone as agentport uses them at import (pydantic with one deferred model,
`returns.result`, anyio with its memory streams); then agentport's import minus start-up and
its ratio to the dependencies' (goals: <= 150 ms, <= 1.3x).

Usage: python benchmarks/import_time.py [runs]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

DEPENDENCIES = (
    "import pydantic, returns.result, anyio, anyio.streams.memory\n"
    "from pydantic import BaseModel, ConfigDict\n"
    "class M(BaseModel):\n"
    "    model_config = ConfigDict(defer_build=True)\n"
    "    x: int\n"
)


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
    deps = _median(DEPENDENCIES, runs)
    own, base = full - bare, deps - bare
    print(f"interpreter start-up: {bare * 1000:.0f} ms (median of {runs})")
    print(f"import agentport: {own * 1000:.0f} ms (goal <= 150 ms)")
    print(f"its dependencies alone: {base * 1000:.0f} ms")
    print(f"ratio: {own / base:.2f}x (goal <= 1.3x)")


if __name__ == "__main__":
    main()
