"""Schemas never lie: a schema the strict subset cannot express is
never sent natively (prompt + local validation, with a warning); pydantic models validate as
strictly as their JSON schema; a length-cut answer says it was cut."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from returns.result import Success

from agentport import CompletionConfig, CompletionResponse, ErrorKind, Message, Usage
from agentport.structured import (
    complete_constrained,
    complete_with_schema,
    native_schema_gaps,
    parse_answer,
    strict_schema,
    validate,
)

pytestmark = pytest.mark.anyio


class WithAny(BaseModel):
    name: str
    extra: Any = None


class WithFreeMap(BaseModel):
    meta: dict[str, Any]


class WithTypedMap(BaseModel):
    counts: dict[str, int]


class WithTuple(BaseModel):
    pair: tuple[int, str]


class Inner(BaseModel):
    free: dict[str, str] = {}


class Nested(BaseModel):
    items: list[Inner]


class Fits(BaseModel):
    name: str
    count: int = 0
    tags: list[str] = []


@pytest.mark.parametrize(
    ("schema", "where", "what"),
    [
        (WithAny, "extra", "any value"),
        (WithFreeMap, "meta", "free-form map"),
        (WithTypedMap, "counts", "typed map"),
        (WithTuple, "pair", "tuple"),
        (Nested, "Inner.free", "typed map"),  # inside $defs, reached through a $ref
        ({"type": "object", "properties": {"x": True}}, "x", "boolean subschema (true)"),
        ({"type": "array", "items": False}, "(root)[]", "boolean subschema (false)"),
        ({"anyOf": [True, {"type": "null"}]}, "(root)", "boolean subschema (true)"),
        ({"type": "object"}, "(root)", "free-form map"),
        ({"type": "array"}, "(root)", "no item schema"),
        ({"type": "object", "properties": {"x": {"title": "X"}}}, "x", "any value"),
        ({"anyOf": [{"type": "string"}, {}]}, "(root)", "any value"),
        ({"allOf": [{"type": "object"}, {"required": ["a"]}]}, "(root)", "allOf"),
        ({"name": "w", "schema": {"type": "object", "properties": {"m": {"type": "object"}}}},
         "m", "free-form map"),
    ],
)  # fmt: skip
def test_each_inexpressible_node_is_named(schema: Any, where: str, what: str) -> None:
    gaps = native_schema_gaps(schema)
    assert any(g.startswith(f"{where}:") and what in g for g in gaps), gaps
    with pytest.raises(ValueError, match="cannot express"):
        strict_schema(schema)


@pytest.mark.parametrize(
    "schema",
    [
        Fits,
        {"type": "object", "properties": {}},  # an empty record, e.g. a model with no fields
        {"type": "object", "additionalProperties": False},  # only {} is valid: says so
        {"type": "object", "properties": {"e": {"enum": ["a", 1]}}},
        {"type": "object", "properties": {"c": {"const": "x"}}, "additionalProperties": True},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
    ],
)
def test_expressible_schemas_have_no_gaps(schema: Any) -> None:
    assert native_schema_gaps(schema) == ()
    strict_schema(schema)


class Recorder:
    def __init__(self, *answers: str, finish: str = "stop", output_tokens: int = 0) -> None:
        self.answers = list(answers)
        self.finish = finish
        self.output_tokens = output_tokens
        self.calls: list[tuple[str, list[Message]]] = []

    def call(self, how: str) -> Any:
        async def send(convo: list[Message]) -> Any:
            self.calls.append((how, convo))
            text = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            return Success(
                CompletionResponse(
                    content=text,
                    finish_reason=self.finish,
                    usage=Usage(output_tokens=self.output_tokens),
                    warnings=("backend note",),
                )
            )

        return send


@pytest.mark.parametrize(
    ("schema", "answer"),
    [
        (WithAny, '{"name": "a", "extra": [1, {"x": 2}]}'),
        (WithFreeMap, '{"meta": {"k": [1, 2]}}'),
        (WithTypedMap, '{"counts": {"a": 1, "b": 2}}'),
        (WithTuple, '{"pair": [1, "x"]}'),
        ({"type": "object", "properties": {"x": True}}, '{"x": "anything"}'),
    ],
)
async def test_a_schema_the_strict_subset_cannot_express_falls_back_with_a_warning(
    schema: Any, answer: str
) -> None:
    rec = Recorder(answer)
    config = CompletionConfig(output_schema=schema)
    result = await complete_constrained(
        rec.call("plain"), [Message.user("q")], config, native_schema=rec.call("native"),
        backend="fakebackend",
    )  # fmt: skip
    response = result.unwrap()
    assert [how for how, _ in rec.calls] == ["plain"]  # the native form was never sent
    assert "JSON schema" in rec.calls[0][1][-1].content  # the schema went in the prompt
    warning = response.warnings[0]
    assert warning.startswith("fakebackend did not enforce output_schema natively")
    assert "the answer was validated locally" in warning
    assert "backend note" in response.warnings  # the backend's own warnings are kept


async def test_a_schema_that_fits_goes_native_without_instruction_or_warning() -> None:
    rec = Recorder('{"name": "a"}')
    config = CompletionConfig(output_schema=Fits)
    result = await complete_with_schema(
        rec.call("plain"), [Message.user("q")], config, native=rec.call("native")
    )
    assert [how for how, _ in rec.calls] == ["native"]
    assert rec.calls[0][1] == [Message.user("q")]
    assert result.unwrap().parsed == Fits(name="a")
    assert result.unwrap().warnings == ("backend note",)


async def test_describe_native_keeps_the_instruction_on_the_native_path() -> None:
    rec = Recorder('{"name": "a"}')
    config = CompletionConfig(output_schema=Fits)
    await complete_with_schema(
        rec.call("plain"), [Message.user("q")], config, native=rec.call("native"),
        describe_native=True,
    )  # fmt: skip
    assert rec.calls[0][0] == "native"
    assert "JSON schema" in rec.calls[0][1][-1].content


# --- pydantic strict by default, like the JSON-schema dict ------------------------------------


class Color(Enum):
    red = "red"


class Kinds(BaseModel):
    count: int
    ratio: float
    name: str
    flag: bool
    numbers: list[int]
    color: Color
    mode: Literal["a", "b"]
    maybe: int | None = None


GOOD = {"count": 4, "ratio": 0.5, "name": "n", "flag": True, "numbers": [1], "color": "red",
        "mode": "a"}  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value", "valid"),
    [
        ("count", "4", False),
        ("count", True, False),
        ("count", 4, True),
        ("ratio", 1, True),
        ("ratio", "0.5", False),
        ("name", 5, False),
        ("flag", "true", False),
        ("flag", 1, False),
        ("numbers", ["1"], False),
        ("color", "red", True),
        ("color", "blue", False),
        ("mode", "c", False),
        ("maybe", None, True),
        ("maybe", "3", False),
    ],
)
def test_a_model_and_its_json_schema_accept_the_same_answers(
    field: str, value: Any, valid: bool
) -> None:
    answer = {**GOOD, field: value}
    as_model = validate(Kinds, answer)
    as_dict = validate(Kinds.model_json_schema(), answer)
    assert isinstance(as_model, Success) is valid
    assert isinstance(as_dict, Success) is valid


def test_the_issue_example_count_4_as_a_string_fails_unless_lax_is_asked_for() -> None:
    class Counted(BaseModel):
        count: int

    error = parse_answer('{"count": "4"}', Counted).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert "count" in error.message
    assert parse_answer('{"count": "4"}', Counted, strict=False).unwrap() == Counted(count=4)


async def test_schema_strict_false_opts_in_to_coercion_in_the_loop() -> None:
    class Counted(BaseModel):
        count: int

    rec = Recorder('{"count": "4"}')
    strict = await complete_with_schema(
        rec.call("plain"), [Message.user("q")], CompletionConfig(output_schema=Counted)
    )
    assert strict.failure().kind is ErrorKind.schema_mismatch
    lax = await complete_with_schema(
        rec.call("plain"),
        [Message.user("q")],
        CompletionConfig(output_schema=Counted, schema_strict=False),
    )
    assert lax.unwrap().parsed == Counted(count=4)


# --- a length-cut answer says so ---------------------------------------------------------------


async def test_an_answer_cut_at_max_tokens_fails_at_once_saying_so() -> None:
    cut = '{"name": "a long answer that was cut'
    rec = Recorder(cut, finish="length", output_tokens=64)
    config = CompletionConfig(output_schema=Fits, max_tokens=64, schema_retries=2)
    error = (await complete_with_schema(rec.call("plain"), [Message.user("q")], config)).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert error.message.startswith("truncated at 64 tokens")
    assert error.raw_text == cut
    assert error.details["truncated"] is True
    assert len(rec.calls) == 1  # a re-prompt would be cut again


async def test_a_cut_answer_with_no_token_count_uses_the_configured_limit() -> None:
    rec = Recorder('{"name": ', finish="length")
    error = (
        await complete_with_schema(
            rec.call("plain"),
            [Message.user("q")],
            CompletionConfig(output_schema=Fits, max_tokens=9),
        )
    ).failure()
    assert error.message.startswith("truncated at 9 tokens")


async def test_a_cut_answer_that_still_validates_is_accepted() -> None:
    rec = Recorder('{"name": "a"} and then the prose was cu', finish="length")
    result = await complete_with_schema(
        rec.call("plain"), [Message.user("q")], CompletionConfig(output_schema=Fits)
    )
    assert result.unwrap().parsed == Fits(name="a")


async def test_a_failed_fallback_call_keeps_the_warning_in_the_error_details() -> None:
    rec = Recorder("not json")
    config = CompletionConfig(output_schema=WithAny, schema_retries=0)
    error = (
        await complete_with_schema(
            rec.call("plain"), [Message.user("q")], config, native=rec.call("native")
        )
    ).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert "did not enforce output_schema natively" in error.details["warnings"][0]


async def test_a_cut_answer_with_a_complete_but_wrong_value_is_reprompted_as_usual() -> None:
    rec = Recorder('{"title": "the schema echoed back"}', '{"name": "a"}', finish="length")
    result = await complete_with_schema(
        rec.call("plain"), [Message.user("q")], CompletionConfig(output_schema=Fits)
    )
    assert result.unwrap().parsed == Fits(name="a")
    assert len(rec.calls) == 2
    assert "name: Field required" in rec.calls[1][1][-1].content
