"""The public surface: `agentport.__all__` and a light `import agentport`."""

from __future__ import annotations

import subprocess
import sys

import agentport
import agentport.core
import agentport.testing


def test_top_level_exports() -> None:
    assert sorted(agentport.__all__) == sorted(
        [
            "AgentEvent",
            "AgentRuntime",
            "Attempt",
            "BackendCapability",
            "BackendKind",
            "CompletionConfig",
            "CompletionResponse",
            "ErrorKind",
            "EventType",
            "Failure",
            "LLMAdapter",
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
            "complete_sync",
            "create_agent_runtime",
            "create_llm_adapter",
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
