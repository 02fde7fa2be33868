"""Schema honesty on every backend kind with a NATIVE schema path: a schema the strict subset
cannot express is never sent in the backend's native form (CLI `native_schema`, openai_compat
and litellm `response_format`, local's grammar); the schema goes in the prompt, the answer is
validated locally and the response carries a warning. A length-cut answer says so."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest
from pydantic import BaseModel
from returns.result import Success

from _runner_util import FIXTURES, fake_executable
from agentport import CompletionConfig, CompletionResponse, ErrorKind, Message, create_llm_adapter
from agentport.catalog import all_backends
from agentport.core import BackendKind, Param, ParamSupport
from agentport.testing import FakeModelServer, HttpFault, JsonReply

pytestmark = pytest.mark.anyio


class Loose(BaseModel):  # `Any` and a free-form map: nothing the strict subset can say
    status: str
    extra: Any = None
    meta: dict[str, Any] = {}


class Tight(BaseModel):
    status: str
    answer: int


LOOSE_ANSWER = {"status": "ok", "answer": 42}  # what the recorded transcripts answer
FAST = CompletionConfig(startup_timeout_s=10, idle_timeout_s=10, total_timeout_s=30)


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


def _native_cli_backends() -> list[str]:
    names = []
    for cap in all_backends():
        if cap.kind is not BackendKind.cli:
            continue
        if cap.support(Param.output_schema) is not ParamSupport.NATIVE:
            continue
        spec = getattr(importlib.import_module(f"agentport.backends.{cap.name}"), "SPEC", None)
        if spec is not None and spec.native_schema is not None:
            names.append(cap.name)
    return names


def test_the_cli_backends_with_a_native_schema_are_found() -> None:
    assert {"codex", "claude"} <= set(_native_cli_backends())


@pytest.mark.parametrize("backend", _native_cli_backends())
@pytest.mark.parametrize(("schema", "native"), [(Loose, False), (Tight, True)])
async def test_every_cli_spec_sends_its_native_schema_only_when_it_fits(
    backend: str, schema: type[BaseModel], native: bool, tmp_path: Path
) -> None:
    llm: Any = create_llm_adapter(backend, retry=False, **{backend: {"executable": "/bin/true"}})
    seen: list[tuple[bool, str]] = []

    async def once(messages: Any, config: Any, native_schema: bool, *_: Any, **__: Any) -> Any:
        seen.append((native_schema, messages[-1].content))
        return Success(CompletionResponse(content=json.dumps(LOOSE_ANSWER), backend=backend))

    llm._once = once  # the unit seam: one CLI run
    response = await llm.complete([Message.user("q")], CompletionConfig(output_schema=schema))
    response = response.unwrap()
    assert response.parsed.status == "ok"
    assert seen[0][0] is native
    assert ("JSON schema" in seen[0][1]) is not native  # TRANSLATED: the schema in the prompt
    fell_back = [w for w in response.warnings if "did not enforce output_schema natively" in w]
    assert bool(fell_back) is not native


def _fake_cli(tmp: Path, cli: str, case: str) -> dict[str, Any]:
    env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / cli / f"{case}.stdout"),
        "FAKE_CLI_RECORD": str(tmp / "record.json"),
        "FAKE_CLI_STDIN": "read",
    }
    return {"executable": str(fake_executable(tmp)), "env": env, "grace_s": 1.0}


@pytest.mark.parametrize(
    ("cli", "case", "flag"),
    [("codex", "ok-json", "--output-schema"), ("claude", "json-schema-no-tool", "--json-schema")],
)
async def test_a_real_cli_run_gets_no_schema_flag_for_a_schema_that_does_not_fit(
    tmp_path: Path, cli: str, case: str, flag: str
) -> None:
    llm = create_llm_adapter(cli, retry=False, **{cli: _fake_cli(tmp_path, cli, case)})
    result = await llm.complete([Message.user("hi")], CompletionConfig(output_schema=Loose))
    response = result.unwrap()
    assert response.parsed == Loose(status="ok")
    record = json.loads((tmp_path / "record.json").read_text())
    assert not any(arg.startswith(flag) for arg in record["argv"])
    assert '"meta"' in record["stdin"]  # the schema travelled in the prompt
    assert any(f"{cli} did not enforce output_schema natively" in w for w in response.warnings)


# --- HTTP backends against FakeModelServer ----------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(shutdown_timeout=1.0) as srv:
        yield srv


def _http_adapter(kind: str, server: FakeModelServer, tmp_path: Path, **options: Any) -> Any:
    if kind == "litellm":
        # (through agentport's module, which keeps LiteLLM off the network at import)
        pytest.importorskip(
            "agentport.backends.litellm", reason="needs the litellm extra", exc_type=ImportError
        )
        table = {"model": "openai/fake-model", "api_base": server.openai_base_url,
                 "api_key": "sk-fake-0123456789", **options}  # fmt: skip
        return create_llm_adapter(kind, cwd=tmp_path, retry=False, **{kind: table})
    table = {"base_url": server.openai_base_url, "api_key": "sk-fake-0123456789", **options}
    return create_llm_adapter(kind, cwd=tmp_path, retry=False, model="fake-model", **{kind: table})


_NO_LITELLM = importlib.util.find_spec("litellm") is None
HTTP = pytest.mark.parametrize(
    "kind",
    [
        "openai_compat",
        pytest.param(
            "litellm",
            marks=pytest.mark.skipif(
                _NO_LITELLM, reason="needs the litellm extra: pip install -e '.[litellm]'"
            ),
        ),
    ],
)
# LiteLLM's own models trip pydantic deprecation and TypedDict warnings: not ours to fix.
QUIET = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


@HTTP
@QUIET
async def test_http_backend_sends_no_response_format_for_a_schema_that_does_not_fit(
    kind: str, server: FakeModelServer, tmp_path: Path
) -> None:
    server.reply(JsonReply({"status": "ok", "meta": {"k": 1}}))
    llm = _http_adapter(kind, server, tmp_path)
    config = FAST.model_copy(update={"output_schema": Loose})
    response = (await llm.complete([Message.user("q")], config)).unwrap()
    assert response.parsed == Loose(status="ok", meta={"k": 1})
    body = server.requests[-1].body
    assert "response_format" not in body
    assert "JSON schema" in body["messages"][-1]["content"]
    assert any(f"{kind} did not enforce output_schema natively" in w for w in response.warnings)


@HTTP
@QUIET
async def test_http_backend_sends_response_format_for_a_schema_that_fits(
    kind: str, server: FakeModelServer, tmp_path: Path
) -> None:
    server.reply(JsonReply({"status": "ok", "answer": 1}))
    llm = _http_adapter(kind, server, tmp_path)
    config = FAST.model_copy(update={"output_schema": Tight})
    response = (await llm.complete([Message.user("q")], config)).unwrap()
    assert response.parsed == Tight(status="ok", answer=1)
    assert server.requests[-1].body["response_format"]["type"] == "json_schema"
    assert not any("natively" in w for w in response.warnings)


def _cut_body(text: str, tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-cut", "object": "chat.completion", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "length",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": tokens + 5},
    }  # fmt: skip


@HTTP
@QUIET
async def test_http_answer_cut_at_max_tokens_says_truncated(
    kind: str, server: FakeModelServer, tmp_path: Path
) -> None:
    cut = '{"status": "a long answer that never en'
    server.reply(HttpFault(200, body=_cut_body(cut, 16)))
    llm = _http_adapter(kind, server, tmp_path, stream=False)
    config = FAST.model_copy(update={"output_schema": Tight, "max_tokens": 16})
    error = (await llm.complete([Message.user("q")], config)).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert error.message.startswith("truncated at 16 tokens")
    assert error.raw_text == cut
    assert len(server.model_requests) == 1  # not re-prompted


# --- local: the grammar is its native schema (unit seam: `_run`, no model loaded) -------------


@pytest.fixture
def local_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """agentport.backends.local, with stand-in llama_cpp modules when the extra is absent
    (nothing here calls into llama.cpp)."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        fake = MagicMock(name="llama_cpp")  # whatever local.py touches at import exists
        monkeypatch.setitem(sys.modules, "llama_cpp", fake)
        monkeypatch.setitem(sys.modules, "llama_cpp.llama_grammar", fake.llama_grammar)
        monkeypatch.delitem(sys.modules, "agentport.backends.local", raising=False)
        yield importlib.import_module("agentport.backends.local")
        # never leave the stand-in behind: neither in sys.modules nor as the package's
        # attribute, which `from agentport.backends import local` would still find
        sys.modules.pop("agentport.backends.local", None)
        vars(sys.modules["agentport.backends"]).pop("local", None)
        return
    yield importlib.import_module("agentport.backends.local")


