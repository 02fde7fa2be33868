"""Helpers for the session tests that run the REAL CLIs (pinned by .ci/steps/20-agent-clis and
21-more-agent-clis) against FakeModelServer: each CLI's endpoint options and a private HOME."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _more_clis_util import cli_executable
from agentport.testing import FakeModelServer


def model_for(cli: str) -> str:
    return "gemini-2.5-flash" if cli == "gemini" else "fake-model"


def cli_options(cli: str, srv: FakeModelServer, home: Path) -> dict[str, Any]:
    """`[llm.<cli>]` for *cli* pointed at *srv* with *home* as HOME; skips when the CLI is
    not installed."""
    exe = cli_executable(cli)
    if exe is None:
        pytest.skip(f"{cli} not installed (run .ci/steps/20-agent-clis / 21-more-agent-clis)")
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".codex").mkdir(exist_ok=True)
    # gemini reads its auth type and retries only from settings.json
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"maxAttempts": 1, "disableAutoUpdate": True},
    }))  # fmt: skip
    options: dict[str, Any] = {
        "executable": str(exe), "env": {"HOME": str(home)}, "api_key": "test-key",
        "grace_s": 1.0,
    }  # fmt: skip
    if cli == "codex":  # one request per fault
        return options | {"base_url": srv.openai_base_url, "request_max_retries": 0,
                          "stream_max_retries": 0}  # fmt: skip
    if cli == "claude":
        return options | {"base_url": srv.anthropic_base_url, "max_retries": 0}
    if cli == "gemini":
        return options | {"base_url": srv.gemini_base_url}
    return options | {"base_url": srv.openai_base_url}
