"""Configured values reach the backend whatever the caller passes.

Regression: `CliAdapter.run` did `config = config or self.default_config`, so any per-call
`CompletionConfig` (the README's own example) silently replaced `llm.model` and the configured
timeouts with the `CompletionConfig` defaults. The matrix: every backend kind x model /
temperature / max_tokens / startup / idle / total timeout x every config source x with and
without a per-call config, asserting what the backend actually received (the argv and the
`ProcessRequest` of a CLI, the HTTP request body, the config at the backend's innermost seam).
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _runner_util import fake_executable
from agentport import CompletionConfig, Message, create_agent_runtime, create_llm_adapter
from agentport.policies import DEADLINE_SLACK_S
from agentport.testing import FakeModelServer, TextReply

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

VALUES: dict[str, Any] = {
    "model": "openai/m-conf",
    "temperature": 0.3,
    "max_tokens": 77,
    "startup_timeout_s": 11.0,
    "idle_timeout_s": 12.0,
    "total_timeout_s": 13.0,
}
PER_CALL: dict[str, Any] = {
    "model": "openai/m-call",
    "temperature": 1.1,
    "max_tokens": 33,
    "startup_timeout_s": 21.0,
    "idle_timeout_s": 22.0,
    "total_timeout_s": 23.0,
}
SOURCES = ("agentport.toml", "environment", "pyproject.toml", "argument")
KINDS = ("cli", "acp", "openai_compat", "litellm", "local", "scripted")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # what is merged does not depend on the event loop; keep the matrix small


class _Stop(Exception):
    """Raised by a stub once it has recorded what the backend received."""


def _toml(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _configure(
    source: str, field: str, value: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Set `[llm] field = value` in *source*; returns the create_llm_adapter overrides."""
    if source == "agentport.toml":
        (tmp_path / "agentport.toml").write_text(f"[llm]\n{field} = {_toml(value)}\n")
    elif source == "pyproject.toml":
        (tmp_path / "pyproject.toml").write_text(
            f"[tool.agentport.llm]\n{field} = {_toml(value)}\n"
        )
    elif source == "environment":
        monkeypatch.setenv(f"AGENTPORT_LLM_{field.upper()}", str(value))
    else:
        return {field: value}
    return {}


