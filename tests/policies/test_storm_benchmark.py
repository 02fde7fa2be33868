"""A tiny run of benchmarks/storm.py (20 calls from two processes at once against a fake
server with a hidden, flapping concurrency limit): nearly every call completes through the
shared adaptive window, no busy 429 is taken for an exhausted window (nor the other way
round), and a real exhausted window is recorded as a quota cooldown that leaves the
concurrency window alone. Timings are the benchmark's to report, not asserted here."""

from __future__ import annotations

import sys

import pytest

from _helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import storm


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_a_small_storm_completes_through_the_adaptive_window(loop: str) -> None:
    row = storm.run_storm(
        "adaptive", loop, calls=20, processes=2, high=4, low=2, flap_s=0.5, service_s=0.05,
        retry_after=0.1,
    )  # fmt: skip
    assert row.ratio >= 0.95, row
    assert row.mislabelled == 0, row
    assert row.over == 0  # the fake server itself never served above its limit


def test_an_exhausted_window_is_a_quota_cooldown_not_pressure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTPORT_STATE_DIR", "")  # quota_check sets its own folder
    check = storm.quota_check()
    assert check["kind"] == "quota_exhausted"
    assert check["cooldowns"] == [("quota_exhausted", "primary")]
    assert check["window_unchanged"] is True
