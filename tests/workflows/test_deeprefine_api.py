"""The curated public surface of agentport.workflows.deeprefine, and its layering."""

from __future__ import annotations

import subprocess
import sys

import agentport.workflows.deeprefine as deeprefine


def test_every_exported_name_exists() -> None:
    for name in deeprefine.__all__:
        assert hasattr(deeprefine, name), name


def test_workflow_never_imports_a_backend_module() -> None:
    code = (
        "import sys, agentport.workflows.deeprefine, agentport.cli._deeprefine; "
        "print([m for m in sys.modules if m.startswith('agentport.backends')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
