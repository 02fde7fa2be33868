"""The internal surfaces of agentport.transport and agentport.backends (the layer rules
between them: tests/test_layers.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import agentport.backends
import agentport.transport
from agentport.config import LLMSettings
from agentport.factory import backend_settings

SRC = Path(agentport.__file__).parent


def test_transport_exports() -> None:
    # the internal surface the other layers use (the runner's own names, the shared file
    # helpers, the path authority, long-lived processes, warm pools)
    assert sorted(agentport.transport.__all__) == sorted(
        [
            "DEFAULT_MAX_EVENTS", "DEFAULT_MAX_LINE_BYTES", "Frame", "LineFramer",
            "LineTooLongError", "LiveProcess", "OnFrame", "PathRefused", "ProcessRequest",
            "ProcessResult", "Rooted", "Roots", "Stop", "WORKFLOW_WARM", "WarmPool",
            "append_text", "atomic_write", "call_pool", "cannot_start", "check_writable",
            "child_env", "close_at_eof", "close_shared", "drain", "empty_folder",
            "ensure_private_dir", "ensure_real_dir", "guard_argv", "missing_executable",
            "open_guarded", "open_lock_file", "open_regular_input", "parse_line",
            "pool_size", "private_tempdir", "read_regular", "run_capture",
            "run_capture_sync", "run_process", "signal_group", "tls_context",
            "total_timeout", "warm_processes", "with_warm_processes",
        ]
    )  # fmt: skip
    for name in agentport.transport.__all__:
        assert hasattr(agentport.transport, name)


def test_backends_exports() -> None:
    for name in ("BackendSpec", "CliAdapter", "CliRuntime", "CliCall", "Invocation", "RunOutcome"):
        assert name in agentport.backends.__all__
    for name in agentport.backends.__all__:
        assert hasattr(agentport.backends, name)


def test_a_backend_gets_a_frozen_copy_of_its_own_table() -> None:
    """What the factory hands a backend cannot be changed by it, nor by the caller's dict."""
    table = {"executable": "/bin/x", "env": {"A": "1"}}
    llm = LLMSettings(backend="claude", model="m", warm=2, claude=table, codex={"x": 1})
    own = backend_settings(llm, "claude")
    assert dict(own.options) == table  # its own table only, never another backend's
    assert (own.defaults.model, own.warm, own.endpoint_from_project) == ("m", 2, False)
    table["executable"] = "/bin/y"
    assert own.options["executable"] == "/bin/x"
    with pytest.raises(TypeError):
        own.options["executable"] = "/bin/z"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        own.warm = 3  # type: ignore[misc]