@pytest.mark.parametrize("schema_in_prompt", [True, False])
@pytest.mark.parametrize(("schema", "native"), [(Loose, False), (Tight, True)])
async def test_local_builds_its_grammar_only_for_a_schema_that_fits(
    local_module: types.ModuleType, schema: type[BaseModel], native: bool, schema_in_prompt: bool
) -> None:
    from agentport.catalog import get_capability

    adapter = local_module.LocalAdapter(
        get_capability("local"), local_module.LocalOptions(schema_in_prompt=schema_in_prompt)
    )
    seen: list[tuple[Any, str]] = []

    async def run(messages: Any, *_: Any, schema: Any = None, **__: Any) -> Any:
        seen.append((schema, messages[-1].content))
        return Success(CompletionResponse(content=json.dumps(LOOSE_ANSWER), backend="local"))

    adapter._run = run
    response = (
        await adapter.complete([Message.user("q")], CompletionConfig(output_schema=schema))
    ).unwrap()
    grammar_schema, last = seen[0]
    assert (grammar_schema is not None) is native
    assert ("JSON schema" in last) is (not native or schema_in_prompt)
    fell_back = [w for w in response.warnings if "local did not enforce" in w]
    assert bool(fell_back) is not native


class Optional_(BaseModel):
    status: str
    note: str = "none"


