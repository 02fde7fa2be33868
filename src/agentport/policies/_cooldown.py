"""The shared cooldown: an exhausted usage window is known to every agentport process of the
user until it resets.

One SQLite file, `<state dir>/cooldown.sqlite3`, where the state dir is `$AGENTPORT_STATE_DIR`,
else `$XDG_STATE_HOME/agentport`, else `~/.local/state/agentport`. Concurrency is SQLite's own
(WAL journal, a busy timeout): no home-made lock. A store that is not a database (a crash, a
stray file) is moved aside to `cooldown.sqlite3.corrupt` and recreated with a
`CooldownStoreWarning`, never an exception. Reads of a store that does not exist create
nothing. Written by the retry policy (`RetryingAdapter(cooldown=...)`) when a call ends in
`quota_exhausted` with a `retry_at`; read by the retry policy (a cooling backend is not
called), `auto` (a cooling backend is passed over), failover chains and `agentport
backends`.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio

from ..core import MAX_WINDOW, ErrorKind, ProviderError

__all__ = [
    "Cooldown",
    "CooldownStore",
    "CooldownStoreWarning",
    "cooldown_error",
    "cooling_error",
    "default_store",
    "note_exhausted",
    "state_dir",
]

STATE_ENV = "AGENTPORT_STATE_DIR"
_FILE = "cooldown.sqlite3"
_BUSY_MS = 10_000
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS cooldown (backend TEXT PRIMARY KEY, until REAL NOT NULL, "
    "kind TEXT NOT NULL, reason TEXT NOT NULL, window TEXT, recorded REAL NOT NULL)"
)


class CooldownStoreWarning(UserWarning):
    """The cooldown store could not be read and was recreated (its entries are lost)."""


@dataclass(frozen=True, slots=True)
class Cooldown:
    """A backend that must not be called before `until` (aware, UTC).

    Attributes:
        backend: canonical backend name.
        until: when its exhausted window resets.
        kind: the `ErrorKind` value that put it here (`quota_exhausted`).
        reason: the failure's message (redacted).
        window: "session", "weekly", "daily", ... when the message said.
    """

    backend: str
    until: datetime
    kind: str
    reason: str
    window: str | None = None

    def remaining_s(self, now: datetime | None = None) -> float:
        """Seconds left, never negative."""
        return max((self.until - (now or datetime.now(UTC))).total_seconds(), 0.0)


def _private_dir(path: Path) -> None:
    """*path* as a real folder of this user's, created 0700; `OSError` naming it when it is
    a symlink, someone else's, or writable by other users (its state could be replaced)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{path}: refusing a symlinked cooldown store folder")
    if info.st_uid != os.geteuid():
        raise OSError(f"{path}: belongs to another user; refusing it as a state folder")
    if stat.S_IMODE(info.st_mode) & 0o022:
        raise OSError(
            f"{path}: can be written by other users; refusing it as a state folder (chmod 700)"
        )


