"""The curated surfaces of agentport.transport and agentport.backends, and the layer rules
(DESIGN.md): transport never imports backends; a backend never imports another backend."""

from __future__ import annotations

import ast
from pathlib import Path

import agentport.backends
import agentport.transport
from agentport.catalog import all_backends

SRC = Path(agentport.__file__).parent


def test_transport_exports() -> None:
    assert sorted(agentport.transport.__all__) == sorted(
        [
            "DEFAULT_MAX_EVENTS", "DEFAULT_MAX_LINE_BYTES", "DEPTH_ENV", "MAX_DEPTH",
            "MAX_JSON_DEPTH", "NESTING_MARKERS", "Frame", "LineFramer", "LineTooLongError",
            "NestingTooDeepError", "OnFrame", "OnStderrLine", "ProcessRequest",
            "ProcessResult", "check_argv", "child_env", "group_members", "guard_argv",
            "missing_executable", "open_guarded", "parse_line", "private_base",
            "private_tempdir", "run_capture", "run_capture_sync", "run_process", "tls_context",
            # warm agents (docs/warm.md)
            "DEFAULT_MAX_USES", "WORKFLOW_WARM", "WarmPool", "WarmScope", "call_pool",
            "close_shared", "current_scope", "pool_size", "shared_pool", "warm_processes",
            "with_warm_processes", "empty_folder",
        ]
    )  # fmt: skip
    for name in agentport.transport.__all__:
        assert hasattr(agentport.transport, name)


def test_backends_exports() -> None:
    for name in ("BackendSpec", "CliAdapter", "CliRuntime", "CliCall", "Invocation", "RunOutcome"):
        assert name in agentport.backends.__all__
    for name in agentport.backends.__all__:
        assert hasattr(agentport.backends, name)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_transport_imports_nothing_above_it() -> None:
    for path in (SRC / "transport").glob("*.py"):
        for name in _imports(path):
            assert "backends" not in name, (path.name, name)
            assert "factory" not in name, (path.name, name)
            assert "config" not in name.split(".")[-1:], (path.name, name)


def test_a_backend_module_never_imports_another_backend() -> None:
    backend_modules = {
        c.module.rsplit(".", 1)[1]
        for c in all_backends()
        if c.module.startswith("agentport.backends.")
    }
    for name in backend_modules:
        path = SRC / "backends" / f"{name}.py"
        others = {f".{other}" for other in backend_modules - {name}}
        assert not (_imports(path) & others), f"{name} imports another backend"


def test_the_package_top_level_is_the_factory_config_layer() -> None:
    # DESIGN.md "Layers": helpers live in the layer they serve (core, transport, cli, ...);
    # the top level holds the factory/config layer and its own helpers only
    top = {p.stem for p in Path(agentport.__file__).parent.glob("*.py")}
    assert top == {
        "__init__", "__main__", "catalog", "config", "factory", "_chain", "_trust", "_guard",
        "_handoff",  # builds the target runtime through the factory
    }  # fmt: skip
