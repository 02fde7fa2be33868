"""Skip marks for tests that need an optional extra: each names the extra to install, so the
README's `pip install -e ".[dev]" && bash scripts/test.sh` skips them with a reason."""

from __future__ import annotations

import importlib.util

import pytest


def _missing(module: str) -> bool:
    return importlib.util.find_spec(module) is None


needs_web = pytest.mark.skipif(
    _missing("trafilatura"), reason="needs the web extra: pip install -e '.[web]'"
)
needs_temporal = pytest.mark.skipif(
    _missing("temporalio"), reason="needs the temporal extra: pip install -e '.[temporal]'"
)
needs_mcp = pytest.mark.skipif(
    _missing("mcp"), reason="needs the mcp extra: pip install -e '.[mcp]'"
)
needs_litellm = pytest.mark.skipif(
    _missing("litellm"), reason="needs the litellm extra: pip install -e '.[litellm]'"
)
