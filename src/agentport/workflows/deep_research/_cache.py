"""A resumable cache of finished agent calls, and atomic file writes.

Each successful call is stored as one JSON file named by the SHA-256 of (phase label,
schema, prompt). Prompts are built deterministically from the question and earlier answers,
so a rerun of an interrupted run replays every call whose inputs did not change and only
calls the model for the rest (the original's `resumeFromRunId`, without its runtime).
Failed calls are never cached, so a resume retries them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...core import bounded, redact
from ...transport import atomic_write, ensure_private_dir

__all__ = ["CallCache", "atomic_write_text"]


def atomic_write_text(path: Path, text: str) -> None:
    """Write *text* to *path* atomically (see `agentport.transport._fs.atomic_write`)."""
    atomic_write(path, text)


class CallCache:
    """Finished agent calls under *folder* (created on first write).

    `replay=False` records without reading old entries (a fresh run that can still be
    resumed later). `hits` counts replayed calls.
    """

    def __init__(self, folder: Path | str, *, replay: bool = True) -> None:
        self.folder = Path(folder)
        self.replay = replay
        self.hits = 0

    @staticmethod
    def key(label: str, schema: str, prompt: str) -> str:
        digest = hashlib.sha256()
        for part in (label, schema, prompt):
            digest.update(part.encode("utf-8"))
            digest.update(b"\0")
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry (`label`, `schema`, `parsed`, `usage`), or None (absent, not
        replaying, or unreadable: a damaged entry is treated as missing)."""
        if not self.replay:
            return None
        try:
            entry = bounded.loads(self._path(key).read_text(encoding="utf-8"), max_depth=64)
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or "parsed" not in entry:
            return None
        self.hits += 1
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store *entry* (redacted) as a 0600 file in a 0700 folder of this user's: prompts
        and answers are private. `OSError` when the folder is someone else's or writable by
        other users."""
        ensure_private_dir(self.folder)
        text = redact(json.dumps(entry, ensure_ascii=False))
        atomic_write(self._path(key), text, mode=0o600)

    def clear(self) -> None:
        """Remove every stored entry (a fresh run under the same folder)."""
        if self.folder.is_dir():
            for f in self.folder.glob("*.json"):
                f.unlink(missing_ok=True)
