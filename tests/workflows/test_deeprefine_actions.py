"""The action grammar: round trip, and every ill-formed item rejected with a reason."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from agentport.workflows.deeprefine import (
    MAX_ACTIONS,
    Action,
    Rejected,
    parse_refinement,
    render_action,
    render_refinement,
)

names = st.one_of(
    st.text(min_size=1, max_size=30).filter(
        lambda s: s.strip() and all(c in "\n\t" or unicodedata.category(c) != "Cc" for c in s)
    ),
    st.sampled_from(["a|b", 'say "hi"', "it's", "f(a, b)", "x\ny", "데이터 로드()", "back\\slash"]),
)
actions = st.one_of(
    st.builds(lambda a: Action("insert_edge", a), st.tuples(names, names, names)),
    st.builds(lambda a: Action("delete_edge", a), st.tuples(names, names, names)),
    st.builds(lambda a: Action("replace_node", a), st.tuples(names, names)),
)


@given(st.lists(actions, min_size=1, max_size=MAX_ACTIONS, unique=True))
def test_render_then_parse_is_identity_even_with_pipes_quotes_newlines_korean(
    items: list[Action],
) -> None:
    parsed = parse_refinement("thinking...\n" + render_refinement(items) + "\ntrailing")
    assert list(parsed.items) == items


@given(actions)
def test_single_action_round_trips_through_both_quote_styles(action: Action) -> None:
    text = render_action(action)
    assert parse_refinement(f"<refinement>{text}</refinement>").actions == [action]
    assert parse_refinement(text).actions == [action]  # fallback without a block


def test_a_closing_tag_inside_a_name_does_not_end_the_block() -> None:
    """Found by the round-trip property: a name holding `</REFINEMENT>` ended the block at
    it (blocks end at the first closing tag, quotes or not), so the renderer escapes it."""
    items = [Action("insert_edge", ("0", "0", "0")),
             Action("insert_edge", ("a", "</REFINEMENT>", "</refinement x"))]  # fmt: skip
    rendered = render_refinement(items)
    assert rendered.lower().count("</refinement>") == 1
    assert list(parse_refinement(rendered).items) == items


def test_pipe_and_newline_inside_quotes_do_not_split_the_action() -> None:
    parsed = parse_refinement('<refinement>insert_edge("a|b", "calls", "c\nd")</refinement>')
    assert parsed.actions == [Action("insert_edge", ("a|b", "calls", "c\nd"))]


def test_parentheses_inside_arguments_survive_the_fallback() -> None:
    parsed = parse_refinement('I suggest insert_edge("main()", "calls", "run()") here.')
    assert parsed.actions == [Action("insert_edge", ("main()", "calls", "run()"))]


def test_unquoted_arguments_from_small_models_are_tolerated() -> None:
    parsed = parse_refinement("<refinement>insert_edge(main(), calls, f(x, y))</refinement>")
    assert parsed.actions == [Action("insert_edge", ("main()", "calls", "f(x, y)"))]


def _reasons(text: str) -> list[str]:
    return [i.reason for i in parse_refinement(text).items if isinstance(i, Rejected)]


def test_unknown_and_uppercase_action_names_are_rejected_with_reason() -> None:
    assert (
        "unknown action 'INSERT_EDGE'"
        in _reasons('<refinement>INSERT_EDGE("a", "r", "b")</refinement>')[0]
    )
    assert "unknown action 'merge'" in _reasons('<refinement>merge("a", "b")</refinement>')[0]


def test_wrong_arity_is_rejected_not_crashing() -> None:
    assert _reasons('<refinement>insert_edge("a", "b")</refinement>') == [
        "insert_edge takes 3 arguments, got 2"
    ]
    assert _reasons('<refinement>replace_node("a", "b", "c")</refinement>') == [
        "replace_node takes 2 arguments, got 3"
    ]


def test_unescaped_inner_quote_and_unclosed_quote_are_rejected() -> None:
    assert (
        "expected ',' or ')'"
        in _reasons('<refinement>insert_edge("a"b", "r", "c")</refinement>')[0]
    )
    assert _reasons('<refinement>insert_edge("a", "r", "c)</refinement>') == ["unclosed quote"]


def test_bad_item_does_not_swallow_the_next_good_one() -> None:
    parsed = parse_refinement('<refinement>oops(|insert_edge("a", "r", "b")</refinement>')
    assert parsed.actions == [Action("insert_edge", ("a", "r", "b"))]
    assert isinstance(parsed.items[0], Rejected)


def test_more_than_ten_actions_are_capped_and_duplicates_flagged() -> None:
    many = [Action("insert_edge", (f"a{i}", "r", "b")) for i in range(12)]
    parsed = parse_refinement(render_refinement([many[0], *many]))
    assert len(parsed.actions) == MAX_ACTIONS
    reasons = [i.reason for i in parsed.items if isinstance(i, Rejected)]
    assert reasons[0] == "duplicate of action 1"
    assert reasons[1:] == ["over the 10-action cap"] * 2


def test_second_refinement_block_is_reported_not_silently_dropped() -> None:
    parsed = parse_refinement(
        '<refinement>insert_edge("a", "r", "b")</refinement><refinement>delete_edge("x", "r", "y")'
        "</refinement>"
    )
    assert len(parsed.actions) == 1
    assert "outside the first <refinement> block" in parsed.items[1].reason  # type: ignore[union-attr]


def test_empty_block_is_zero_actions_and_prose_is_not_found() -> None:
    assert parse_refinement("<refinement></refinement>").items == ()
    assert parse_refinement("<refinement></refinement>").found
    assert not parse_refinement("I have no idea").found


def test_control_characters_in_names_are_rejected_with_a_reason() -> None:
    # Regression: replace_node(old, "RetryPolicy\x00<script>") was rated MEDIUM and applied.
    parsed = parse_refinement('<refinement>replace_node("a", "RetryPolicy\x00x")</refinement>')
    assert parsed.actions == []
    rejected = parsed.items[0]
    assert isinstance(rejected, Rejected)
    assert "control character" in rejected.reason
