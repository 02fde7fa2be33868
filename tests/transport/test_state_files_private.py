"""State agentport keeps for the user is private and survives a second writer: the cooldown
store and the research cache are 0600 files in 0700 folders, a state folder other users can
write is refused, and two batches writing one `batch.json` keep each other's rows.

Regressions: the store and the cache were created 0644; a world-writable state folder was
accepted; the second of two batches on one `--out` overwrote the first's rows.
"""

from __future__ import annotations

import json
import stat
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentport.policies import CooldownStore
from agentport.workflows.batch._questions import Question
from agentport.workflows.batch._state import STATE_FILE, BatchState
from agentport.workflows.deep_research._cache import CallCache


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_cooldown_store_is_private(tmp_path: Path) -> None:
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    store.record("codex", datetime.now(UTC) + timedelta(hours=1), reason="test")
    assert _mode(tmp_path / "state") == 0o700
    for path in (tmp_path / "state").iterdir():
        assert _mode(path) == 0o600, path


def test_a_state_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(OSError, match="other users"):
        CooldownStore(shared / "cooldown.sqlite3")._connect()


def test_research_cache_entries_are_private(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "cache")
    cache.put("k", {"parsed": {"a": 1}})
    assert _mode(tmp_path / "cache") == 0o700
    assert _mode(tmp_path / "cache" / "k.json") == 0o600
    (tmp_path / "cache").chmod(0o777)
    with pytest.raises(OSError, match="other users"):
        cache.put("k2", {"parsed": {}})


def test_two_batches_on_one_folder_keep_each_others_rows(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = BatchState.open(out, "research", [Question(1, "A?", "a")], ".md")
    second = BatchState.open(out, "research", [Question(1, "B?", "b")], ".md")
    first.items["a"].status = "done"
    first.save()
    second.items["b"].status = "failed"
    second.save()  # read before `a` was written: must not drop it
    rows = {i["id"]: i["status"] for i in json.loads((out / STATE_FILE).read_text())["items"]}
    assert rows == {"a": "done", "b": "failed"}


def test_concurrent_saves_lose_no_row(tmp_path: Path) -> None:
    out = tmp_path / "out"
    states = [
        BatchState.open(out, "research", [Question(i, f"Q{i}?", f"q{i}")], ".md") for i in range(8)
    ]

    def save(state: BatchState) -> None:
        for _ in range(5):
            state.save()

    threads = [threading.Thread(target=save, args=(s,)) for s in states]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = json.loads((out / STATE_FILE).read_text())["items"]
    assert {r["id"] for r in rows} == {f"q{i}" for i in range(8)}
