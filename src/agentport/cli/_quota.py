"""`agentport quota [BACKEND]`: how much of each usage window is left, as each backend last
reported it (`agentport.policies.quota_status`; docs/failover.md "Quota headroom"), and each
backend's shared adaptive concurrency window (`agentport.policies.windows`;
docs/concurrency.md)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from ..catalog import all_backends, get_capability
from ..core import ProviderError, printable
from ..policies import QuotaStatus, WindowRow, default_store, quota_status, windows
from ._app import app, fail_error
from ._out import echo


def _rows(statuses: list[QuotaStatus]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for status in statuses:
        if not status.windows:
            rows.append({"backend": status.backend, "window": None, "left": None})
            continue
        for w in status.windows:
            rows.append(
                {
                    "backend": status.backend,
                    "window": w.window,
                    "left": w.remaining_share,
                    "remaining": w.remaining,
                    "limit": w.limit,
                    "resets_at": w.resets_at.isoformat() if w.resets_at else None,
                    "seen_at": status.seen_at.isoformat() if status.seen_at else None,
                }
            )
    return rows


def _concurrency(names: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Backend -> its concurrency windows (one per endpoint for HTTP backends)."""
    now = time.time()
    try:
        rows: list[WindowRow] = windows(default_store(), now)
    except OSError:  # an unusable state folder: nothing shared to show
        rows = []
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for row in rows:
        backend = row.key.partition("@")[0]
        if backend in found:
            until = row.state.until
            found[backend].append(
                {
                    "key": row.key,
                    "window": row.state.window,
                    "maximum": row.state.maximum,
                    "in_flight": row.in_flight,
                    "decreases": row.state.decreases,
                    "paused_until": (
                        datetime.fromtimestamp(until, UTC).isoformat() if until > now else None
                    ),
                }
            )
    return found


def _when(iso: str | None) -> str:
    if iso is None:
        return "-"
    seconds = (datetime.fromisoformat(iso) - datetime.now(UTC)).total_seconds()
    if seconds < 0:
        return f"{-seconds:.0f}s ago"
    return f"in {seconds:.0f}s" if seconds < 120 else f"in {seconds / 60:.0f} min"


@app.command()
def quota(
    backend: Annotated[
        str | None, typer.Argument(help="One backend (default: every backend).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show the remaining share of each usage window, as the backend's provider last
    reported it (rate-limit headers of HTTP backends); "unknown" where it reported none
    (agent CLIs print none). Then each backend's adaptive concurrency window: calls allowed
    at once, in flight now (all processes), times halved by a 429, and any pause."""
    try:
        names = [get_capability(backend).name] if backend else [c.name for c in all_backends()]
    except ProviderError as exc:
        fail_error(exc)
    rows = _rows([quota_status(name) for name in names])
    gates = _concurrency(names)
    for row in rows:
        row["concurrency"] = gates[row["backend"]]
    if as_json:
        echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table("backend", "window", "left", "remaining / limit", "resets", "seen")
    for row in rows:
        if row["window"] is None:
            table.add_row(row["backend"], "unknown", "-", "-", "-", "-")
            continue
        # a window's name is the provider's text: plain text, no controls, no rich markup
        window = Text(printable(str(row["window"]), newlines=False))
        left = "?" if row["left"] is None else f"{row['left']:.0%}"
        counts = f"{row['remaining'] if row['remaining'] is not None else '?'} / " + (
            f"{row['limit'] if row['limit'] is not None else '?'}"
        )
        table.add_row(
            row["backend"], window, left, counts, _when(row["resets_at"]),
            _when(row["seen_at"]),
        )  # fmt: skip
    Console().print(table)
    seen = [g for name in names for g in gates[name]]
    if seen:
        shared = Table("concurrency", "window / max", "in flight", "halved", "paused")
        for g in seen:
            shared.add_row(
                g["key"], f"{g['window']} / {g['maximum']}", str(g["in_flight"]),
                str(g["decreases"]), _when(g["paused_until"]),
            )  # fmt: skip
        Console().print(shared)
