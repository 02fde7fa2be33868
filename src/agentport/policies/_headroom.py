"""The last quota headroom each backend reported, for every process of the user.

A backend that reads its provider's rate-limit headers (openai_compat:
`agentport.core.headroom_from_headers`) puts the windows on each result; the policy layer
(`RetryingAdapter`) keeps the last of them per backend in `<state dir>/headroom/<backend>.json`
next to the cooldown store (one file per backend, replaced atomically: a snapshot, so the
last writer wins). `quota_status(backend)` reads it back: each window's remaining share and
reset, a window whose reset has passed left out (it has refilled since), and no window at all
("unknown") for a backend that never reported one: agent CLIs do not print theirs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from returns.result import Result, Success

from ..core import CompletionResponse, Headroom, ProviderError
from ..transport import atomic_write
from ._cooldown import state_dir

__all__ = ["QuotaStatus", "note_headroom", "quota_status"]

_SAFE = re.compile(r"[^a-z0-9_.-]")


@dataclass(frozen=True, slots=True)
class QuotaStatus:
    """What is known of *backend*'s usage windows.

    Attributes:
        backend: the backend (a chain member's own name).
        windows: the windows last reported that have not reset since; empty = unknown.
        seen_at: when they were reported, or None.
    """

    backend: str
    windows: tuple[Headroom, ...] = ()
    seen_at: datetime | None = None

    @property
    def lowest_share(self) -> float | None:
        """The smallest remaining share of any window, or None when unknown."""
        shares = [w.remaining_share for w in self.windows if w.remaining_share is not None]
        return min(shares) if shares else None


def _file(folder: Path, backend: str) -> Path:
    return folder / "headroom" / f"{_SAFE.sub('_', backend.lower()) or '_'}.json"


def _windows(result: Result[CompletionResponse, ProviderError]) -> list[dict[str, Any]]:
    if isinstance(result, Success):
        listed = result.unwrap().raw.extra.get("headroom")
    else:
        listed = result.failure().details.get("headroom")
    return [w for w in listed if isinstance(w, dict)] if isinstance(listed, list) else []


async def note_headroom(
    folder: Path, backend: str, result: Result[CompletionResponse, ProviderError]
) -> None:
    """Keep the windows *result* carries as *backend*'s last report (nothing when none). A
    write that fails (read-only state folder) is skipped, and none is fsynced: the data is
    advisory and written on every call that carries it."""
    windows = _windows(result)
    if not windows:
        return
    data = {"backend": backend, "seen_at": datetime.now(UTC).isoformat(), "windows": windows}
    path = _file(folder, backend)
    try:
        await anyio.to_thread.run_sync(lambda: atomic_write(path, json.dumps(data), durable=False))
    except OSError:
        return


def quota_status(
    backend: str, *, folder: Path | None = None, now: datetime | None = None
) -> QuotaStatus:
    """*backend*'s last reported windows (module docstring); `QuotaStatus` with no window
    when nothing was reported or the file is unreadable. *folder*: the state folder
    (default `agentport.policies.state_dir()`)."""
    now = now or datetime.now(UTC)
    path = _file(folder or state_dir(), backend)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        seen = datetime.fromisoformat(str(data["seen_at"]))
        windows = tuple(Headroom.from_dict(w) for w in data.get("windows") or ())
    except (OSError, ValueError, KeyError, TypeError):
        return QuotaStatus(backend)
    live = tuple(w for w in windows if w.resets_at is None or w.resets_at > now)
    return QuotaStatus(backend, live, seen if live else None)
