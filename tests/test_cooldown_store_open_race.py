"""Processes that open a new cooldown store at the same moment all get it: the switch to WAL
that each tries is refused to all but one ("database is locked", with no busy wait), and
the others retry until it shows. The storm benchmark's two worker processes hit this."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_OPEN = """
import sys, time
from pathlib import Path
from agentport.policies import CooldownStore
start = float(sys.argv[2])
while time.time() < start:
    pass
store = CooldownStore(Path(sys.argv[1]))
with store.transaction():  # opens it: the connection switches a new store to WAL
    pass
print("ok")
"""


def test_processes_opening_a_new_store_at_once_all_get_it(tmp_path: Path) -> None:
    import time

    for round_ in range(5):
        path = tmp_path / f"s{round_}" / "cooldown.sqlite3"
        start = time.time() + 1.5
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN, str(path), str(start)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(6)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err[-2000:]
            assert out.strip() == "ok"
