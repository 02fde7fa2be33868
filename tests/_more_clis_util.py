"""Helpers for the real-CLI contract tests of opencode, qwen, pi and copilot
(tests/contract/test_more_clis_contract.py): where the pinned binaries are, a private HOME, and the
orphan check.

Binaries are found the way .ci/steps/20-agent-clis and 21-more-agent-clis publish them:
`$AGENTPORT_CLI_BIN_DIR`, else the folder named in `$AGENTPORT_CLI_PREFIX/bin-dir.txt`
(default prefix `~/.cache/agentport-ci/agent-clis`).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path

MARKER_ENV = "AGENTPORT_CONTRACT_RUN"


def _bin_dir() -> Path | None:
    explicit = os.environ.get("AGENTPORT_CLI_BIN_DIR")
    if explicit:
        return Path(explicit)
    prefix = Path(
        os.environ.get("AGENTPORT_CLI_PREFIX")
        or Path.home() / ".cache" / "agentport-ci" / "agent-clis"
    )
    listed = prefix / "bin-dir.txt"
    if listed.is_file():
        return Path(listed.read_text(encoding="utf-8").strip())
    return None


# read at import: the autouse conftest fixture clears AGENTPORT_* before each test
_BIN_DIR = _bin_dir()


def cli_bin_dir() -> Path | None:
    """The folder holding the pinned agent CLIs, or None when the CI step has not run."""
    return _BIN_DIR


def network_isolated() -> bool:
    """True inside a network namespace with only loopback (`unshare -n`): the contract tests
    must not be able to reach anything but 127.0.0.1."""
    return {name for _, name in socket.if_nameindex()} <= {"lo"}


def cli_executable(name: str) -> Path | None:
    folder = cli_bin_dir()
    exe = folder / name if folder is not None else None
    return exe if exe is not None and os.access(exe, os.X_OK) else None


def new_marker() -> str:
    """A value for `MARKER_ENV`: every process of one run inherits it."""
    return uuid.uuid4().hex


def live_processes(marker: str) -> list[int]:
    """PIDs of live (non-zombie) processes whose environment carries *marker*."""
    needle = f"{MARKER_ENV}={marker}".encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def wait_no_live_processes(marker: str, within_s: float = 2.0) -> list[int]:
    """The processes still alive after *within_s* (an empty list is the pass)."""
    deadline = time.monotonic() + within_s
    while True:
        alive = live_processes(marker)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)