async def test_openai_compat_strict_mode_sends_the_strict_subset_and_restores_the_answer(
    server: FakeModelServer, tmp_path: Path
) -> None:
    server.reply(JsonReply({"status": "ok", "note": None}))  # strict mode's null for "absent"
    llm = _http_adapter("openai_compat", server, tmp_path, strict_schema=True)
    config = FAST.model_copy(update={"output_schema": Optional_})
    response = (await llm.complete([Message.user("q")], config)).unwrap()
    assert response.parsed == Optional_(status="ok")
    sent = server.requests[-1].body["response_format"]["json_schema"]
    assert sent["strict"] is True
    assert sent["schema"]["required"] == ["status", "note"]
    assert sent["schema"]["additionalProperties"] is False


@pytest.mark.parametrize(
    ("literals", "native"),
    [(["plain", 'with "quote"'], True), (["C:\\path", "plain"], False), (["a\\b"], False)],
)
async def test_local_never_builds_a_grammar_from_backslash_literals(
    local_module: types.ModuleType, literals: list[str], native: bool
) -> None:
    """llama-cpp-python 0.3 leaves `\\` unescaped in enum/const literals; the broken grammar
    crashed the process (SIGSEGV). Such a schema is validated locally, with a warning."""
    from agentport.catalog import get_capability

    adapter = local_module.LocalAdapter(get_capability("local"), local_module.LocalOptions())
    seen: list[Any] = []
    schema = {
        "type": "object",
        "properties": {"pick": {"enum": literals}, "fixed": {"const": literals[-1]}},
        "required": ["pick", "fixed"],
        "additionalProperties": False,
    }

    async def run(messages: Any, *_: Any, schema: Any = None, **__: Any) -> Any:
        seen.append(schema)
        answer = {"pick": literals[0], "fixed": literals[-1]}
        return Success(CompletionResponse(content=json.dumps(answer), backend="local"))

    adapter._run = run
    response = (
        await adapter.complete([Message.user("q")], CompletionConfig(output_schema=schema))
    ).unwrap()
    assert (seen[0] is not None) is native
    assert response.parsed == {"pick": literals[0], "fixed": literals[-1]}
    assert any("backslash" in w for w in response.warnings) is not native
