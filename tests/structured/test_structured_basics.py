"""agentport.structured: JSON extraction, validation and the re-prompt loop."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from agentport import CompletionConfig, ErrorKind, Message
from agentport.structured import complete_with_schema, extract_json, parse_answer, validate
from agentport.testing import ScriptedAdapter


class Item(BaseModel):
    name: str
    n: int


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Here:\n```json\n{"a": 2}\n```\nthanks', {"a": 2}),
        ('prefix {"a": "}{", "b": [1, 2]} trailing prose', {"a": "}{", "b": [1, 2]}),
        ('x {"s": "quote \\" brace }"} y', {"s": 'quote " brace }'}),
        ("list: [1, 2, 3] end", [1, 2, 3]),
        ('{not json} then {"ok": true}', {"ok": True}),
        ("nothing here", None),
        ('{"unterminated": ', None),
    ],
)
def test_extract_json_from_free_text(text: str, expected: object) -> None:
    assert extract_json(text) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=4), st.text(max_size=20))
def test_extract_json_finds_an_object_after_prose(obj: dict[str, object], prose: str) -> None:
    prose = prose.replace("{", "").replace("[", "")
    assert extract_json(f"{prose} {json.dumps(obj)} and more") == obj


def test_validate_model_and_json_schema() -> None:
    assert validate(Item, {"name": "x", "n": 1}).unwrap() == Item(name="x", n=1)
    assert "n" in validate(Item, {"name": "x"}).failure()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert validate(schema, {"n": 3}).unwrap() == {"n": 3}
    assert "n" in validate(schema, {"n": "x"}).failure()


def test_parse_answer_failure_keeps_the_raw_text() -> None:
    error = parse_answer("no json", Item).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert error.raw_text == "no json"


@pytest.mark.anyio
async def test_reprompt_with_validation_errors_then_succeed() -> None:
    llm = ScriptedAdapter().add('{"name": "x"}', '{"name": "x", "n": 2}')
    config = CompletionConfig(output_schema=Item, schema_retries=2)
    result = await complete_with_schema(
        lambda msgs: llm.complete(msgs), [Message.user("give item")], config
    )
    assert result.unwrap().parsed == Item(name="x", n=2)
    assert len(llm.calls) == 2
    assert "does not match the schema" in llm.calls[1].prompt
    assert "JSON schema" in llm.calls[0].prompt


@pytest.mark.anyio
async def test_reprompts_are_bounded_then_schema_mismatch() -> None:
    llm = ScriptedAdapter().add("never json")
    config = CompletionConfig(output_schema=Item, schema_retries=2)
    result = await complete_with_schema(lambda m: llm.complete(m), [Message.user("q")], config)
    assert result.failure().kind is ErrorKind.schema_mismatch
    assert result.failure().raw_text == "never json"
    assert len(llm.calls) == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no", "no"),
        ("  yes\n", "yes"),
        ("The answer is: yes.", "yes"),
        ("nope", None),  # regression: substring matching turned "nope" into "no"
        ("I do not know", None),
        ("unknown", None),
        ("Yes, no doubt", None),  # both words stand in it: ambiguous
        ("<judge>Yes</judge>", "yes"),
    ],
)
def test_match_choice_needs_a_whole_word(text: str, expected: str | None) -> None:
    from agentport.structured import match_choice

    assert match_choice(text, ("yes", "no")) == expected


def test_invalid_json_schema_is_rejected_when_the_config_is_built() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="not a valid JSON schema"):
        CompletionConfig(output_schema={"type": "nonsense"})
    with pytest.raises(ValidationError, match="regex"):
        CompletionConfig(output_schema={"properties": {"a": {"pattern": "("}}})


def test_unresolvable_ref_is_a_failure_not_a_crash() -> None:
    result = validate({"$ref": "#/nope"}, {"a": 1})
    assert "cannot be applied" in result.failure()


def test_duplicate_or_empty_choices_are_rejected() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="distinct"):
        CompletionConfig(choices=("a", "a"))
    with pytest.raises(ValidationError, match="at least 1 item"):
        CompletionConfig(choices=())


@pytest.mark.anyio
async def test_test_doubles_enforce_choices() -> None:
    # Regression: echo and scripted ignored `choices`, so choice flows tested nothing.
    from agentport.testing import EchoAdapter

    config = CompletionConfig(choices=("yes", "no"))
    scripted = ScriptedAdapter().add("maybe", "Yes")
    first = await scripted.complete([Message.user("q")], config)
    assert first.failure().kind is ErrorKind.schema_mismatch
    assert first.failure().raw_text == "maybe"
    echo = await EchoAdapter().complete([Message.user("answer: no")], config)
    assert echo.unwrap().parsed == "no"
    assert echo.unwrap().content == "no"
