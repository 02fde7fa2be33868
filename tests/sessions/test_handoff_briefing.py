"""The briefing a conversation is handed over with (`agentport.core.brief`), as properties:
the bound holds, the newest turns are the ones kept, the open question is always there,
secrets never are, and whatever is left out is named in a warning."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentport.core import AgentEvent, EventType
from agentport.core._redact import redact, register_secret
from agentport.core._transcript import (
    MIN_BRIEFING_TOKENS,
    Transcript,
    Turn,
    TurnKind,
    brief,
    estimate_tokens,
)

SECRET = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=600)
turns = st.lists(
    st.builds(
        Turn,
        kind=st.sampled_from(list(TurnKind)),
        text=texts,
        name=st.none() | st.sampled_from(["Bash", "read_file"]),
    ),
    max_size=40,
)
transcripts = st.builds(
    Transcript,
    turns=turns.map(tuple),
    cwd=st.none() | texts,
    open_question=st.none() | st.text(min_size=1, max_size=3000),
    backend=st.sampled_from(["", "claude", "codex"]),
)
bounds = st.integers(min_value=MIN_BRIEFING_TOKENS, max_value=5000)


@settings(max_examples=300, deadline=None)
@given(transcript=transcripts, max_tokens=bounds)
def test_the_bound_holds(transcript: Transcript, max_tokens: int) -> None:
    out = brief(transcript, max_tokens=max_tokens)
    assert estimate_tokens(out.text) <= max_tokens
    assert out.tokens == estimate_tokens(out.text)


@settings(max_examples=200, deadline=None)
@given(transcript=transcripts, max_tokens=bounds)
def test_the_kept_turns_are_the_newest_and_the_rest_is_named(
    transcript: Transcript, max_tokens: int
) -> None:
    out = brief(transcript, max_tokens=max_tokens)
    assert out.kept + out.dropped == len(transcript.turns)
    if out.dropped:
        assert any(f"{out.dropped} older turn(s)" in w for w in out.warnings)
        assert f"[{out.dropped} older turn(s)" in out.text  # the new backend is told too
    else:
        assert not any("older turn" in w for w in out.warnings)
    # the conversation section is exactly the newest `kept` turns, oldest first
    body = out.text.split("## Conversation so far\n", 1)[1].rsplit("\n\n## Open question", 1)[0]
    expected = [redact(t.line()) for t in transcript.turns[len(transcript.turns) - out.kept :]]
    if any("newest turn was cut" in w for w in out.warnings):
        assert out.kept == 1
        assert body.endswith("…")
        assert expected[0].startswith(body[:-1])
    elif out.kept:
        assert body == "\n".join(expected)
    else:
        assert body == "(no earlier turns)"


@settings(max_examples=200, deadline=None)
@given(transcript=transcripts, max_tokens=bounds)
def test_the_open_question_is_always_there(transcript: Transcript, max_tokens: int) -> None:
    out = brief(transcript, max_tokens=max_tokens)
    section = out.text.split("## Open question\n", 1)[1]
    question = transcript.question.strip()
    if not question:
        assert section.startswith("(none given")
        return
    if section.rstrip("\n").endswith("…"):  # cut: its beginning is there, and a warning
        assert any("open question was cut" in w for w in out.warnings)
        kept = section.rstrip("\n")[:-1]
        assert len(kept) >= 50
    else:
        assert section == redact(question) + "\n"


def test_a_long_conversation_keeps_its_newest_turns() -> None:
    transcript = Transcript(
        turns=tuple(Turn(TurnKind.user, f"question {i} " + "x" * 400) for i in range(50)),
        open_question="what next?",
    )
    out = brief(transcript, max_tokens=1000)
    assert "question 49" in out.text
    assert "question 0 " not in out.text
    assert out.dropped > 0
    assert out.text.rstrip().endswith("what next?")


@given(before=texts, after=texts)
def test_secrets_never_reach_the_briefing(before: str, after: str) -> None:
    register_secret("my-very-private-value-123")
    transcript = Transcript(
        turns=(
            Turn(TurnKind.user, f"{before} key {SECRET} {after}"),
            Turn(TurnKind.tool_result, f"token=my-very-private-value-123 {after}", "Bash"),
        ),
        cwd="/home/u/work",
        open_question=f"and {SECRET}?",
    )
    out = brief(transcript)
    assert SECRET not in out.text
    assert "my-very-private-value-123" not in out.text


def test_tool_steps_are_short() -> None:
    transcript = Transcript(
        turns=(
            Turn(TurnKind.tool_call, '{"command": "cat big.log"}', "Bash"),
            Turn(TurnKind.tool_result, "line\n" * 5000, "Bash"),
        ),
        open_question="summarise",
    )
    out = brief(transcript)
    assert 'Tool call Bash: {"command": "cat big.log"}' in out.text
    assert "more chars]" in out.text
    assert out.tokens < 400


def test_a_bound_below_the_minimum_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="max_tokens must be >= 300"):
        brief(Transcript(), max_tokens=10)


def test_a_turn_recorded_from_events() -> None:
    events = [
        AgentEvent(type=EventType.init, metadata={"session_id": "s-1"}),
        AgentEvent(type=EventType.text, content="Let me look."),
        AgentEvent(type=EventType.tool_call, content="Bash", metadata={"input": {"c": "ls"}}),
        AgentEvent(type=EventType.tool_result, content="a.txt"),
        AgentEvent(type=EventType.text, content="There is a.txt."),
        AgentEvent(type=EventType.final, content="There is a.txt."),
    ]
    t = Transcript(backend="claude").with_turn("what is here?", events)
    assert [x.kind for x in t.turns] == [
        TurnKind.user, TurnKind.assistant, TurnKind.tool_call, TurnKind.tool_result,
        TurnKind.assistant,
    ]  # fmt: skip
    assert t.session_id == "s-1"
    assert t.open_question is None
    assert t.question == "what is here?"
    failed = t.with_turn("and now?", [AgentEvent(type=EventType.error, is_error=True)])
    assert failed.open_question == "and now?"
