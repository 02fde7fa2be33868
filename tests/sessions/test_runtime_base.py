"""One runtime base: every `AgentRuntime` class in agentport is built on `core.TurnRuntime`
(the task group, the bounded event stream, the quiet end when the reader leaves) or, when it
only wraps another runtime, on `core.RuntimeScope`; no other module makes a turn's stream or
catches its reader leaving. Then the base's rules on `EchoRuntime` and a wrapper of it: the
parts close in reverse order, a turn outside `async with` is refused, a reader that leaves
ends the turn, and the caller's Python functions are served on trio as on asyncio."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import socket
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import agentport
from agentport.core import EventType, RuntimeScope, TurnRuntime
from agentport.policies import ConcurrencyGate, CooldownStore
from agentport.policies._gated_runtime import GatedRuntime
from agentport.testing import EchoRuntime

pytestmark = pytest.mark.anyio
SRC = Path(agentport.__file__).parent


def _runtime_classes() -> list[type]:
    """Every class in agentport with `send` and `handle`, as `AgentRuntime` has."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages([str(SRC)], "agentport."):
        if info.name.endswith("__main__"):  # runs the command line on import
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an extra that is not installed here
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != info.name or inspect.isabstract(cls):
                continue
            if getattr(cls, "_is_protocol", False):
                continue
            if callable(getattr(cls, "send", None)) and hasattr(cls, "handle"):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[k] for k in sorted(found)]


def test_every_runtime_is_built_on_the_one_base() -> None:
    classes = _runtime_classes()
    names = {c.__name__ for c in classes}
    assert {"CliRuntime", "AcpRuntime", "EchoRuntime", "GatedRuntime", "Handoff"} <= names
    for cls in classes:
        assert issubclass(cls, RuntimeScope), cls
        # a runtime that runs turns itself runs them on the base's task group
        if "_turn" in vars(cls):
            assert issubclass(cls, TurnRuntime), cls


def test_only_the_base_makes_a_turns_stream() -> None:
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(SRC).as_posix()
        if name in ("core/_turns.py", "core/_events.py", "core/__init__.py"):
            continue
        assert "create_memory_object_stream[AgentEvent]" not in text, name
        assert "until_consumer_leaves" not in text, name


class _Parts(EchoRuntime):
    """An `EchoRuntime` that records when its parts open and close."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    async def _open(self, stack: Any) -> None:
        self.log.append("open folder")
        stack.callback(self.log.append, "close folder")
        await super()._open(stack)
        stack.callback(self.log.append, "stop turns")


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_parts_close_in_reverse_and_a_wrapper_closes_after_its_turns(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    inner = _Parts(log)
    store = CooldownStore(tmp_path / "state" / "cooldown.sqlite3")
    gated = GatedRuntime(inner, ConcurrencyGate("echo", initial=1, maximum=2, store=store))
    with pytest.raises(RuntimeError, match="async with"):
        gated.send("early")
    async with gated:
        events = [e async for e in gated.send("hello")]
        log.append("last turn")
    assert events[-1].type is EventType.final
    assert events[-1].content == "hello"
    assert log == ["open folder", "last turn", "stop turns", "close folder"]
    with pytest.raises(RuntimeError, match="async with"):
        gated.send("late")


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_reader_that_leaves_ends_the_turn_and_the_runtime_goes_on() -> None:
    async with EchoRuntime(buffer=1) as rt:
        stream = rt.send("one")
        first = await stream.__anext__()
        assert first.type is EventType.init
        await stream.aclose()  # type: ignore[attr-defined]
        again = [e async for e in rt.send("two")]
    assert again[-1].content == "two"


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_functions_are_served_on_either_event_loop() -> None:
    pytest.importorskip("mcp", reason="the functions server needs the mcp extra")
    import httpx
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from agentport.transport import serve_functions

    seen: list[object] = []

    async def remember(text: str) -> str:
        seen.append(anyio.lowlevel.current_token())  # the loop it runs on
        return text.upper()

    def add(a: int, b: int) -> int:
        return a + b

    async with serve_functions([remember, add]) as server:
        assert server.url is not None
        async with (
            httpx.AsyncClient(headers=server.plain_headers()) as client,
            streamable_http_client(server.url, http_client=client) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            said = await session.call_tool("remember", {"text": "abc"})
            summed = await session.call_tool("add", {"a": 2, "b": 3})
        port = int(server.url.split(":")[2].split("/")[0])
    assert not said.is_error
    assert said.structured_content == {"result": "ABC"}
    assert summed.structured_content == {"result": 5}
    assert seen == [anyio.lowlevel.current_token()]  # the caller's loop, asyncio or trio
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
