"""`reasoning_effort` per backend, as the catalog declares it: a NATIVE backend puts the level
into what it sends (argv, env, a settings file in the run directory, the HTTP body, the
LiteLLM kwargs), an IGNORED one sends it nowhere, and no backend sends a level the caller did
not set. The real CLIs' requests are checked in test_reasoning_effort_contract.py.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from _fake_clis_util import ALL_TOOLS_ONLY
from agentport.backends import CliCall
from agentport.backends._openai_wire import EndpointOptions, build_request
from agentport.catalog import all_backends, get_capability
from agentport.core import (
    CompletionConfig,
    Message,
    Param,
    ParamSupport,
    ReasoningEffort,
    ToolPolicy,
)

# acp has no argv builder: it speaks ACP to a configured agent, whose session/new and
# session/prompt have no effort field (ACP schema), so it is IGNORED without a build to check
CLI_BACKENDS = sorted(
    cap.name for cap in all_backends() if cap.kind.value == "cli" and cap.name != "acp"
)
LEVELS: tuple[ReasoningEffort, ...] = ("low", "medium", "high")


def _sent(name: str, tmp: Path, level: ReasoningEffort | None) -> str:
    """Everything a CLI backend's `build` hands the child (argv, env values, the files it
    wrote into the run directory), as one text."""
    module = importlib.import_module(f"agentport.backends.{name}")
    config = CompletionConfig(
        model="m",
        reasoning_effort=level,
        tools=ToolPolicy.cli_defaults() if name in ALL_TOOLS_ONLY else ToolPolicy(),
    )
    options = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}
    if name == "gjc":  # gjc switches models by provider and id
        options["provider"] = "p"
    call = CliCall(
        executable=f"/bin/{name}",
        prompt="hello",
        system_prompt=None,
        config=config,
        schema=None,
        options=options,
        run_dir=tmp,
        cwd=tmp,
        session_id=None,
    )
    invocation = module.build(call)
    files = [p.read_text("utf-8", "replace") for p in sorted(tmp.rglob("*")) if p.is_file()]
    return "\0".join([*invocation.argv, *invocation.env.values(), *files])


def _mentions(text: str, level: str) -> bool:
    return re.search(rf"(?<![\w-]){level}(?![\w-])", text) is not None


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", CLI_BACKENDS)
def test_a_cli_backend_sends_the_level_exactly_when_native(
    name: str, level: ReasoningEffort, tmp_path: Path
) -> None:
    support = get_capability(name).support(Param.reasoning_effort)
    asked, plain = tmp_path / "asked", tmp_path / "plain"
    asked.mkdir()
    plain.mkdir()
    sent = _sent(name, asked, level)
    assert _mentions(sent, level) is (support is ParamSupport.NATIVE), sent
    assert not any(_mentions(_sent(name, plain, None), lv) for lv in LEVELS)


def test_acp_declares_the_level_ignored() -> None:
    assert get_capability("acp").support(Param.reasoning_effort) is ParamSupport.IGNORED


@pytest.mark.parametrize("level", LEVELS)
def test_http_bodies_carry_the_level(level: ReasoningEffort) -> None:
    assert get_capability("openai_compat").support(Param.reasoning_effort) is ParamSupport.NATIVE
    body = build_request(
        [Message.user("u")], CompletionConfig(reasoning_effort=level), EndpointOptions()
    )
    assert body["reasoning_effort"] == level
    assert "reasoning_effort" not in build_request(
        [Message.user("u")], CompletionConfig(), EndpointOptions()
    )


@pytest.mark.parametrize("level", LEVELS)
def test_litellm_kwargs_carry_the_level(level: ReasoningEffort) -> None:
    pytest.importorskip(
        "agentport.backends.litellm", reason="needs the litellm extra", exc_type=ImportError
    )
    from agentport.backends.litellm import LiteLLMAdapter, LiteLLMOptions

    assert get_capability("litellm").support(Param.reasoning_effort) is ParamSupport.NATIVE
    adapter = LiteLLMAdapter(get_capability("litellm"), LiteLLMOptions(model="openai/m"))
    kwargs = adapter._kwargs([Message.user("u")], CompletionConfig(reasoning_effort=level), None)
    assert kwargs["reasoning_effort"] == level
    assert "reasoning_effort" not in adapter._kwargs([Message.user("u")], CompletionConfig(), None)


def test_an_unknown_level_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="reasoning_effort"):
        CompletionConfig(reasoning_effort="extreme")  # type: ignore[arg-type]
