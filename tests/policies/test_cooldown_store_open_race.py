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


def test_a_store_opened_while_another_connection_writes_waits_for_it(tmp_path: Path) -> None:
    """The race made deterministic: another connection holds a write lock on a new store
    while ours switches it to WAL. SQLite refuses that switch at once instead of busy-waiting
    (our connection holds a read lock the writer could be waiting on), so without the retry
    the open fails with "database is locked" every time; with it, the open waits for the
    writer and succeeds."""
    import sqlite3
    import threading
    import time

    from agentport.policies import CooldownStore

    path = tmp_path / "cooldown.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            with CooldownStore(path).transaction():
                pass
        except BaseException as exc:  # the assertion below reports it
            errors.append(exc)

    opener = threading.Thread(target=open_store)
    opener.start()
    time.sleep(0.3)  # the opener reaches the switch while the write lock is held
    writer.execute("COMMIT")
    writer.close()
    opener.join(timeout=30)
    assert not opener.is_alive()
    assert errors == []
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
