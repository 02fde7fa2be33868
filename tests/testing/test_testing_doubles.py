"""agentport.testing: ScriptedAdapter, FunctionAdapter, EchoAdapter/EchoRuntime."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from returns.result import Failure, Success

from agentport import CompletionConfig, ErrorKind, EventType, LLMAdapter, Message, ProviderError
from agentport.core import AgentRuntime
from agentport.testing import (
    EchoAdapter,
    EchoRuntime,
    FunctionAdapter,
    ScriptedAdapter,
    UnmatchedCallError,
)


class Verdict(BaseModel):
    verdict: str
    score: int


def test_doubles_satisfy_the_protocols() -> None:
    assert isinstance(ScriptedAdapter(), LLMAdapter)
    assert isinstance(FunctionAdapter(lambda m, c: "x"), LLMAdapter)
    assert isinstance(EchoAdapter(), LLMAdapter)
    assert isinstance(EchoRuntime(), AgentRuntime)


@pytest.mark.anyio
async def test_rules_match_on_label_substring_regex_and_predicate() -> None:
    llm = (
        ScriptedAdapter()
        .add("by-label", label="verify")
        .add("by-substring", contains="capital")
        .add("by-regex", pattern=r"\bq\d+\b")
        .add("by-predicate", when=lambda call: len(call.messages) == 2)
    )
    ask = llm.complete
    assert (await ask([Message.user("x")], CompletionConfig(label="verify"))).unwrap().content == (
        "by-label"
    )
    assert (await ask([Message.user("the capital?")])).unwrap().content == "by-substring"
    assert (await ask([Message.user("see q12 now")])).unwrap().content == "by-regex"
    two = [Message.system("s"), Message.user("u")]
    assert (await ask(two)).unwrap().content == "by-predicate"
    assert [c.label for c in llm.calls] == ["verify", None, None, None]


@pytest.mark.anyio
async def test_unmatched_call_fails_loudly() -> None:
    llm = ScriptedAdapter().add("x", label="a")
    with pytest.raises(UnmatchedCallError, match="label='b'"):
        await llm.complete([Message.user("hi")], CompletionConfig(label="b"))


@pytest.mark.anyio
async def test_default_reply_catches_unmatched_calls() -> None:
    llm = ScriptedAdapter(default="fallback")
    assert (await llm.complete([Message.user("hi")])).unwrap().content == "fallback"


@pytest.mark.anyio
async def test_replies_are_used_in_order_and_the_last_repeats() -> None:
    llm = ScriptedAdapter().add("one", "two")
    got = [(await llm.complete([Message.user("q")])).unwrap().content for _ in range(3)]
    assert got == ["one", "two", "two"]


@pytest.mark.anyio
async def test_times_limits_a_rule_then_falls_through() -> None:
    llm = ScriptedAdapter().add("limited", times=1).add("after")
    got = [(await llm.complete([Message.user("q")])).unwrap().content for _ in range(2)]
    assert got == ["limited", "after"]


@pytest.mark.anyio
async def test_provider_error_reply_is_a_failure_value() -> None:
    llm = ScriptedAdapter().add(ProviderError(ErrorKind.rate_limited, "busy"))
    result = await llm.complete([Message.user("q")])
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.rate_limited
    assert result.failure().backend == "scripted"


@pytest.mark.anyio
async def test_object_reply_is_validated_against_the_schema() -> None:
    llm = ScriptedAdapter().add({"verdict": "valid", "score": 3}, {"verdict": "valid"})
    config = CompletionConfig(output_schema=Verdict)
    ok = (await llm.complete([Message.user("q")], config)).unwrap()
    assert ok.parsed == Verdict(verdict="valid", score=3)
    assert ok.content == '{"verdict": "valid", "score": 3}'
    bad = await llm.complete([Message.user("q")], config)
    assert bad.failure().kind is ErrorKind.schema_mismatch


@pytest.mark.anyio
async def test_text_reply_is_parsed_when_a_schema_is_given() -> None:
    llm = ScriptedAdapter().add('Sure! ```json\n{"verdict": "x", "score": 1}\n``` done', "no json")
    config = CompletionConfig(output_schema=Verdict)
    assert (await llm.complete([Message.user("q")], config)).unwrap().parsed.score == 1
    failure = (await llm.complete([Message.user("q")], config)).failure()
    assert failure.kind is ErrorKind.schema_mismatch
    assert failure.raw_text == "no json"


@pytest.mark.anyio
async def test_callable_and_async_callable_replies() -> None:
    async def late(call):  # type: ignore[no-untyped-def]
        await anyio.lowlevel.checkpoint()
        return call.prompt.upper()

    llm = ScriptedAdapter().add(lambda call: f"len={len(call.prompt)}", times=1).add(late)
    assert (await llm.complete([Message.user("abc")])).unwrap().content == "len=3"
    assert (await llm.complete([Message.user("abc")])).unwrap().content == "ABC"


@pytest.mark.anyio
async def test_delay_is_observable_by_a_deadline() -> None:
    llm = ScriptedAdapter().add("slow", delay_s=5)
    with anyio.move_on_after(0.05) as scope:
        await llm.complete([Message.user("q")])
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_scripted_warns_about_ignored_params() -> None:
    llm = ScriptedAdapter(default="x")
    response = (await llm.complete([Message.user("q")], CompletionConfig(temperature=1))).unwrap()
    assert response.warnings == ("scripted ignores temperature",)
    failing = await llm.complete(
        [Message.user("q")], CompletionConfig(temperature=1, on_ignored="fail")
    )
    assert failing.failure().kind is ErrorKind.unsupported


@pytest.mark.anyio
async def test_function_adapter_passes_messages_and_config() -> None:
    seen = []

    def reply(messages, config):  # type: ignore[no-untyped-def]
        seen.append((messages[-1].content, config.label))
        return "ok"

    llm = FunctionAdapter(reply)
    result = await llm.complete([Message.user("q")], CompletionConfig(label="L"))
    assert result == Success(result.unwrap())
    assert seen == [("q", "L")]


@pytest.mark.anyio
async def test_echo_runtime_streams_a_turn_and_keeps_its_session() -> None:
    async with EchoRuntime() as runtime:
        first = [event async for event in runtime.send("hello")]
        session = runtime.handle.session_id
        second = [event async for event in runtime.send("again")]
    assert [e.type for e in first] == [
        EventType.init,
        EventType.text,
        EventType.usage,
        EventType.final,
    ]
    assert first[-1].metadata["response"].content == "hello"
    assert first[-1].metadata["response"].raw.session_id == session
    assert second[0].metadata["session_id"] == session
    assert second[-1].content == "again"


@pytest.mark.anyio
async def test_echo_runtime_reports_failures_as_error_events() -> None:
    async with EchoRuntime() as runtime:
        events = [
            e async for e in runtime.send("not json", CompletionConfig(output_schema=Verdict))
        ]
    assert events[-1].type is EventType.error
    assert events[-1].is_error
    assert events[-1].metadata["error"].kind is ErrorKind.schema_mismatch


@pytest.mark.anyio
async def test_echo_runtime_refuses_send_outside_its_context() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        EchoRuntime().send("x")
