"""No tool that acts, whatever model the CLI picks.

With no `model` set, codex-cli 0.171.0 picks `gpt-6.2-sol`, whose catalog metadata puts the
tools in an `additional_tools` input item instead of the Responses `tools` field: `exec` (a
JavaScript isolate with `apply_patch` inside), `spawn_agent` and its siblings, which
`features.shell_tool=false` / `features.multi_agent=false` do not remove. The least-privilege
contract tests only used `fake-model` (no metadata: the normal `tools` field), so they never
saw it. Here every tool offered anywhere in a recorded request is read (the `tools` field,
any input item carrying `tools`, namespaces, the nested tools `exec` declares) and, under the
default `ToolPolicy`, must be one that runs nothing: for codex with no model, a catalog
model and an unknown one, and for every other verified CLI with its own default model.
`ToolPolicy.cli_defaults()` must still give codex its tools (so the reader is not blind).

Unit tests (no CLI) cover the catalog rewrite (`backends/_codex_catalog.py`) and the
fail-closed paths. Contract tests: real CLIs (`.ci/steps/20-agent-clis`,
`21-more-agent-clis`), loopback only (scripts/test.sh runs them under `unshare -n`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_least_privilege_contract import _exe, _options

from _helpers import cli_call
from _more_clis_util import network_isolated
from agentport import create_llm_adapter
from agentport.backends import codex
from agentport.backends._codex_catalog import NO_TOOLS, WEB, restrict
from agentport.backends._spec import CliCall
from agentport.core import CompletionConfig, ErrorKind, Message, ProviderError, ToolPolicy
from agentport.testing import ALLOW_ENV, FakeModelServer, RecordedRequest

# tools that run nothing: ask the user (headless: no one answers), look at an image file
RUN_NOTHING = {"request_user_input", "view_image", "ask_user_question"}
_NESTED = re.compile(r"### `(\w+)`")  # how codex's `exec` declares the tools inside it


def offered(value: Any, prefix: str = "") -> set[str]:
    """Every tool name offered anywhere in a request body: any `tools` /
    `functionDeclarations` list at any depth (Responses, Chat Completions, Anthropic,
    Gemini; codex's `additional_tools` input items), namespaces as `ns.name`, and the
    tools a code-mode `exec` declares in its description as `exec>name`."""
    out: set[str] = set()
    if isinstance(value, list):
        for item in value:
            out |= offered(item, prefix)
        return out
    if not isinstance(value, dict):
        return out
    for key, item in value.items():
        if key not in ("tools", "functionDeclarations", "function_declarations"):
            out |= offered(item, prefix)
            continue
        for tool in item if isinstance(item, list) else []:
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "namespace":
                out |= offered({"tools": tool.get("tools")}, f"{prefix}{tool.get('name')}.")
                continue
            if "functionDeclarations" in tool or "function_declarations" in tool:
                out |= offered(tool, prefix)
                continue
            function = tool.get("function") if isinstance(tool.get("function"), dict) else {}
            out.add(prefix + str(tool.get("name") or function.get("name") or tool.get("type")))
            nested = _NESTED.findall(str(tool.get("description") or ""))
            out |= {f"exec>{name}" for name in nested}
    return out


def test_the_reader_finds_tools_outside_the_tools_field() -> None:
    body = {
        "tools": [{"type": "function", "function": {"name": "bash"}}],
        "input": [
            {"type": "additional_tools", "tools": [
                {"type": "namespace", "name": "functions", "tools": [
                    {"type": "custom", "name": "exec", "description": "### `apply_patch`\n"},
                ]},
            ]},
        ],
        "contents": [{"parts": []}],
        "x": {"tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}]},
    }  # fmt: skip
    assert offered(body) == {"bash", "functions.exec", "exec>apply_patch", "run_shell_command"}


# ---- the catalog rewrite (pure) ----

_ENTRY = st.fixed_dictionaries(
    {"slug": st.text(min_size=1, max_size=8)},
    optional={
        "tool_mode": st.sampled_from(["code_mode_only", None]),
        "multi_agent_version": st.sampled_from(["v1", "v2", None]),
        "apply_patch_tool_type": st.sampled_from(["freeform", "function", None]),
        "use_responses_lite": st.booleans(),
        "experimental_supported_tools": st.lists(st.sampled_from(["clock", "notes"])),
        "context_window": st.integers(0, 10**6),
        "description": st.text(max_size=10),
    },
)


@given(st.lists(_ENTRY, min_size=1, max_size=5), st.booleans())
def test_no_tools_neutralises_every_model_and_keeps_the_rest(
    models: list[dict[str, Any]], web: bool
) -> None:
    out = restrict({"models": models}, no_tools=True, web_search=web, model=None)["models"]
    assert [m["slug"] for m in out] == [m["slug"] for m in models]  # the default is unchanged
    for before, after in zip(models, out, strict=True):
        assert all(after[k] == v for k, v in NO_TOOLS.items())
        assert {k: v for k, v in after.items() if k not in NO_TOOLS} == {
            k: v for k, v in before.items() if k not in NO_TOOLS
        }


@given(st.lists(_ENTRY, min_size=1, max_size=5))
def test_web_search_alone_changes_only_the_request_shape(models: list[dict[str, Any]]) -> None:
    out = restrict({"models": models}, no_tools=False, web_search=True, model=None)["models"]
    for before, after in zip(models, out, strict=True):
        assert after == before | WEB


def test_an_unknown_tool_field_fails_closed_naming_the_model() -> None:
    catalog = {"models": [{"slug": "a"}, {"slug": "b", "browser_tool_type": "full"}]}
    for model in (None, "b"):
        with pytest.raises(ProviderError) as caught:
            restrict(catalog, no_tools=True, web_search=False, model=model)
        assert caught.value.kind is ErrorKind.unsupported
        assert "'b'" in caught.value.message
    # another model's metadata does not matter; an empty value adds no tool
    restrict(catalog, no_tools=True, web_search=False, model="a")
    restrict({"models": [{"slug": "b", "browser_tool_type": None}]}, no_tools=True,
             web_search=False, model=None)  # fmt: skip
    with pytest.raises(ProviderError, match="not a non-empty list"):
        restrict({"models": []}, no_tools=True, web_search=False, model=None)


def _call(tmp: Path, config: CompletionConfig, **options: Any) -> CliCall:
    return cli_call(tmp, config, executable="codex", options=options)


def test_the_catalog_flag_comes_last_and_only_when_tools_are_restricted(tmp_path: Path) -> None:
    extra = ["-c", 'model_catalog_json="/tmp/evil.json"']
    argv = codex.build(_call(tmp_path, CompletionConfig(), extra_args=extra)).argv
    ours = f"model_catalog_json={json.dumps(str(tmp_path / 'model-catalog.json'))}"
    assert ours in argv
    assert argv.index(ours) > argv.index(extra[1])
    web = CompletionConfig(tools=ToolPolicy.cli_defaults(), web_search=True)
    assert ours in codex.build(_call(tmp_path, web)).argv
    plain = CompletionConfig(tools=ToolPolicy.cli_defaults())
    assert not any("model_catalog_json" in a for a in codex.build(_call(tmp_path, plain)).argv)


def _script(tmp: Path, debug: str) -> Path:
    """A codex stand-in: logs each start, answers `debug models` with *debug* (shell)."""
    exe = tmp / "codex"
    done = {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}
    said = {"type": "item.completed", "item": {"type": "agent_message", "text": "hi"}}
    exe.write_text(
        f'#!/bin/sh\necho "$1" >> "{tmp / "starts"}"\n'
        f'if [ "$1" = debug ]; then {debug}; fi\ncat > /dev/null\n'
        f"echo '{json.dumps(said)}'\n"
        f"echo '{json.dumps(done)}'\n"
    )
    exe.chmod(0o755)
    return exe


@pytest.mark.anyio
@pytest.mark.parametrize(
    "debug",
    ["echo 'unknown command' >&2; exit 2", "echo '{\"models\": []}'; exit 0", "echo nope; exit 0"],
)
async def test_no_catalog_no_call(
    debug: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")
    exe = _script(tmp_path, debug)
    llm = create_llm_adapter("codex", retry=False, codex={"executable": str(exe)})
    result = await llm.complete([Message.user("hi")])
    error = result.failure()
    assert error.kind is ErrorKind.unsupported
    assert "codex's default model" in error.message
    assert (tmp_path / "starts").read_text().split() == ["debug"]  # `exec` never ran


@pytest.mark.anyio
async def test_the_catalog_is_read_once_and_web_search_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")
    catalog = json.dumps({"models": [{"slug": "m", "tool_mode": "code_mode_only"}]})
    exe = _script(tmp_path, f"echo '{catalog}'; exit 0")
    llm = create_llm_adapter("codex", retry=False, codex={"executable": str(exe)})
    for config in (CompletionConfig(), CompletionConfig(web_search=True)):
        assert (await llm.complete([Message.user("hi")], config)).unwrap().content == "hi"
    assert (tmp_path / "starts").read_text().split() == ["debug", "exec", "exec"]


# ---- contract: the real CLIs ----

_CONTRACT = (
    pytest.mark.contract,
    pytest.mark.anyio,
    pytest.mark.usefixtures("_allow"),
    pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)"),
)


def contract(test: Any) -> Any:
    for mark in _CONTRACT:
        test = mark(test)
    return test


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def _allow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")


async def _requests(
    name: str, tmp: Path, model: str | None, config: CompletionConfig
) -> tuple[list[RecordedRequest], Any]:
    exe = _exe(name)
    if exe is None:
        pytest.skip(f"{name} not installed")
    home = tmp / "home"
    home.mkdir()
    with FakeModelServer(default="done") as server:
        options = _options(name, server, home) | {
            "executable": str(exe), "env": {"HOME": str(home)}, "grace_s": 1.0,
        }  # fmt: skip
        kwargs: dict[str, Any] = {"model": model} if model else {}
        llm = create_llm_adapter(name, retry=False, **kwargs, **{name: options})
        config = config.model_copy(update={"model": model, "idle_timeout_s": 40})
        result = await llm.complete([Message.user("Say done.")], config)
        return [r for r in server.model_requests if not r.is_side], result


def _input_kinds(request: RecordedRequest) -> set[Any]:
    items = request.body.get("input", []) if isinstance(request.body, dict) else []
    return {i.get("type") for i in items if isinstance(i, dict)}


# None: codex's default (gpt-6.2-sol: code mode, tools in `additional_tools`); a named
# catalog model (code mode too); a model codex has no metadata for (the `tools` field)
@contract
@pytest.mark.parametrize("model", [None, "gpt-6.2-astra", "fake-model"])
async def test_codex_offers_nothing_that_acts_whatever_the_model(
    model: str | None, tmp_path: Path
) -> None:
    requests, result = await _requests("codex", tmp_path, model, CompletionConfig())
    assert requests, f"codex never reached the fake server: {result}"
    for request in requests:
        tools = offered(request.body)
        assert tools <= RUN_NOTHING, f"{request.model}: {sorted(tools - RUN_NOTHING)}"
        assert "additional_tools" not in _input_kinds(request)
    assert requests[0].model == (model or "gpt-6.2-sol")


@contract
async def test_codex_default_model_gets_web_search_and_nothing_else(tmp_path: Path) -> None:
    config = CompletionConfig(tools=ToolPolicy.none(), web_search=True)
    requests, result = await _requests("codex", tmp_path, None, config)
    assert requests, f"codex never reached the fake server: {result}"
    tools = offered(requests[0].body)
    assert "web_search" in tools
    assert tools - {"web_search"} <= RUN_NOTHING, sorted(tools)


@contract
@pytest.mark.parametrize("model", [None, "fake-model"])
async def test_cli_defaults_still_give_codex_its_tools(model: str | None, tmp_path: Path) -> None:
    """The opt-in is unchanged, and the reader sees code mode's tools where they are."""
    config = CompletionConfig(tools=ToolPolicy.cli_defaults())
    requests, result = await _requests("codex", tmp_path, model, config)
    assert requests, f"codex never reached the fake server: {result}"
    tools = offered(requests[0].body)
    assert tools & {"functions.exec", "exec", "exec_command"}, sorted(tools)
    assert any(t.endswith("spawn_agent") for t in tools), sorted(tools)
    if model is None:
        assert "additional_tools" in _input_kinds(requests[0])  # codex's own shape, untouched


# Every other verified CLI with NO model (its own default), default policy: the recorded
# requests (0.x versions pinned in .ci) carry no tool list outside `tools` and no tool that
# acts. copilot in bring-your-own-key mode refuses to run without a model: no request at all.
@contract
@pytest.mark.parametrize("name", ["claude", "gemini", "qwen", "opencode", "pi", "copilot"])
async def test_other_clis_default_models_offer_nothing_that_acts(name: str, tmp_path: Path) -> None:
    requests, result = await _requests(name, tmp_path, None, CompletionConfig())
    if name == "copilot":
        assert requests == []
        assert "explicit model" in result.failure().message
        return
    assert requests, f"{name} never reached the fake server: {result}"
    for request in requests:
        tools = offered(request.body)
        assert tools <= RUN_NOTHING, f"{name} ({request.model}): {sorted(tools - RUN_NOTHING)}"
