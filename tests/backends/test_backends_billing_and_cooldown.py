"""`agentport backends` and the generated docs say how each backend is paid for and which one
is cooling down after an exhausted usage window; run as the
README shows it, in a subprocess, against the test's own state directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentport.catalog import all_backends
from agentport.cli._docs import billing_label, render_backend_page, render_matrix
from agentport.core import BackendKind, Billing
from agentport.policies import default_store


def _backends(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentport", "backends", *args], cwd=cwd, capture_output=True,
        text=True, timeout=60, env={**os.environ, "COLUMNS": "400"}, check=False,
    )  # fmt: skip


def test_every_backend_declares_how_it_is_paid_for() -> None:
    for cap in all_backends():
        assert cap.billing, f"{cap.name} declares no billing"
        assert len(set(cap.billing)) == len(cap.billing)
        if cap.kind is BackendKind.test:
            assert cap.billing == (Billing.none,)
        else:
            assert Billing.none not in cap.billing
            assert cap.billing_note, cap.name
    by_name = {c.name: c for c in all_backends()}
    for name in ("claude", "codex", "gemini", "copilot"):  # they spend a subscription window
        assert by_name[name].billing[0] is Billing.subscription
    assert by_name["local"].billing == (Billing.local,)


def test_docs_show_the_billing_of_every_backend() -> None:
    matrix = render_matrix()
    assert "| Paid by |" in matrix
    for cap in all_backends():
        assert f"| {billing_label(cap)} |" in matrix
        assert f"- **Paid by:** {billing_label(cap)}" in render_backend_page(cap, "")


def test_backends_shows_billing_and_the_shared_cooldown(tmp_path: Path) -> None:
    until = datetime.now(UTC) + timedelta(hours=3)
    default_store().record("codex", until, reason="You've hit your usage limit.", window="session")
    out = _backends("--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["claude"]["billing"] == ["subscription", "api_key", "cloud"]
    assert rows["claude"]["cooldown"] is None
    cooling = rows["codex"]["cooldown"]
    assert cooling["until"] == until.isoformat(timespec="seconds")
    assert cooling["window"] == "session"
    assert 3 * 3600 - 120 <= cooling["remaining_s"] <= 3 * 3600
    table = _backends(cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "paid by" in table.stdout
    assert "subscription login" in table.stdout
    codex_line = next(line for line in table.stdout.splitlines() if "│ codex" in line)
    assert f"until {until.strftime('%Y-%m-%d %H:%M')} UTC" in codex_line
