"""An ACP update that arrives after `session/prompt` answered still belongs to the turn: some
agents send their last text chunk a few ms after the answer. The turn drains until the agent
is quiet (`late_quiet_s`, 100 ms), for at most 1 s; an agent still talking then is named in
the answer's warnings, and an update after the drain is logged, never lost in silence.
Against the fake ACP agent's `late` and `late_chatty` scenarios, cold, warm and as a
runtime."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

from _fake_clis_util import FAKE_CLIS
from agentport.core import EventType, Message
from agentport.factory import create_agent_runtime, create_llm_adapter

pytestmark = pytest.mark.anyio
ANSWER = '{"status": "ok", "answer": 42}'
COMMAND = [sys.executable, str(FAKE_CLIS / "fake_acp_agent.py")]


@pytest.fixture(autouse=True)
def _fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    monkeypatch.setenv("FAKE_SCENARIO", "late")


async def _ask(**settings: Any) -> Any:
    adapter = create_llm_adapter("acp", retry=False, acp={"command": COMMAND}, **settings)
    try:
        return [await adapter.complete([Message.user("hi")]) for _ in range(2)]
    finally:
        await adapter.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize("late_ms", ["0", "20"])
@pytest.mark.parametrize("warm", [0, 1], ids=["cold", "warm"])
async def test_a_chunk_after_the_prompts_answer_is_part_of_the_answer(
    late_ms: str, warm: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LATE_MS", late_ms)
    for result in await _ask(warm=warm):
        assert isinstance(result, Success), result
        assert result.unwrap().content == ANSWER
        assert result.unwrap().warnings == ()


async def test_the_runtime_streams_the_late_chunk_too() -> None:
    async with create_agent_runtime("acp", acp={"command": COMMAND}) as runtime:
        events = [e async for e in runtime.send("hi")]
    text = "".join(e.content for e in events if e.type is EventType.text)
    assert text == ANSWER
    assert events[-1].type is EventType.final
    assert events[-1].content == ANSWER


async def test_an_agent_still_talking_at_the_bound_is_named_in_the_warnings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "late_chatty")
    adapter = create_llm_adapter("acp", retry=False, acp={"command": COMMAND})
    response = (await adapter.complete([Message.user("hi")])).unwrap()
    assert response.content.startswith(ANSWER)  # the late half, and the dots of 1 s
    assert any("still sending updates" in w for w in response.warnings), response


async def test_an_update_after_the_drain_is_logged_not_lost_in_silence(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A warm agent's chunk 0.5 s late: past the drain, so not in the first answer; it is
    read when the next call takes the agent, and dropped with a warning in the log (the
    session it belongs to is over: never mixed into another call's answer)."""
    monkeypatch.setenv("FAKE_LATE_MS", "500")
    with caplog.at_level(logging.WARNING, logger="agentport.acp"):
        first, second = await _ask(warm=1)
    half = ANSWER[: len(ANSWER) // 2]
    assert first.unwrap().content == half
    assert second.unwrap().content == half  # its own first half, nothing of the first call's
    assert any("after its turn ended" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("value", ["soon", float("nan"), float("inf"), True, None])
async def test_a_late_quiet_s_that_is_no_number_of_seconds_keeps_the_default(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LATE_MS", "0")  # right behind the answer: no timing at stake
    adapter = create_llm_adapter(
        "acp", retry=False, acp={"command": COMMAND, "late_quiet_s": value}
    )
    result = await adapter.complete([Message.user("hi")])
    assert result.unwrap().content == ANSWER
