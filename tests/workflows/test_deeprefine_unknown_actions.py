"""An unknown action name is kept as a rejected item wherever it appears (in
the first block, in a later block, or in bare calls without a block), so review reports it
instead of dropping it silently."""

from __future__ import annotations

import pytest

from agentport.workflows.deeprefine import Rejected, parse_refinement

UNKNOWN = ['add_edge("a", "r", "b")', 'INSERT_EDGE("a", "r", "b")', 'removeNode("a")']
GOOD = 'insert_edge("a", "r", "b")'


@pytest.mark.parametrize("unknown", UNKNOWN)
@pytest.mark.parametrize(
    "shape",
    [
        "<refinement>{u}|{g}</refinement>",  # in the block
        "<refinement>{g}</refinement> then <refinement>{u}</refinement>",  # a later block
        "I propose {u} and also {g}.",  # bare calls, no block
        "{u}\n{g}",
    ],
)
def test_unknown_names_are_rejected_items_wherever_they_appear(unknown: str, shape: str) -> None:
    parsed = parse_refinement(shape.format(u=unknown, g=GOOD))
    assert parsed.found
    rejected = [i for i in parsed.items if isinstance(i, Rejected)]
    assert len(rejected) == 1, parsed.items
    assert rejected[0].text.startswith(unknown.split("(")[0])
    assert [str(a) for a in parsed.actions] == [GOOD]


def test_prose_calls_that_are_not_actions_are_not_items() -> None:
    parsed = parse_refinement("helper() calls run() then " + GOOD)
    assert [str(i) for i in parsed.items] == [GOOD]