def _stub_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Enough of llama_cpp for `agentport.backends.local` to import without the extra (the
    seam is before any model loads); the module imported against it is dropped afterwards."""
    import agentport.backends

    fake = types.ModuleType("llama_cpp")
    fake.__spec__ = importlib.machinery.ModuleSpec("llama_cpp", None)
    grammar = types.ModuleType("llama_cpp.llama_grammar")
    fake.llama_grammar = grammar  # type: ignore[attr-defined]
    fake.llama_log_callback = lambda fn: fn  # type: ignore[attr-defined]
    fake.llama_log_set = lambda *args: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    monkeypatch.setitem(sys.modules, "llama_cpp.llama_grammar", grammar)
    for holder, key in ((sys.modules, "agentport.backends.local"),):
        if key not in holder:  # undo removes what this test imports
            monkeypatch.setitem(holder, key, None)  # type: ignore[arg-type]
            del holder[key]
    if not hasattr(agentport.backends, "local"):
        monkeypatch.setattr(agentport.backends, "local", None, raising=False)
        delattr(agentport.backends, "local")


Probe = Callable[[dict[str, Any], CompletionConfig | None], Awaitable[dict[str, Any]]]


def _fields(config: CompletionConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in VALUES}


def _probe(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeModelServer
) -> Probe:
    """A function (overrides, per-call config) -> what the backend of *kind* received."""
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    messages = [Message.user("hi")]

    if kind == "cli":
        from agentport.backends import _cli, codex

        seen: dict[str, Any] = {}
        real_build = codex.SPEC.build

        def build(call: Any) -> Any:
            seen["config"] = call.config
            return real_build(call)

        async def run_process(request: Any, on_frame: Any) -> Any:
            seen["request"] = request
            raise _Stop

        monkeypatch.setattr(codex, "SPEC", dataclasses.replace(codex.SPEC, build=build))
        monkeypatch.setattr(_cli, "run_process", run_process)
        exe = str(fake_executable(tmp_path))

        async def cli(overrides: dict[str, Any], config: CompletionConfig | None) -> dict[str, Any]:
            llm = create_llm_adapter("codex", cwd=tmp_path, codex={"executable": exe}, **overrides)
            with pytest.raises(_Stop):
                await llm.complete(messages, config)
            request = seen["request"]
            flags = [a.split("=", 1)[1] for a in request.argv if a.startswith("--model=")]
            return _fields(seen["config"]) | {
                "model": flags[0] if flags else None,  # the argv, not the config
                "startup_timeout_s": request.startup_timeout_s,
                "idle_timeout_s": request.idle_timeout_s,
                "total_timeout_s": request.total_timeout_s,
            }

        return cli

    if kind == "acp":
        from agentport.backends import acp

        got: dict[str, Any] = {}

        async def once(self: Any, convo: Any, config: CompletionConfig, deadline: Any) -> Any:
            got["config"] = config
            raise _Stop

        monkeypatch.setattr(acp.AcpAdapter, "_once", once)

        async def acp_probe(
            overrides: dict[str, Any], config: CompletionConfig | None
        ) -> dict[str, Any]:
            llm = create_llm_adapter("acp", cwd=tmp_path, **overrides)
            with pytest.raises(_Stop):
                await llm.complete(messages, config)
            return _fields(got["config"])

        return acp_probe

    if kind in ("openai_compat", "litellm"):
        if kind == "litellm":
            pytest.importorskip(
                "agentport.backends.litellm", reason="needs the litellm extra", exc_type=ImportError
            )
            from agentport.backends.litellm import LiteLLMAdapter as Adapter

            options = {
                "model": "openai/fake-model",
                "api_base": server.openai_base_url,
                "api_key": "sk-fake-0123456789",
            }
        else:
            from agentport.backends.openai_compat import OpenAICompatAdapter as Adapter  # type: ignore[assignment]

            options = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123456789"}
        inner: dict[str, Any] = {}
        real = Adapter._complete

        async def spy(self: Any, convo: Any, config: CompletionConfig) -> Any:
            inner["config"] = config
            return await real(self, convo, config)

        monkeypatch.setattr(Adapter, "_complete", spy)

        async def http(
            overrides: dict[str, Any], config: CompletionConfig | None
        ) -> dict[str, Any]:
            server.script(TextReply("ok"))
            llm = create_llm_adapter(kind, cwd=tmp_path, **{kind: options}, **overrides)
            result = await llm.complete(messages, config)
            assert result.unwrap().content == "ok"
            body = server.model_requests[-1].body
            model = body.get("model")
            if kind == "litellm" and model is not None:
                model = f"openai/{model}"  # litellm strips the provider prefix on the wire
            return _fields(inner["config"]) | {
                "model": model if model not in ("fake-model", "openai/fake-model") else None,
                "temperature": body.get("temperature"),
                "max_tokens": body.get("max_tokens"),
            }

        return http

    if kind == "local":
        if importlib.util.find_spec("llama_cpp") is None:
            _stub_llama_cpp(monkeypatch)
        from agentport.backends import local

        ran: dict[str, Any] = {}

        async def run(self: Any, convo: Any, config: CompletionConfig, *a: Any, **k: Any) -> Any:
            ran["config"] = config
            raise _Stop

        monkeypatch.setattr(local.LocalAdapter, "_run", run)

        async def local_probe(
            overrides: dict[str, Any], config: CompletionConfig | None
        ) -> dict[str, Any]:
            llm = create_llm_adapter("local", cwd=tmp_path, **overrides)
            with pytest.raises(_Stop):
                await llm.complete(messages, config)
            return _fields(ran["config"])

        return local_probe

    async def scripted(
        overrides: dict[str, Any], config: CompletionConfig | None
    ) -> dict[str, Any]:
        llm = create_llm_adapter("scripted", cwd=tmp_path, **overrides)
        (await llm.complete(messages, config)).unwrap()
        return _fields(llm.inner.calls[-1].config)  # type: ignore[attr-defined]

    return scripted


def _expect(field: str, received: Any, wanted: Any) -> None:
    if field == "total_timeout_s":
        # the policy layer hands the backend the time left of the whole-call deadline
        assert wanted - DEADLINE_SLACK_S < received <= wanted, (field, received, wanted)
    else:
        assert received == wanted, (field, received, wanted)


@pytest.mark.parametrize("per_call", [False, True], ids=["no-config", "per-call-config"])
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("field", list(VALUES))
@pytest.mark.parametrize("kind", KINDS)
async def test_configured_value_reaches_the_backend(
    kind: str,
    field: str,
    source: str,
    per_call: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: FakeModelServer,
) -> None:
    probe = _probe(kind, tmp_path, monkeypatch, server)
    overrides = _configure(source, field, VALUES[field], tmp_path, monkeypatch)
    # a per-call config that sets something else (the README passes output_schema)
    config = CompletionConfig(label="per-call") if per_call else None
    received = await probe(overrides, config)
    _expect(field, received[field], VALUES[field])


@pytest.mark.parametrize("field", list(VALUES))
@pytest.mark.parametrize("kind", KINDS)
async def test_a_value_the_call_sets_wins_over_the_configured_one(
    kind: str, field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeModelServer
) -> None:
    probe = _probe(kind, tmp_path, monkeypatch, server)
    received = await probe({field: VALUES[field]}, CompletionConfig(**{field: PER_CALL[field]}))
    _expect(field, received[field], PER_CALL[field])


async def test_without_the_policy_layer_the_adapter_still_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = create_llm_adapter("scripted", cwd=tmp_path, retry=False, **VALUES)
    (await llm.complete([Message.user("q")], CompletionConfig(label="x"))).unwrap()
    config = llm.calls[-1].config  # type: ignore[attr-defined]
    assert _fields(config) == VALUES
    assert config.label == "x"


async def test_runtime_turns_get_the_configured_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentport.backends import _cli
    from agentport.core import ErrorKind, EventType, ProviderError
    from agentport.transport import ProcessResult

    seen: list[Any] = []

    async def run_process(request: Any, on_frame: Any) -> Any:
        seen.append(request)
        return ProcessResult(error=ProviderError(ErrorKind.config, "stub: not run"))

    monkeypatch.setattr(_cli, "run_process", run_process)
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    (tmp_path / "agentport.toml").write_text("[llm]\nidle_timeout_s = 12\nmodel = 'm-rt'\n")
    runtime = create_agent_runtime(
        "codex",
        cwd=tmp_path,
        # the `codex exec` form (a runtime's turns otherwise run on `codex app-server`)
        codex={"executable": str(fake_executable(tmp_path)), "runtime_app_server": False},
    )
    async with runtime:
        events = [e async for e in runtime.send("hi", CompletionConfig(label="turn"))]
    assert events[-1].type is EventType.error
    assert seen[0].idle_timeout_s == 12
    assert "--model=m-rt" in seen[0].argv


WORKFLOW_SETTINGS = {"model": "m-wf", "idle_timeout_s": 7.0, "startup_timeout_s": 8.0}


def _assert_configured(configs: list[CompletionConfig]) -> None:
    assert configs, "the workflow made no call"
    for config in configs:
        assert (config.model, config.idle_timeout_s, config.startup_timeout_s) == (
            "m-wf",
            7.0,
            8.0,
        )
        assert 0 < config.total_timeout_s <= 1800


async def test_deep_research_library_calls_get_the_configured_values(tmp_path: Path) -> None:
    from agentport.workflows.deep_research import run_research

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Retry\n\nagentport retries failed calls with back-off.\n")
    llm = create_llm_adapter("scripted", cwd=tmp_path, **WORKFLOW_SETTINGS)
    await run_research("How does agentport retry?", llm, corpus=corpus)
    _assert_configured([c.config for c in llm.inner.calls])  # type: ignore[attr-defined]


async def test_deeprefine_library_calls_get_the_configured_values(tmp_path: Path) -> None:
    from _deeprefine_util import write_tiny
    from agentport.workflows.deeprefine import load_graph, run_loop

    graph = load_graph(write_tiny(tmp_path / "proj"))
    llm = create_llm_adapter("scripted", cwd=tmp_path, **WORKFLOW_SETTINGS)
    await run_loop(llm, graph, "How does run() call helper()?")
    _assert_configured([c.config for c in llm.inner.calls])  # type: ignore[attr-defined]


_FIELD_VALUES = {
    "model": st.sampled_from([None, "a", "b"]),
    "temperature": st.sampled_from([None, 0.0, 0.5, 2.0]),
    "max_tokens": st.sampled_from([None, 1, 64]),
    "startup_timeout_s": st.sampled_from([1.0, 120.0]),
    "idle_timeout_s": st.sampled_from([2.0, 300.0]),
    "attempt_timeout_s": st.sampled_from([None, 5.0]),
    "total_timeout_s": st.sampled_from([3.0, 1800.0]),
    "on_ignored": st.sampled_from(["warn", "fail"]),
}
_PARTIAL = st.fixed_dictionaries({}, optional=_FIELD_VALUES)


@given(call=_PARTIAL, configured=_PARTIAL)
def test_merge_takes_the_calls_fields_and_the_configured_rest(
    call: dict[str, Any], configured: dict[str, Any]
) -> None:
    from agentport.core import merge_config

    defaults = CompletionConfig(**configured)
    merged = merge_config(CompletionConfig(**call), defaults)
    for name in _FIELD_VALUES:
        if name in call:
            assert getattr(merged, name) == call[name]
        else:
            assert getattr(merged, name) == getattr(defaults, name)
    assert merge_config(merged, defaults) == merged  # idempotent: policy + adapter both merge
    assert merge_config(None, defaults) == defaults
