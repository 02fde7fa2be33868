"""The adaptive concurrency windows, shared by every agentport process of the user through the
cooldown store's SQLite file (`_cooldown.CooldownStore`).

Two tables beside `cooldown`: `pressure` (one `_window.WindowState` per key) and `lease` (one
row per call in flight: key, process id, the epoch it entered in). Entering and leaving are
each one `BEGIN IMMEDIATE` transaction (`CooldownStore.transaction`): the admission check and
the lease insert, or the lease delete and the window's transition, happen atomically across
processes. A process that died with calls in flight leaves leases behind: they are dropped
when their process no longer exists, or after `LEASE_MAX_S`.

Synchronous: the async gate (`_concurrency`) runs these in a worker thread.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

from ._cooldown import CooldownStore
from ._window import Outcome, WindowState, admits, settle

__all__ = ["LEASE_MAX_S", "Entry", "WindowRow", "enter", "leave", "windows"]

LEASE_MAX_S = 6 * 3600.0
"""A lease older than this is dropped even if its process lives (a call has a deadline; an
agent run of hours is bounded by its own `total_timeout_s` well below it)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pressure (key TEXT PRIMARY KEY, window INTEGER NOT NULL,
    maximum INTEGER NOT NULL, epoch INTEGER NOT NULL, streak INTEGER NOT NULL,
    until REAL NOT NULL, decreases INTEGER NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS lease (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL,
    pid INTEGER NOT NULL, epoch INTEGER NOT NULL, since REAL NOT NULL);
CREATE INDEX IF NOT EXISTS lease_key ON lease (key);
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """The answer to one try to enter: `lease` (None = not admitted), the window as it was
    read, the calls in flight before this one, and the epoch a lease entered in."""

    lease: int | None
    state: WindowState
    in_flight: int


@dataclass(frozen=True, slots=True)
class WindowRow:
    """One key's shared window and its calls in flight (for `agentport quota`)."""

    key: str
    state: WindowState
    in_flight: int


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process reuses the id: not ours, stale
        return False
    return True


def _load(conn: sqlite3.Connection, key: str, initial: int, maximum: int) -> WindowState:
    row = conn.execute(
        "SELECT window, maximum, epoch, streak, until, decreases FROM pressure WHERE key = ?",
        (key,),
    ).fetchone()
    if row is None:
        return WindowState.start(initial, maximum)
    window, _stored_max, epoch, streak, until, decreases = row
    top = max(1, maximum)  # the configured ceiling wins over the stored one
    return WindowState(
        min(max(1, int(window)), top), top, int(epoch), int(streak), float(until), int(decreases)
    )


def _save(conn: sqlite3.Connection, key: str, state: WindowState, now: float) -> None:
    conn.execute(
        "INSERT INTO pressure (key, window, maximum, epoch, streak, until, decreases, updated) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
        "window = excluded.window, maximum = excluded.maximum, epoch = excluded.epoch, "
        "streak = excluded.streak, until = excluded.until, decreases = excluded.decreases, "
        "updated = excluded.updated",
        (key, state.window, state.maximum, state.epoch, state.streak, state.until,
         state.decreases, now),
    )  # fmt: skip


def _in_flight(conn: sqlite3.Connection, key: str, now: float) -> int:
    pids = [int(p) for (p,) in conn.execute("SELECT DISTINCT pid FROM lease WHERE key = ?", (key,))]
    dead = [p for p in pids if not _alive(p)]
    for pid in dead:
        conn.execute("DELETE FROM lease WHERE key = ? AND pid = ?", (key, pid))
    conn.execute("DELETE FROM lease WHERE key = ? AND since < ?", (key, now - LEASE_MAX_S))
    (count,) = conn.execute("SELECT COUNT(*) FROM lease WHERE key = ?", (key,)).fetchone()
    return int(count)


def enter(store: CooldownStore, key: str, initial: int, maximum: int, now: float) -> Entry:
    """Take a lease on *key*'s window when it admits one more call (`_window.admits`), in
    one transaction; else `Entry(lease=None)` with what kept it out."""
    with store.transaction(_SCHEMA) as conn:
        state = _load(conn, key, initial, maximum)
        count = _in_flight(conn, key, now)
        if not admits(state, count, now):
            return Entry(None, state, count)
        cursor = conn.execute(
            "INSERT INTO lease (key, pid, epoch, since) VALUES (?, ?, ?, ?)",
            (key, os.getpid(), state.epoch, now),
        )
        _save(conn, key, state, now)
        return Entry(cursor.lastrowid, state, count)


def leave(
    store: CooldownStore,
    key: str,
    lease: int,
    outcome: Outcome,
    *,
    initial: int,
    maximum: int,
    retry_after: float | None,
    now: float,
) -> WindowState:
    """Give *lease* back and apply the call's *outcome* to the window (`_window.settle`,
    with the epoch the lease entered in), in one transaction; the new window."""
    with store.transaction(_SCHEMA) as conn:
        row = conn.execute("SELECT epoch FROM lease WHERE id = ?", (lease,)).fetchone()
        conn.execute("DELETE FROM lease WHERE id = ?", (lease,))
        state = _load(conn, key, initial, maximum)
        if row is None:  # dropped as stale meanwhile: its outcome is too old to count
            return state
        after = settle(state, outcome, int(row[0]), retry_after, now)
        if after != state:
            _save(conn, key, after, now)
        return after


def windows(store: CooldownStore, now: float) -> list[WindowRow]:
    """Every key's window and calls in flight, by key (reads nothing when the store does
    not exist)."""
    if not store.path.exists():
        return []
    with store.transaction(_SCHEMA) as conn:
        keys = [str(k) for (k,) in conn.execute("SELECT key FROM pressure ORDER BY key")]
        rows = []
        for key in keys:
            state = _load(conn, key, 1, _stored_max(conn, key))
            rows.append(WindowRow(key, state, _in_flight(conn, key, now)))
        return rows


def _stored_max(conn: sqlite3.Connection, key: str) -> int:
    row = conn.execute("SELECT maximum FROM pressure WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 1
