"""The caller's tools without a CLI: `McpServer` and `functions` validation, secrets that
never print, the functions server's round trip and teardown, and a table over EVERY backend
of the catalog: what a NATIVE `mcp_servers` backend's build does with the call's servers
(named in what the CLI reads, secrets never in argv, files private), and that an IGNORED
one warns or fails by the call's `on_ignored` policy.

The real CLIs loading them: tests/contract/test_caller_tools_contract.py."""

from __future__ import annotations

import importlib
import json
import re
import socket
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentport.backends._spec import CliCall, Invocation
from agentport.catalog import all_backends
from agentport.core import (
    BackendKind,
    CompletionConfig,
    McpServer,
    Message,
    Param,
    ParamSupport,
    ProviderError,
    ToolPolicy,
    check_params,
    redact,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"name": "bad name", "command": "x"}, "name"),
        ({"name": "1st", "command": "x"}, "name"),
        ({"name": "a"}, "command (stdio) or url"),
        ({"name": "a", "command": "x", "url": "http://h"}, "command (stdio) or url"),
        ({"name": "a", "url": "file:///etc/passwd"}, "http:// or https://"),
        ({"name": "a", "command": "x", "headers": {"A": "b"}}, "headers need a url"),
        ({"name": "a", "url": "http://h", "env": {"A": "b"}}, "need a command"),
    ],
)
def test_a_bad_server_is_refused_naming_what_is_wrong(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(named)):
        McpServer(**fields)


def _typed(a: int) -> int:
    return a


def _untyped(a):  # type: ignore[no-untyped-def]
    return a


def test_functions_need_a_plain_name_annotations_and_no_clash() -> None:
    with pytest.raises(ValidationError, match="not a lambda"):
        CompletionConfig(functions=(lambda a: a,))
    with pytest.raises(ValidationError, match="type annotations on: a"):
        CompletionConfig(functions=(_untyped,))
    with pytest.raises(ValidationError, match="names used twice: _typed"):
        CompletionConfig(functions=(_typed, _typed))
    clash = McpServer(name="functions", command="x")
    with pytest.raises(ValidationError, match="names used twice: functions"):
        CompletionConfig(functions=(_typed,), mcp_servers=(clash,))
    assert CompletionConfig(mcp_servers=(clash,)).mcp_servers == (clash,)


@settings(max_examples=60, deadline=None)
@given(
    # a marker prefix: a value that is a substring of the config's own field names (say
    # `attempt_time`) would be "found" in any repr
    secret=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=8).map(
        lambda text: "zq7" + text
    )
)
def test_server_secrets_never_print(secret: str) -> None:
    """Whatever the value: a repr, a dump or a JSON dump of the config shows no env value
    or header, and an error text that quotes one is redacted."""
    servers = (
        McpServer(name="s", command="x", env={"TOKEN": secret}),
        McpServer(name="h", url="https://h/mcp", headers={"Authorization": secret}),
    )
    config = CompletionConfig(mcp_servers=servers)
    for text in (repr(config), str(config.model_dump()), config.model_dump_json()):
        assert secret not in text
    assert secret not in redact(f"codex failed: {secret}")
    assert servers[0].plain_env() == {"TOKEN": secret}  # the CLI itself gets the value


def test_params_set_names_the_new_params() -> None:
    config = CompletionConfig(mcp_servers=(McpServer(name="a", command="x"),))
    assert Param.mcp_servers in config.params_set()
    assert Param.functions in CompletionConfig(functions=(_typed,)).params_set()
    assert not {Param.mcp_servers, Param.functions} & CompletionConfig().params_set()


