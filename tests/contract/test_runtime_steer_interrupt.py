"""Steer and interrupt on an agent CLI runtime: `interrupt()` ends the running turn at once
(its process group gone, an `interrupted` error event last) and the session stays resumable;
`steer(text)` says what it did with the text (`queued_next_turn` on a CLI runtime: the text
leads the next turn). Against tests/fixtures/fake_clis/fake_claude_live.py, then the REAL
claude and codex against FakeModelServer (loopback only: scripts/test.sh)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from _fake_clis_util import FAKE_CLIS, live_processes_with
from _more_clis_util import network_isolated
from _session_util import cli_options, model_for
from agentport import create_agent_runtime
from agentport.catalog import CATALOG
from agentport.core import AgentEvent, CompletionConfig, ErrorKind, EventType, SteerResult
from agentport.testing import ALLOW_ENV, FakeModelServer, Hang

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(ALLOW_ENV, "1")
    exe = tmp_path / "claude"
    fake = FAKE_CLIS / "fake_claude_live.py"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    exe.chmod(0o755)
    record = tmp_path / "received.jsonl"
    monkeypatch.setenv("FAKE_RECORD", str(record))
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    return {"claude": {"executable": str(exe), "grace_s": 1.0}, "record": record}


async def _interrupt_when(
    rt: Any, text: str, ready: Any = lambda: True, first_s: float = 1.0, within_s: float = 90
) -> tuple[list[AgentEvent], float]:
    """Run a turn and interrupt it once *ready()* says so (polled after *first_s*, for at
    most *within_s*); (its events, seconds from the interrupt to the stream's end)."""
    events: list[AgentEvent] = []
    asked = 0.0
    async with anyio.create_task_group() as tg:

        async def later() -> None:
            nonlocal asked
            await anyio.sleep(first_s)
            with anyio.fail_after(within_s):
                # the fake server's request list is plain state, no event to wait on
                while not ready():  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            asked = time.monotonic()
            assert rt.interrupt() is True

        tg.start_soon(later)
        async for event in rt.send(text, CompletionConfig(idle_timeout_s=120)):
            events.append(event)
        tg.cancel_scope.cancel()
    return events, time.monotonic() - asked


async def test_interrupt_ends_the_turn_and_the_session_resumes(
    fake_claude: dict[str, Any],
) -> None:
    record = fake_claude.pop("record")
    async with create_agent_runtime("claude", **fake_claude) as rt:
        assert rt.interrupt() is False  # nothing running
        first = [e async for e in rt.send("one")]
        session = rt.handle.session_id
        assert first[-1].type is EventType.final
        events, took = await _interrupt_when(rt, "hang")
        assert took < 5  # not the fake's 60 s
        last = events[-1]
        assert last.type is EventType.error
        assert last.metadata["error"].kind is ErrorKind.interrupted
        assert live_processes_with(str(record)) == []
        third = [e async for e in rt.send("three")]
    assert third[-1].type is EventType.final, third[-1]
    assert rt.handle.session_id == session
    argv = [json.loads(line)["argv"] for line in record.read_text().splitlines()]
    assert f"--resume={session}" in argv[-1]
    assert rt.transcript.turns[2].text == "hang"  # the interrupted prompt stays on record


async def test_steer_is_queued_for_the_next_turn(fake_claude: dict[str, Any]) -> None:
    record = fake_claude.pop("record")
    async with create_agent_runtime("claude", **fake_claude) as rt:
        assert rt.steer("use the short form MARK-S") is SteerResult.queued_next_turn
        events = [e async for e in rt.send("the question")]
        assert events[-1].type is EventType.final
        again = [e async for e in rt.send("another")]
        assert again[-1].type is EventType.final
    # the fake records each stdin line of a one-shot prompt
    seen = "\n".join(json.loads(line)["prompt"] for line in record.read_text().splitlines())
    assert seen.index("MARK-S") < seen.index("the question") < seen.index("another")
    assert seen.count("MARK-S") == 1  # delivered once
    with pytest.raises(ValueError, match="non-empty"):
        rt.steer("  ")


@pytest.mark.contract
@pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("cli", ["claude", "codex"])
async def test_real_cli_interrupted_mid_request_resumes(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")
    with FakeModelServer(default="fallback") as server:
        options = {cli: cli_options(cli, server, tmp_path / "home")}
        async with create_agent_runtime(cli, model=model_for(cli), **options) as rt:
            server.reply("first answer MARK-A1")
            first = [e async for e in rt.send("first question")]
            assert first[-1].type is EventType.final, first[-1]
            session = rt.handle.session_id
            server.reply(Hang())
            waiting = len(server.model_requests)

            def reached() -> bool:
                return len(server.model_requests) > waiting

            events, took = await _interrupt_when(rt, "second question", reached, first_s=0)
            assert len(server.model_requests) > waiting, "the hung request never started"
            assert events[-1].metadata["error"].kind is ErrorKind.interrupted
            assert took < 10
            server.reply("third answer")
            third = [e async for e in rt.send("third question")]
        assert third[-1].type is EventType.final, third[-1]
        assert third[-1].content == "third answer"
        assert rt.handle.session_id == session
        assert "MARK-A1" in json.dumps(server.model_requests[-1].body)


def _runtime_class(name: str) -> type:
    import importlib

    from agentport.backends._cli_runtime import CliRuntime

    module = importlib.import_module(CATALOG[name].module)
    if hasattr(module, "SPEC"):
        return CliRuntime
    factory = getattr(module, "create_runtime", None)
    assert factory is not None, name
    hint = factory.__annotations__["return"]
    return getattr(module, hint) if isinstance(hint, str) else hint  # type: ignore[no-any-return]


def test_the_catalog_declares_the_session_controls_each_runtime_has() -> None:
    from agentport.core import Param, ParamSupport

    for name, capability in CATALOG.items():
        declared = {p: capability.support(p) for p in (Param.steer, Param.interrupt, Param.fork)}
        if not capability.supports_runtime:
            assert set(declared.values()) == {ParamSupport.IGNORED}, name
            assert capability.support(Param.handoff) is ParamSupport.IGNORED, name
            continue
        cls = _runtime_class(name)
        for param, method in ((Param.steer, "steer"), (Param.interrupt, "interrupt")):
            has = callable(getattr(cls, method, None))
            assert has == (declared[param] is not ParamSupport.IGNORED), (name, param)
        if declared[Param.fork] is not ParamSupport.IGNORED:
            assert callable(getattr(cls, "fork", None)), name
        # any runtime can take a conversation over; only one that keeps a transcript hands
        # its own over (docs/sessions.md)
        assert capability.support(Param.handoff) is not ParamSupport.IGNORED, name


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n, c in __import__("agentport.catalog").catalog.CATALOG.items()
        if c.kind.value == "cli" and n != "acp"
    ),
)
def test_fork_reaches_the_command_line_exactly_where_declared(name: str, tmp_path: Path) -> None:
    import importlib

    from agentport.backends import CliCall
    from agentport.core import Param, ParamSupport, ToolPolicy

    spec = importlib.import_module(CATALOG[name].module).SPEC

    def argv(fork: bool) -> list[str]:
        config = CompletionConfig(
            session_id="s-1", fork_session=fork, tools=ToolPolicy.cli_defaults()
        )
        call = CliCall(
            executable="cli", prompt="p", system_prompt=None, config=config, schema=None,
            options={}, run_dir=tmp_path, cwd=tmp_path, session_id="s-1",
        )  # fmt: skip
        return list(spec.build(call).argv)

    native = CATALOG[name].support(Param.fork) is not ParamSupport.IGNORED
    assert (argv(True) != argv(False)) == native, name


