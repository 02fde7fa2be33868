"""`agentport quota [BACKEND]`: how much of each usage window is left, as each backend last
reported it (`agentport.policies.quota_status`; docs/failover.md "Quota headroom")."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from ..catalog import all_backends, get_capability
from ..core import ProviderError, printable
from ..policies import QuotaStatus, quota_status
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
    (agent CLIs print none)."""
    try:
        names = [get_capability(backend).name] if backend else [c.name for c in all_backends()]
    except ProviderError as exc:
        fail_error(exc)
    rows = _rows([quota_status(name) for name in names])
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
