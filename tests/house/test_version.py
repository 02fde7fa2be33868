"""One version: `agentport.__version__`, pyproject.toml's and the newest dated section of
CHANGELOG.md are the same, and `Unreleased` sits above it (Keep a Changelog)."""

from __future__ import annotations

import re
import tomllib

import agentport
from _helpers import ROOT


def test_the_version_is_the_same_everywhere() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert agentport.__version__ == project["version"]
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased"
    assert headings[1] == project["version"], headings[:3]