def state_dir() -> Path:
    """`$AGENTPORT_STATE_DIR`, else `$XDG_STATE_HOME/agentport`, else
    `~/.local/state/agentport` (XDG base directory spec)."""
    explicit = os.environ.get(STATE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else None
    return (base or Path.home() / ".local" / "state") / "agentport"


class CooldownStore:
    """Backend -> `Cooldown`, shared through one SQLite file (module docstring)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / _FILE
        # one connection per store and process, reopened when the file is replaced
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._key: tuple[int, int, int] | None = None  # (pid, st_dev, st_ino)
        self._schemas: set[str] = set()  # schemas applied on `_conn`

    def _connect(self) -> sqlite3.Connection:
        # private to the user; a symlink could point the writes anywhere
        _private_dir(self.path.parent)  # a real 0700 folder only this user writes
        if self.path.is_symlink():
            raise OSError(f"{self.path}: refusing a symlinked cooldown store")
        if not self.path.exists():  # the file and its WAL/SHM siblings: 0600
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
        conn = sqlite3.connect(
            self.path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
            _wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across process crashes
            conn.execute(_SCHEMA)
            for sibling in ("", "-wal", "-shm"):
                with suppress(OSError):
                    os.chmod(f"{self.path}{sibling}", 0o600)
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            stat = os.stat(self.path)
            key: tuple[int, int, int] | None = (os.getpid(), stat.st_dev, stat.st_ino)
        except FileNotFoundError:
            key = None
        if self._conn is not None and key is not None and key == self._key:
            return self._conn
        self._close()
        try:
            conn = self._connect()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            self._recreate(exc)
            conn = self._connect()
        stat = os.stat(self.path)
        self._conn, self._key = conn, (os.getpid(), stat.st_dev, stat.st_ino)
        return conn

    def _close(self) -> None:
        if self._conn is not None and self._key is not None and self._key[0] == os.getpid():
            self._conn.close()
        self._conn = self._key = None
        self._schemas = set()

    def _recreate(self, exc: Exception) -> None:
        self._close()
        aside = self.path.with_name(self.path.name + ".corrupt")
        warnings.warn(
            f"{self.path}: not a readable cooldown store ({exc}); moved to {aside.name} and "
            "recreated (cooldowns recorded there are lost)",
            CooldownStoreWarning,
            stacklevel=4,
        )
        for suffix in ("-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)
        if self.path.exists():
            os.replace(self.path, aside)

    def _rows(self, sql: str, args: tuple[object, ...]) -> list[tuple[object, ...]]:
        if not self.path.exists():
            return []
        try:
            with self._db() as conn:
                return list(conn.execute(sql, args).fetchall())
        except sqlite3.DatabaseError as exc:  # corrupt pages found by the query itself
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            self._recreate(exc)
            return []

    def active(self, backend: str, now: datetime | None = None) -> Cooldown | None:
        """The cooldown of *backend* that has not ended by *now*, or None."""
        at = (now or datetime.now(UTC)).timestamp()
        rows = self._rows(
            "SELECT backend, until, kind, reason, window FROM cooldown "
            "WHERE backend = ? AND until > ?",
            (backend, at),
        )
        return _cooldown(rows[0]) if rows else None

    def all_active(self, now: datetime | None = None) -> list[Cooldown]:
        """Every cooldown that has not ended by *now*, by backend name."""
        at = (now or datetime.now(UTC)).timestamp()
        rows = self._rows(
            "SELECT backend, until, kind, reason, window FROM cooldown WHERE until > ? "
            "ORDER BY backend",
            (at,),
        )
        return [_cooldown(r) for r in rows]

    def record(
        self,
        backend: str,
        until: datetime,
        *,
        kind: str = ErrorKind.quota_exhausted.value,
        reason: str = "",
        window: str | None = None,
        now: datetime | None = None,
    ) -> bool:
        """Note that *backend* must not be called before *until* (aware). A later `until`
        already recorded wins. Returns False (nothing written) when *until* is already past;
        raises `ValueError` when it is naive or more than `MAX_WINDOW` ahead."""
        if until.tzinfo is None:
            raise ValueError("cooldown until must be an aware datetime")
        current = now or datetime.now(UTC)
        if until <= current:
            return False
        if until - current > MAX_WINDOW:
            raise ValueError(
                f"cooldown of {backend!r} until {until.isoformat()} is more than "
                f"{MAX_WINDOW.days} days ahead"
            )
        args = (backend, until.timestamp(), kind, reason[:500], window, time.time())
        sql = (
            "INSERT INTO cooldown (backend, until, kind, reason, window, recorded) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(backend) DO UPDATE SET "
            "until = excluded.until, kind = excluded.kind, reason = excluded.reason, "
            "window = excluded.window, "
            # `recorded` = since when it has been cooling: kept while the cooldown lasts
            "recorded = CASE WHEN cooldown.until > ?2 THEN cooldown.recorded "
            "ELSE excluded.recorded END "
            "WHERE excluded.until > cooldown.until OR cooldown.until <= ?2"
        )
        sql = sql.replace("?2", "?")
        values = (*args, current.timestamp(), current.timestamp())
        try:
            with self._db() as conn:
                conn.execute(sql, values)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            self._recreate(exc)
            with self._db() as conn:
                conn.execute(sql, values)
        return True

    def _with_schema(self, schema: str) -> sqlite3.Connection:
        conn = self._open()
        if schema and schema not in self._schemas:  # once per connection (`_close` forgets)
            conn.executescript(schema)
            self._schemas.add(schema)
        return conn

    @contextmanager
    def transaction(self, schema: str = "") -> Iterator[sqlite3.Connection]:
        """The store's connection inside one `BEGIN IMMEDIATE` transaction (committed when
        the block ends, rolled back when it raises): other processes' writes wait for it,
        so a read-modify-write in the block is atomic. *schema* (`CREATE TABLE IF NOT
        EXISTS ...` statements) is applied first; other policies keep their tables here."""
        with self._lock:
            try:
                conn = self._with_schema(schema)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise
                self._recreate(exc)
                conn = self._with_schema(schema)
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def clear(self, backend: str | None = None) -> None:
        """Forget *backend*'s cooldown (all of them when None)."""
        if not self.path.exists():
            return
        with self._db() as conn:
            if backend is None:
                conn.execute("DELETE FROM cooldown")
            else:
                conn.execute("DELETE FROM cooldown WHERE backend = ?", (backend,))