async def test_a_fork_continues_a_copy_under_a_new_id(fake_claude: dict[str, Any]) -> None:
    record = fake_claude.pop("record")
    async with create_agent_runtime("claude", **fake_claude) as rt:
        with pytest.raises(ValueError, match="run a turn first"):
            rt.fork()
        [e async for e in rt.send("one")]
        original = rt.handle.session_id
        async with rt.fork() as forked:
            events = [e async for e in forked.send("two")]
        assert events[-1].type is EventType.final, events[-1]
        assert forked.handle.session_id not in (None, original)
        assert rt.handle.session_id == original
    argv = [json.loads(line)["argv"] for line in record.read_text().splitlines()]
    assert f"--resume={original}" in argv[-1]
    assert "--fork-session" in argv[-1]


async def test_a_backend_that_cannot_fork_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")  # refused before any process starts
    from agentport import create_llm_adapter
    from agentport.core import Message

    llm = create_llm_adapter("gemini", retry=False)
    config = CompletionConfig(session_id="s-1", fork_session=True)
    error = (await llm.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.unsupported
    assert error.details["params"] == ["fork"]
    with pytest.raises(ValueError, match="fork_session needs the session_id"):
        CompletionConfig(fork_session=True)


@pytest.mark.contract
@pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_real_claude_fork(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")
    with FakeModelServer(default="fallback") as server:
        options = {"claude": cli_options("claude", server, tmp_path / "home")}
        async with create_agent_runtime("claude", model="fake-model", **options) as rt:
            server.reply("first answer MARK-F1")
            [e async for e in rt.send("first question")]
            original = rt.handle.session_id
            server.reply("forked answer")
            async with rt.fork() as forked:
                events = [e async for e in forked.send("in the fork")]
            assert events[-1].type is EventType.final, events[-1]
            assert "MARK-F1" in json.dumps(server.model_requests[-1].body)
            assert forked.handle.session_id not in (None, original)
            server.reply("original goes on")
            again = [e async for e in rt.send("in the original")]
        assert again[-1].content == "original goes on"
        assert rt.handle.session_id == original
        assert "in the fork" not in json.dumps(server.model_requests[-1].body)


@pytest.mark.contract
@pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("cli", ["gemini", "opencode", "qwen", "pi", "copilot"])
async def test_real_cli_interrupted_mid_request_ends_the_turn(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # these CLIs keep no session agentport can resume: the turn ends, the next one is new
    monkeypatch.setenv(ALLOW_ENV, "1")
    with FakeModelServer(default="fallback") as server:
        options = {cli: cli_options(cli, server, tmp_path / "home")}
        async with create_agent_runtime(cli, model=model_for(cli), **options) as rt:
            server.reply(Hang())

            def reached() -> bool:
                return len(server.model_requests) > 0

            events, took = await _interrupt_when(rt, "a question", reached, first_s=0)
            assert server.model_requests, "the hung request never started"
            assert events[-1].metadata["error"].kind is ErrorKind.interrupted
            assert took < 10
            server.reply("next answer")
            after = [e async for e in rt.send("next question")]
        assert after[-1].type is EventType.final, after[-1]
        assert after[-1].content == "next answer"


async def test_a_handoff_that_does_not_fit_says_what_it_left_out(
    fake_claude: dict[str, Any],
) -> None:
    from agentport import handoff
    from agentport.core import Transcript, Turn, TurnKind

    record = fake_claude.pop("record")
    turns = tuple(Turn(TurnKind.user, f"old turn {i} " + "x" * 300) for i in range(40))
    transcript = Transcript(turns=turns, open_question="what now? MARK-OPEN")
    async with handoff(transcript, to="claude", max_tokens=600, **fake_claude) as moved:
        events = [e async for e in moved.send()]
    final = events[-1]
    assert final.type is EventType.final, final
    warnings = final.metadata["response"].warnings
    assert any("older turn(s) of 40" in w for w in warnings)
    assert moved.briefing is not None
    assert moved.warnings == moved.briefing.warnings
    seen = "\n".join(json.loads(line)["prompt"] for line in record.read_text().splitlines())
    assert "MARK-OPEN" in seen
    assert "old turn 39" in seen
    assert "old turn 0 " not in seen
    assert "left out" in seen  # the new agent is told too
    with pytest.raises(ValueError, match="max_tokens"):
        handoff(transcript, to="claude", max_tokens=10, **fake_claude)
    with pytest.raises(TypeError, match="keeps no transcript"):
        handoff(object(), to="claude", **fake_claude)  # type: ignore[arg-type]
