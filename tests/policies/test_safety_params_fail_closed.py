"""Safety parameters fail closed: a tool list or sandbox a backend cannot enforce is
`ErrorKind.unsupported` whatever `on_ignored` says, from the catalog check or from the spec's
`build`; and every backend can run the default (no tools, read-only) but grok and zcode,
which have no flag to limit the tools they run headless.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from returns.result import Failure, Success

from _fake_clis_util import ALL_TOOLS_ONLY, install_fake
from agentport import create_llm_adapter
from agentport.backends import CliCall, agy, claude, codex, copilot, gemini, goose, opencode
from agentport.catalog import all_backends
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    Message,
    ProviderError,
    Sandbox,
    ToolPolicy,
    check_params,
)

USER = [Message.user("hi")]


#: backends that cannot run without tools: the default policy is refused, never dropped
NO_LEAST_PRIVILEGE = ALL_TOOLS_ONLY


@pytest.mark.parametrize("capability", all_backends(), ids=lambda c: c.name)
def test_every_backend_accepts_the_default_policy(capability: object) -> None:
    result = check_params(capability, USER, CompletionConfig())  # type: ignore[arg-type]
    if capability.name in NO_LEAST_PRIVILEGE:  # type: ignore[attr-defined]
        assert isinstance(result, Failure), result
        assert result.failure().kind is ErrorKind.unsupported
        assert capability.auto_priority is None  # type: ignore[attr-defined]  # auto never picks it
        return
    assert isinstance(result, Success), result


@pytest.mark.parametrize("on_ignored", ["warn", "fail"])
@pytest.mark.parametrize("backend", ["pi", "hermes"])
def test_an_unenforceable_sandbox_is_refused_even_under_warn(backend: str, on_ignored: str) -> None:
    from agentport.catalog import get_capability

    config = CompletionConfig(
        tools=ToolPolicy(allowed_tools=("bash",), sandbox=Sandbox.read_only),
        on_ignored=on_ignored,  # type: ignore[arg-type]
    )
    result = check_params(get_capability(backend), USER, config)
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.kind is ErrorKind.unsupported
    assert error.details["params"] == ["sandbox"]


def test_ignored_non_safety_params_still_only_warn() -> None:
    from agentport.catalog import get_capability

    result = check_params(get_capability("pi"), USER, CompletionConfig(temperature=0.1))
    assert isinstance(result, Success)
    assert any("temperature" in w for w in result.unwrap())


REFUSED = [
    (codex, ToolPolicy(allowed_tools=("Read",))),
    (goose, ToolPolicy(sandbox=Sandbox.workspace_write)),
    (goose, ToolPolicy(allowed_tools=("developer",))),
    (agy, ToolPolicy(allowed_tools=("read_file",))),
    (opencode, ToolPolicy(allowed_tools=("bash",), sandbox=Sandbox.read_only)),
    (opencode, ToolPolicy(allowed_tools=("write",), sandbox=Sandbox.read_only)),
    (copilot, ToolPolicy(allowed_tools=("bash",), sandbox=Sandbox.workspace_write)),
    (claude, ToolPolicy(allowed_tools=("Bash",), sandbox=Sandbox.read_only)),
    (claude, ToolPolicy(allowed_tools=("Write",), sandbox=Sandbox.read_only)),
    (gemini, ToolPolicy(allowed_tools=("run_shell_command",), sandbox=Sandbox.workspace_write)),
]


@pytest.mark.parametrize(("module", "tools"), REFUSED, ids=lambda v: getattr(v, "__name__", ""))
def test_build_refuses_what_the_cli_cannot_enforce(
    module: object, tools: ToolPolicy, tmp_path: Path
) -> None:
    call = CliCall(
        executable="cli", prompt="p", system_prompt=None, config=CompletionConfig(tools=tools),
        schema=None, options={}, run_dir=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    with pytest.raises(ProviderError) as caught:
        module.build(call)  # type: ignore[attr-defined]
    assert caught.value.kind is ErrorKind.unsupported


@pytest.mark.anyio
async def test_a_refusal_is_a_failure_value_and_spawns_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "goose")
    adapter = create_llm_adapter("goose", retry=False)
    config = CompletionConfig(tools=ToolPolicy(sandbox=Sandbox.workspace_write), on_ignored="warn")
    result = await adapter.complete(USER, config)
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.unsupported
    assert not record.exists(), "the CLI was started"