async def test_functions_are_served_then_gone() -> None:
    """A result, an exception as the tool's error (the run goes on), a 401 without the
    per-call token, and nothing listening once the block ends."""
    pytest.importorskip("mcp", reason="the functions server needs the mcp extra")
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from agentport.transport._tool_host import serve_functions

    def add(a: int, b: int) -> int:
        return a + b

    async def boom(text: str) -> str:
        raise ValueError(f"cannot take {text}")

    async with serve_functions([add, boom]) as server:
        assert server.url is not None
        async with httpx.AsyncClient() as bare:
            assert (await bare.post(server.url, json={})).status_code == 401
        async with (
            httpx.AsyncClient(headers=server.plain_headers()) as client,
            streamable_http_client(server.url, http_client=client) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            assert names == ["add", "boom"]
            ok = await session.call_tool("add", {"a": 2, "b": 3})
            assert not ok.is_error
            assert ok.structured_content == {"result": 5}
            failed = await session.call_tool("boom", {"text": "x"})
            assert failed.is_error
            assert "ValueError: cannot take x" in failed.content[0].text  # type: ignore[union-attr]
        port = int(server.url.split(":")[2].split("/")[0])
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


SECRET_ENV = "env-secret-value-0123456789"
SECRET_HEADER = "Bearer header-secret-0123456789"
SERVERS = (
    McpServer(name="stdio_one", command="/bin/mcp-one", args=("--x",), env={"K": SECRET_ENV}),
    McpServer(
        name="http-two", url="http://127.0.0.1:9/mcp", headers={"Authorization": SECRET_HEADER}
    ),
)


def _built(name: str, tmp: Path, tools: ToolPolicy) -> Invocation:
    module = importlib.import_module(f"agentport.backends.{name}")
    config = CompletionConfig(mcp_servers=SERVERS, tools=tools)
    call = CliCall(
        executable=f"/bin/{name}", prompt="hello", system_prompt=None, config=config,
        schema=None, options={"env": {"HOME": str(tmp / "home")}}, run_dir=tmp, cwd=tmp,
    )  # fmt: skip
    return module.SPEC.build(call)  # type: ignore[no-any-return]


CLI_NATIVE = [
    b.name
    for b in all_backends()
    if b.kind is BackendKind.cli
    and b.support(Param.mcp_servers) is ParamSupport.NATIVE
    and hasattr(importlib.import_module(b.module), "SPEC")  # acp: a session, not a spec
]


def test_acp_gets_the_protocols_server_shape() -> None:
    from agentport.backends._caller_tools import acp_server

    assert acp_server(SERVERS[0]) == {
        "name": "stdio_one", "command": "/bin/mcp-one", "args": ["--x"],
        "env": [{"name": "K", "value": SECRET_ENV}],
    }  # fmt: skip
    assert acp_server(SERVERS[1]) == {
        "type": "http", "name": "http-two", "url": "http://127.0.0.1:9/mcp",
        "headers": [{"name": "Authorization", "value": SECRET_HEADER}],
    }  # fmt: skip


@pytest.mark.parametrize("tools", [ToolPolicy(), ToolPolicy.cli_defaults()], ids=["none", "cli"])
@pytest.mark.parametrize("name", CLI_NATIVE)
def test_native_backends_hand_the_cli_every_server_and_no_secret_in_argv(
    name: str, tools: ToolPolicy, tmp_path: Path
) -> None:
    invocation = _built(name, tmp_path, tools)
    argv = " ".join(invocation.argv)
    files = {p: p.read_text() for p in tmp_path.glob("*.json")}
    seen = argv + " ".join(files.values()) + json.dumps(dict(invocation.env))
    for server in SERVERS:
        assert server.name in seen, f"{name} never names {server.name}"
    # argv is readable by every local user (/proc/PID/cmdline)
    assert SECRET_ENV not in argv
    assert SECRET_HEADER not in argv
    # the secrets reach the CLI through a private file or its own environment
    assert SECRET_ENV in seen
    assert SECRET_HEADER in seen
    for path in files:
        if SECRET_ENV in files[path]:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.parametrize("param", [Param.mcp_servers, Param.functions])
@pytest.mark.parametrize("backend", [b.name for b in all_backends()])
def test_an_ignored_caller_tool_is_never_dropped_in_silence(backend: str, param: Param) -> None:
    capability = next(b for b in all_backends() if b.name == backend)
    if capability.support(param) is not ParamSupport.IGNORED:
        pytest.skip(f"{backend} takes {param}")
    fields: dict[str, Any] = (
        {"mcp_servers": SERVERS} if param is Param.mcp_servers else {"functions": (_typed,)}
    )
    messages = [Message.user("hi")]
    tools = ToolPolicy.cli_defaults()
    warned = check_params(capability, messages, CompletionConfig(tools=tools, **fields))
    assert any(param.value in w for w in warned.unwrap()), warned
    failed = check_params(
        capability, messages, CompletionConfig(tools=tools, on_ignored="fail", **fields)
    )
    error = failed.failure()
    assert isinstance(error, ProviderError)
    assert param.value in error.details["params"]


async def test_anyio_teardown_of_a_call_cancelled_mid_serve() -> None:
    """A call cancelled while its functions are served leaves no listener behind."""
    pytest.importorskip("mcp", reason="the functions server needs the mcp extra")
    from agentport.transport._tool_host import serve_functions

    port = 0
    with anyio.move_on_after(0.5):
        async with serve_functions([_typed]) as server:
            assert server.url is not None
            port = int(server.url.split(":")[2].split("/")[0])
            await anyio.sleep(10)
    assert port
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_a_temporal_request_cannot_carry_the_callers_tools() -> None:
    """A call sent to a Temporal worker runs what the worker configures: servers (a command
    to run) and functions (this process's code) are refused with a clear error."""
    pytest.importorskip("temporalio")
    from agentport.temporal._data import CallConfig

    for config in (
        CompletionConfig(functions=(_typed,)),
        CompletionConfig(mcp_servers=(McpServer(name="x", command="/bin/sh"),)),
    ):
        with pytest.raises(ProviderError, match=r"cannot set (functions|mcp_servers)"):
            CallConfig.of(config)


def test_every_native_claim_has_a_real_cli_contract_test() -> None:
    """A backend the catalog says takes `mcp_servers` natively is driven by the real-CLI
    contract test (tests/contract/test_caller_tools_contract.py); a new claim without one fails."""
    from test_caller_tools_contract import CLIS

    assert set(CLI_NATIVE) <= set(CLIS), sorted(set(CLI_NATIVE) - set(CLIS))


def _spread_args(*parts: str) -> str:
    return ""


def _spread_kwargs(**named: str) -> str:
    return ""


def _positional_only(a: str, /) -> str:
    return a


def _generator(a: str) -> Iterator[str]:
    yield a


async def _async_generator(a: str) -> AsyncIterator[str]:
    yield a


def _keyword_only(*, a: str) -> str:
    return a


async def _coroutine(a: str) -> str:
    return a


@pytest.mark.parametrize(
    ("fn", "named"),
    [
        (_spread_args, "_spread_args takes *parts"),
        (_spread_kwargs, "_spread_kwargs takes **named"),
        (_positional_only, "_positional_only takes a (*args"),
        (_generator, "_generator is a generator"),
        (_async_generator, "_async_generator is a generator"),
    ],
)
def test_a_function_no_tool_call_can_run_is_refused(fn: Any, named: str) -> None:
    # these were served, and every call of them failed or answered a generator's repr
    with pytest.raises(ValidationError, match=re.escape(named)):
        CompletionConfig(functions=(fn,))


@pytest.mark.parametrize("fn", [_typed, _keyword_only, _coroutine])
def test_a_function_called_by_keyword_is_taken(fn: Any) -> None:
    assert CompletionConfig(functions=(fn,)).functions == (fn,)
