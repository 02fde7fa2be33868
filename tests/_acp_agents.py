"""The real ACP agents, configured the way each CLI's docs tell users to reach an
OpenAI-compatible (or Gemini) endpoint, here FakeModelServer on 127.0.0.1: the `[llm.acp]`
options for `gemini --acp`, `qwen --acp`, `opencode acp` and `copilot --acp`.

Used by tests/contract/test_acp_gemini_contract.py, tests/contract/test_acp_agents_contract.py and
benchmarks/warm_calls.py. Binaries: where .ci/steps/20-agent-clis and 21-more-agent-clis
publish them (`_more_clis_util.cli_executable`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _more_clis_util import cli_executable
from agentport.testing import FakeModelServer

AGENTS = ("gemini", "qwen", "opencode", "copilot")


def _gemini(home: Path, server: FakeModelServer) -> tuple[list[str], dict[str, str]]:
    # GEMINI_API_KEY + GOOGLE_GEMINI_BASE_URL, auth type gemini-api-key (cli-contracts.md §3)
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 1},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env = {
        "GEMINI_API_KEY": "test-key",
        "GOOGLE_GEMINI_BASE_URL": server.gemini_base_url,
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
    return ["--acp"], env


def _qwen(home: Path, server: FakeModelServer) -> tuple[list[str], dict[str, str]]:
    # OPENAI_BASE_URL + OPENAI_API_KEY, auth type openai (cli-contracts.md §5)
    env = {
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": "test-key",
        "QWEN_CODE_NO_RELAUNCH": "true",
    }
    return ["--acp", "--auth-type=openai", "--model=fake-model"], env


def _opencode(home: Path, server: FakeModelServer) -> tuple[list[str], dict[str, str]]:
    # a custom provider (@ai-sdk/openai-compatible, options.baseURL) in its config
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "fake",
        "options": {"baseURL": server.openai_base_url, "apiKey": "test-key"},
        "models": {"fake-model": {"name": "fake-model"}},
    }
    config = {
        "autoupdate": False,
        "share": "disabled",
        "provider": {"fake": provider},
        "model": "fake/fake-model",
        "small_model": "fake/fake-model",
    }
    return ["acp"], {"OPENCODE_CONFIG_CONTENT": json.dumps(config)}


def _copilot(home: Path, server: FakeModelServer) -> tuple[list[str], dict[str, str]]:
    # BYOK: COPILOT_PROVIDER_BASE_URL / _TYPE / _API_KEY and COPILOT_MODEL, no GitHub login
    env = {
        "COPILOT_PROVIDER_BASE_URL": server.openai_base_url,
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "test-key",
        "COPILOT_MODEL": "fake-model",
    }
    return ["--acp"], env


_BUILD = {"gemini": _gemini, "qwen": _qwen, "opencode": _opencode, "copilot": _copilot}


def acp_options(
    agent: str, server: FakeModelServer, home: Path, exe: str | Path | None = None
) -> dict[str, Any] | None:
    """`[llm.acp]` options running *agent* (the CI-installed binary unless *exe* is given)
    against *server* with *home* as its HOME, or None when the agent is not installed."""
    exe = exe or cli_executable(agent)
    if exe is None:
        return None
    home.mkdir(parents=True, exist_ok=True)
    args, env = _BUILD[agent](home, server)
    return {"command": [str(exe), *args], "grace_s": 2.0, "env": {"HOME": str(home), **env}}
