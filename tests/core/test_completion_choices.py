"""`CompletionConfig.choices` and its TRANSLATED path (`agentport.structured`): the answer
is exactly one allowed string, or `schema_mismatch` after the re-prompts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from pydantic import ValidationError
from returns.result import Result, Success

from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    Param,
    ProviderError,
)
from agentport.structured import complete_with_choices, match_choice

JUDGE = ("<judge>Yes</judge>", "<judge>No</judge>")


def test_choices_count_as_an_output_constraint_param() -> None:
    assert Param.output_schema in CompletionConfig(choices=JUDGE).params_set()


def test_choices_and_schema_together_are_rejected() -> None:
    with pytest.raises(ValidationError, match="not both"):
        CompletionConfig(choices=JUDGE, output_schema={"type": "object"})


def test_empty_choices_are_rejected() -> None:
    with pytest.raises(ValidationError):
        CompletionConfig(choices=())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<judge>Yes</judge>", "<judge>Yes</judge>"),
        ("  <judge>No</judge>\n", "<judge>No</judge>"),
        ("Verdict: <judge>No</judge>.", "<judge>No</judge>"),
        ("<judge>Yes</judge> or <judge>No</judge>", None),  # ambiguous
        ("yes", None),
    ],
)
def test_match_choice_accepts_one_unambiguous_choice(text: str, expected: str | None) -> None:
    assert match_choice(text, JUDGE) == expected


Call = Callable[[list[Message]], Awaitable[Result[CompletionResponse, ProviderError]]]


def _scripted(answers: list[str], seen: list[list[Message]]) -> Call:
    it = iter(answers)

    async def call(convo: list[Message]) -> Result[CompletionResponse, ProviderError]:
        seen.append(list(convo))
        return Success(CompletionResponse(content=next(it)))

    return call


@pytest.mark.anyio
async def test_stray_answer_is_reprompted_then_matched() -> None:
    seen: list[list[Message]] = []
    call = _scripted(["Perhaps.", "<judge>Yes</judge>"], seen)
    config = CompletionConfig(choices=JUDGE)
    response = (await complete_with_choices(call, [Message.user("Is it?")], config)).unwrap()
    assert (response.content, response.parsed) == ("<judge>Yes</judge>", "<judge>Yes</judge>")
    assert "<judge>No</judge>" in seen[0][-1].content  # the allowed lines were in the prompt
    assert seen[1][-2].content == "Perhaps."  # the bad answer was shown back


@pytest.mark.anyio
async def test_no_valid_choice_after_retries_is_schema_mismatch_with_raw_text() -> None:
    seen: list[list[Message]] = []
    call = _scripted(["a", "b"], seen)
    config = CompletionConfig(choices=JUDGE, schema_retries=1)
    error = (await complete_with_choices(call, [Message.user("?")], config)).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert error.raw_text == "b"
    assert len(seen) == 2