def _cooldown(row: tuple[object, ...]) -> Cooldown:
    backend, until, kind, reason, window = row
    return Cooldown(
        str(backend),
        datetime.fromtimestamp(float(until), UTC),  # type: ignore[arg-type]
        str(kind),
        str(reason),
        None if window is None else str(window),
    )


def default_store() -> CooldownStore:
    """The user's store (`state_dir()`), resolved now (tests point `AGENTPORT_STATE_DIR`
    elsewhere)."""
    return CooldownStore()


def cooldown_error(cooldown: Cooldown, backend: str) -> ProviderError:
    """The failure of a call that was not made: *backend* is cooling down."""
    left = timedelta(seconds=round(cooldown.remaining_s()))
    return ProviderError(
        ErrorKind.quota_exhausted,
        f"not called: its usage window is exhausted until {cooldown.until.isoformat()} "
        f"({left} from now; shared cooldown): {cooldown.reason}",
        backend=backend,
        retryable=False,
        retry_at=cooldown.until,
        window=cooldown.window,
        retry_after=cooldown.remaining_s(),
        details={"cooldown": True},
    )


async def cooling_error(store: CooldownStore, backend: str) -> ProviderError | None:
    """`cooldown_error` when *backend* is cooling down in *store*, else None (read in a worker
    thread: SQLite may wait on another process's write)."""
    if not store.path.exists():
        return None
    found = await anyio.to_thread.run_sync(store.active, backend)
    return None if found is None else cooldown_error(found, backend)


async def note_exhausted(store: CooldownStore, error: ProviderError, backend: str) -> bool:
    """Record *error* in *store* when it is an exhausted window with a believable `retry_at`
    (not one the store itself produced). Returns whether it was recorded."""
    if (
        error.kind is not ErrorKind.quota_exhausted
        or error.retry_at is None
        or error.details.get("cooldown")
    ):
        return False
    name = error.backend or backend
    try:
        until = error.retry_at

        def write() -> bool:
            return store.record(
                name, until, kind=error.kind.value, reason=error.message, window=error.window
            )

        return await anyio.to_thread.run_sync(write)
    except ValueError as exc:  # a retry_at years ahead: not believed, not stored
        warnings.warn(f"cooldown not recorded: {exc}", CooldownStoreWarning, stacklevel=2)
        return False


def _wal(conn: sqlite3.Connection, tries: int = 50) -> None:
    """Switch a store to WAL once. Two processes opening a new store at once both try it,
    and SQLite refuses the loser at once ("database is locked": no busy wait for a journal
    mode change); it retries until the other's switch shows."""
    for attempt in range(tries):
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(0.02)
