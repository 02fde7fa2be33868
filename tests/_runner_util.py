"""Helpers for tests that spawn tests/fixtures/cli/fake_cli.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "cli"
FAKE_CLI = FIXTURES / "fake_cli.py"


def fake_argv(*args: str) -> list[str]:
    return [sys.executable, str(FAKE_CLI), *args]


def fake_env(**fake: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_CLI_")}
    env.update({f"FAKE_CLI_{k.upper()}": v for k, v in fake.items()})
    return env


def fake_executable(tmp: Path) -> Path:
    """A one-file executable that runs fake_cli.py (what a spec sees as the CLI binary)."""
    exe = tmp / "fake-agent"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLI}" "$@"\n')
    exe.chmod(0o755)
    return exe
