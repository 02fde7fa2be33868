"""The public surface: `agentport.__all__` and a light `import agentport`."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agentport
import agentport.core
import agentport.testing


def test_top_level_exports() -> None:
    assert sorted(agentport.__all__) == sorted(
        [
            "AgentEvent",
            "Allow",
            "Deny",
            "PermissionKind",
            "PermissionRequest",
            "AgentRuntime",
            "Attempt",
            "BackendCapability",
            "BackendKind",
            "CompletionConfig",
            "CompletionResponse",
            "ErrorKind",
            "EventType",
            "Failure",
            "FilePart",
            "Handoff",
            "ImagePart",
            "LLMAdapter",
            "McpServer",
            "Message",
            "MessageRole",
            "Param",
            "ParamSupport",
            "ProviderError",
            "RawInfo",
            "Result",
            "RetryPolicy",
            "RetryingAdapter",
            "RuntimeHandle",
            "Sandbox",
            "Success",
            "ToolPolicy",
            "Usage",
            "__version__",
            "attach",
            "complete_sync",
            "create_agent_runtime",
            "create_llm_adapter",
            "handoff",
            "resolve_backend",
        ]
    )
    for name in agentport.__all__:
        assert getattr(agentport, name) is not None


def test_every_exported_name_of_subpackages_exists() -> None:
    for module in (agentport.core, agentport.testing):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_import_agentport_loads_no_backend_and_no_heavy_dependency() -> None:
    code = (
        "import sys, agentport; "
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "{'httpx', 'litellm', 'llama_cpp', 'typer', 'rich', 'pydantic_settings', 'jsonschema'}"
        " or m.startswith('agentport.backends') or m.startswith('agentport.workflows')]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# what `import agentport` loads of its own: the types, errors and protocols a caller
# annotates with. The policy layer, the quota parsers, the factory and every backend load on
# first use (benchmarks/import_time.py measures the time this keeps down).
IMPORT_SET = [
    "agentport",
    "agentport.core",
    "agentport.core._approvals",  # the hook's types (Allow, Deny, PermissionRequest)
    "agentport.core._capabilities",
    "agentport.core._checks",
    "agentport.core._config",
    "agentport.core._cost",  # the billing route and cost state every Usage carries
    "agentport.core._errors",
    "agentport.core._events",
    "agentport.core._mcp_servers",
    "agentport.core._messages",
    "agentport.core._parts",
    "agentport.core._printable",  # the one terminal sanitiser, exported by core
    "agentport.core._protocols",
    "agentport.core._redact",  # ProviderError redacts every field it is built with
    "agentport.core._response",
    "agentport.core._usage",
    "agentport.core._wait",  # ProviderError checks its retry_after with it
]


def test_import_agentport_loads_exactly_its_core() -> None:
    code = "import sys, agentport; print(sorted(m for m in sys.modules if 'agentport' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr(IMPORT_SET)


def test_names_loaded_on_first_use_resolve() -> None:
    from agentport import core, policies

    assert agentport.RetryPolicy is policies.RetryPolicy
    assert agentport.RetryingAdapter is policies.RetryingAdapter
    assert core.as_quota.__module__ == "agentport.core._quota"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = core.nope  # type: ignore[attr-defined]


def test_lazy_factory_names_resolve() -> None:
    assert callable(agentport.create_llm_adapter)
    assert agentport.resolve_backend("Echo") == "echo"


def test_deeprefine_script_does_not_load_the_typer_app() -> None:
    # Regression: importing agentport.cli used to load typer, rich and both workflow command
    # modules, adding ~40 MiB to every `deeprefine` run.
    code = (
        "import sys, agentport.cli._deeprefine; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'typer', 'rich', 'click'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
