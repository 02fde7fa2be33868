"""The grep-able rule of docs/architecture.md: every process agentport starts goes through
`agentport.transport` (the runner and `open_guarded`, which start every CLI through the host's
guardian, or `guard_argv` for the one process started synchronously)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).parents[1] / "src" / "agentport"
SPAWN = re.compile(
    r"subprocess\.(?:Popen|run|call|check_call|check_output)\(|open_process\("
    r"|create_subprocess_(?:exec|shell)\(|os\.(?:system|popen|spawn\w*|exec\w*|fork)\("
)
# the runner itself; the pass-throughs it runs (already inside the runner's group: the line
# reader, and the cassette recorder that runs the real CLI as its own child); and the local
# model's worker, started synchronously, which must start under a guardian (`guard_argv`)
RUNNER = {
    "transport/_runner.py",
    "transport/_spawner.py",
    "transport/_guardian.py",
    "backends/_lines.py",
    "testing/_cassette.py",
}
GUARDED = {"backends/_local_client.py"}
# `agentport worker` re-executes itself with a fixed hash seed: no child process
REEXEC = {"cli/_worker.py"}


def test_only_the_runner_starts_processes() -> None:
    spawning = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if SPAWN.search(path.read_text(encoding="utf-8"))
    }
    assert spawning - RUNNER - GUARDED - REEXEC == set()
    for name in GUARDED & spawning:
        assert "guard_argv(" in (SRC / name).read_text(encoding="utf-8"), name
