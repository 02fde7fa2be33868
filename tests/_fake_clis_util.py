"""Helpers for tests that run the fake CLIs of tests/fixtures/fake_clis/ (goose, kiro-cli, agy)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from agentport.catalog import get_capability
from agentport.config import LLMSettings
from agentport.core import Param, ParamSupport

FAKE_CLIS = Path(__file__).parent / "fixtures" / "fake_clis"
#: backends that run only with the CLI's own tools: they refuse least privilege, the default
#: no-tools policy included (docs/backends/grok.md, zcode.md)
ALL_TOOLS_ONLY = frozenset({"grok", "zcode"})


def install_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """Put an executable named *name* first on PATH that runs the fake with this interpreter.

    Returns the file the fake records its argv, stdin and env to.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLIS / name}" "$@"\n')
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_RECORD", str(record))
    # the fakes read FAKE_* settings: the user's opt-in lets them through
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    return record


def recorded(record: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(record.read_text())
    return value


def settings(backend: str, **options: Any) -> LLMSettings:
    return LLMSettings(backend=backend, retry_attempts=1, **{backend: options})


def claimed(backend: str, param: Param) -> ParamSupport:
    return get_capability(backend).support(param)


def live_processes_with(marker: str) -> list[int]:
    """Live (non-zombie) pids whose environment mentions *marker* (the fake's FAKE_RECORD
    path, inherited by everything it spawns): what would be an orphan after a call."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found
