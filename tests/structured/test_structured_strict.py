"""`strict_schema` / `restore_strict`: what codex `--output-schema` (OpenAI strict) accepts,
and the answer mapped back so it validates against the ORIGINAL schema."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from agentport.structured import restore_strict, strict_schema, validate


class Inner(BaseModel):
    label: str = Field(min_length=2)


class Report(BaseModel):
    title: str
    score: int = Field(ge=0, le=10)
    note: str = "none"
    maybe: int | None = None
    inner: Inner | None = None
    items: list[Inner] = []


def _objects(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            found.append(node)
        for value in node.values():
            found += _objects(value)
    elif isinstance(node, list):
        for value in node:
            found += _objects(value)
    return found


def test_every_object_is_closed_and_requires_every_property() -> None:
    schema = strict_schema(Report)
    objects = _objects(schema)
    assert len(objects) >= 2  # Report, Inner (in $defs)
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])


def test_optional_fields_become_nullable_and_required_ones_stay_strict() -> None:
    props = strict_schema(Report)["properties"]
    assert props["title"]["type"] == "string"
    assert props["note"]["type"] == ["string", "null"]


def test_unsupported_keywords_are_stripped_everywhere() -> None:
    text = str(strict_schema(Report))
    for keyword in ("minLength", "minimum", "maximum", "'default'"):
        assert keyword not in text


def test_refs_and_defs_are_kept_and_normalised() -> None:
    schema = strict_schema(Report)
    assert "Inner" in schema["$defs"]
    assert schema["$defs"]["Inner"]["additionalProperties"] is False


def test_optional_nulls_are_restored_to_defaults() -> None:
    answer = {
        "title": "t", "score": 3, "note": None, "maybe": None, "inner": None,
        "items": [{"label": "xy"}],
    }  # fmt: skip
    restored = restore_strict(answer, Report)
    assert "note" not in restored  # null only because strict mode required it: default applies
    assert restored["maybe"] is None  # null allowed by the original schema: kept
    model = validate(Report, restored).unwrap()
    assert model.note == "none"


def test_stripped_constraints_are_still_enforced_after_restore() -> None:
    answer = {"title": "t", "score": 99, "note": None, "maybe": None, "inner": None,
              "items": []}  # fmt: skip
    assert validate(Report, restore_strict(answer, Report)).failure()


def test_openai_wrapper_shape_is_unwrapped() -> None:
    inner = {"type": "object", "properties": {"a": {"type": "string"}}}
    schema = strict_schema({"name": "x", "strict": True, "schema": inner})
    assert schema["required"] == ["a"]
    assert schema["additionalProperties"] is False


def test_one_of_becomes_any_of() -> None:
    schema = strict_schema({"oneOf": [{"type": "string"}, {"type": "integer"}]})
    assert "oneOf" not in schema
    assert len(schema["anyOf"]) == 2


_names = st.text("abcdefgh", min_size=1, max_size=4)


@st.composite
def _flat_schema(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    names = draw(st.lists(_names, unique=True, max_size=5))
    required = [n for n in names if draw(st.booleans())]
    schema = {
        "type": "object",
        "properties": {n: {"type": "integer"} for n in names},
        "required": required,
    }
    answer = {
        n: (draw(st.integers()) if n in required or draw(st.booleans()) else None) for n in names
    }
    return schema, answer


@given(_flat_schema())
def test_any_strict_answer_restores_to_a_valid_original_answer(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    schema, answer = case
    strict = strict_schema(schema)
    assert validate(strict, answer).unwrap() == answer  # a valid strict answer ...
    restored = restore_strict(answer, schema)
    assert validate(schema, restored).unwrap() == restored  # ... is valid for the original
    assert all(v is not None for v in restored.values())
