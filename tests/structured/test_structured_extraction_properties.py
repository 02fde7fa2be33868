"""JSON extraction never lies about the answer: any JSON value round-trips from prose and
fences, raw control characters inside strings are accepted (what a small model emits under a
grammar), and an object nested in a failing outer value is never taken for the answer."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from agentport import ErrorKind
from agentport.structured import NOTHING, extract_json, find_json, parse_answer

_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
)  # includes control characters
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=10,
)  # fmt: skip
containers = json_values.filter(lambda v: isinstance(v, dict | list))
# prose a model wraps its answer in: no brackets, braces or fences of its own
prose = st.text(max_size=30).map(lambda s: re.sub(r"[\[\]{}`]", "", s))

_ESCAPE = re.compile(r"\\\\|\\(u00[01][0-9a-fA-F]|[nrtbf])")
_RAW = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}


def raw_dumps(value: Any) -> str:
    """JSON text whose strings hold their control characters raw, unescaped."""

    def unescape(m: re.Match[str]) -> str:
        if m.group(0) == "\\\\":
            return m.group(0)
        code = m.group(1)
        return _RAW[code] if code in _RAW else chr(int(code[1:], 16))

    return _ESCAPE.sub(unescape, json.dumps(value, ensure_ascii=False))


@given(json_values)
def test_any_json_value_as_the_whole_answer_round_trips(value: Any) -> None:
    assert find_json(json.dumps(value)) == value
    assert find_json(f"\n  {json.dumps(value, indent=2)}\n") == value


@given(json_values, prose, prose, st.sampled_from(["json", "JSON", ""]))
def test_any_json_value_in_a_fence_round_trips(
    value: Any, before: str, after: str, tag: str
) -> None:
    text = f"{before}\n```{tag}\n{json.dumps(value)}\n```\n{after}"
    try:  # prose of a lone `"` on both sides makes the whole text one JSON string: rule 1
        whole = json.loads(text, strict=False)
    except ValueError:
        assert find_json(text) == value
    else:
        assert find_json(text) == whole


@given(st.sampled_from(["```", "a ``` b", "```json\n{}\n```"]), st.sampled_from(["json", ""]))
def test_a_string_holding_a_fence_does_not_end_the_fenced_block(inner: str, tag: str) -> None:
    for value in (inner, {"code": inner}, [inner, 1]):
        assert find_json(f"Here:\n```{tag}\n{json.dumps(value)}\n```\nDone.") == value


@given(containers, prose, prose)
def test_any_object_or_array_in_prose_round_trips(value: Any, before: str, after: str) -> None:
    assert extract_json(f"{before} {json.dumps(value)} {after}") == value


@given(json_values, prose)
def test_raw_control_characters_inside_strings_are_accepted(value: Any, before: str) -> None:
    text = raw_dumps(value)
    assert find_json(text) == value
    assert find_json(f"```json\n{text}\n```") == value
    if isinstance(value, dict | list):
        assert find_json(f"{before} {text}") == value


def test_issue_11_answer_with_raw_newlines_is_read_whole() -> None:
    text = '{"question": "How does\nagentport retry?", "angles": [{"q": "a"}]}'
    assert find_json(text) == {"question": "How does\nagentport retry?", "angles": [{"q": "a"}]}


nested = st.dictionaries(
    st.text("abc", min_size=1, max_size=3), st.dictionaries(_text, json_values, max_size=2),
    min_size=1, max_size=3,
)  # fmt: skip


@given(nested, st.data())
def test_a_cut_answer_yields_nothing_never_an_inner_object(outer: Any, data: st.DataObject) -> None:
    text = json.dumps(outer)
    cut = data.draw(st.integers(min_value=1, max_value=len(text) - 1))
    assert find_json(text[:cut]) is NOTHING


@given(nested, prose)
def test_a_malformed_outer_object_is_skipped_whole(outer: Any, before: str) -> None:
    broken = json.dumps(outer)[:-1] + ", oops}"
    assert find_json(f"{before} {broken}") is NOTHING
    # ...and a well-formed value AFTER it is still found
    assert find_json(f'{before} {broken} then {{"ok": 1}}') == {"ok": 1}


class Scope(BaseModel):
    question: str
    angles: list[str]


@given(st.text(min_size=1, max_size=10), st.lists(st.text(max_size=5), max_size=3))
def test_outer_failure_is_reported_even_when_an_inner_object_would_validate(
    question: str, angles: list[str]
) -> None:
    inner = {"question": question, "angles": angles}
    answer = json.dumps({"wrapper": inner, "angles": "not a list"})
    error = parse_answer(answer, Scope).failure()
    assert error.kind is ErrorKind.schema_mismatch
    assert "question" in error.message  # the OUTER value is what failed
    assert error.raw_text == answer
