"""Helpers many test files share: one copy each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentport.backends import CliCall
from agentport.core import CompletionConfig

# the tests folder and the repository root, for tests in any layer folder
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def cli_call(run_dir: Path, config: CompletionConfig | None = None, **fields: Any) -> CliCall:
    """A `CliCall` for a spec's builders: executable `cli`, prompt `p`, no system prompt, no
    schema, no options, run folder and cwd *run_dir*, the default config; *fields* override
    any of them."""
    base: dict[str, Any] = {
        "executable": "cli",
        "prompt": "p",
        "system_prompt": None,
        "config": config or CompletionConfig(),
        "schema": None,
        "options": {},
        "run_dir": run_dir,
        "cwd": run_dir,
    }
    return CliCall(**(base | fields))
