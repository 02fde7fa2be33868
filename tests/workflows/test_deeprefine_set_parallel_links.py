"""One action set never writes two links on one node pair.

graphify loads graph.json as an undirected simple graph (`directed: false`), so two links
on a pair collapse into one on load and on `graphify update`. Review checks an insert against
graph.json *and* the inserts accepted earlier in the same set (either direction); apply
refuses a second link on a pair whatever the review said. A property over action sets, and
the real graphify's `diagnose multigraph` on a real graph."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _deeprefine_util import graphify_exe, real_copy
from agentport.workflows.deeprefine import (
    Layout,
    ReviewContext,
    apply_refinement,
    apply_reviewed,
    parse_graph,
    review,
)

NODES = ("a", "b", "c", "d")
RELATIONS = ("calls", "contains", "uses")


def _graph(pairs: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "directed": False,
        "multigraph": False,
        "graph": {},
        "nodes": [
            {"id": n, "label": f"{n}_fn()", "community": 0, "source_file": f"{n}.py"} for n in NODES
        ],
        "links": [
            {"source": s, "target": o, "relation": r, "confidence": "INFERRED"} for s, r, o in pairs
        ],
    }


def _pair_counts(links: list[dict[str, Any]]) -> Counter[frozenset[str]]:
    return Counter(frozenset((link["source"], link["target"])) for link in links)


triple = st.tuples(st.sampled_from(NODES), st.sampled_from(RELATIONS), st.sampled_from(NODES))


@st.composite
def simple_graphs(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """A graph with at most one link per unordered pair (what graphify stores)."""
    out: dict[frozenset[str], tuple[str, str, str]] = {}
    for s, r, o in draw(st.lists(triple, max_size=6)):
        out.setdefault(frozenset((s, o)), (s, r, o))
    return list(out.values())


@settings(max_examples=300)
@given(
    start=simple_graphs(),
    actions=st.lists(st.tuples(st.sampled_from(["insert_edge", "delete_edge"]), triple),
                     min_size=1, max_size=10),
    trace_all=st.booleans(),
)  # fmt: skip
def test_after_apply_no_pair_has_two_links(
    start: list[tuple[str, str, str]],
    actions: list[tuple[str, tuple[str, str, str]]],
    trace_all: bool,
) -> None:
    graph = parse_graph(json.dumps(_graph(start)).encode(), Path("graph.json"))
    text = "<refinement>\n" + "\n".join(
        f'{name}("{s}", "{r}", "{o}")' for name, (s, r, o) in actions
    ) + "\n</refinement>"  # fmt: skip
    ctx = ReviewContext(trace_ids=set(NODES) if trace_all else set())
    reviewed = review(text, graph, ctx)
    claimed: set[frozenset[str]] = set()
    for item in reviewed.items:  # the review itself already sees the set's earlier inserts
        if item.effect == "change" and item.action and item.action.name == "insert_edge":
            pair = frozenset((item.ids[0], item.ids[2]))
            assert pair not in claimed, reviewed.markdown()
            assert not graph.links_between(item.ids[0] or "", item.ids[2] or ""), item.text
            claimed.add(pair)
    apply_reviewed(graph, reviewed, allow_low=True)
    counts = _pair_counts(graph.links)
    assert max(counts.values(), default=0) <= 1, graph.links


def test_two_inserts_on_one_unlinked_pair_second_is_refused_and_named() -> None:
    graph = parse_graph(json.dumps(_graph([])).encode(), Path("graph.json"))
    text = (
        '<refinement>\ninsert_edge("a", "calls", "b")\ninsert_edge("b", "contains", "a")\n'
        "</refinement>"
    )
    first, second = review(text, graph, ReviewContext(trace_ids={"a", "b"})).items
    assert (first.confidence, first.effect) == ("MEDIUM", "change")
    assert (second.confidence, second.effect) == ("LOW", "reject")
    assert any(
        w.startswith("R6 an earlier action of this set already links the pair")
        and 'insert_edge("a", "calls", "b")' in w
        for w in second.warnings
    ), second.warnings


def _diagnose(graph: Path) -> int:
    done = subprocess.run(
        [graphify_exe(), "diagnose", "multigraph", "--graph", str(graph), "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)["summary"]
    return int(summary["undirected_same_endpoint_collapsed_edges"])


@pytest.mark.parametrize("allow_low", [False, True], ids=["default", "allow-low"])
def test_real_graphify_finds_no_collapsed_link_after_an_apply(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, allow_low: bool
) -> None:
    project = real_copy(tmp_path_factory, tmp_path)
    path = project / "graphify-out" / "graph.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw.get("directed") is False  # graphify's default: pairs are unordered
    before = _diagnose(path)
    graph = parse_graph(path.read_bytes(), path)
    by_community: dict[Any, list[str]] = {}
    for node_id, node in sorted(graph.nodes.items()):
        by_community.setdefault(node.get("community"), []).append(node_id)
    s, o = next(
        (x, y)
        for members in by_community.values()
        for x in members
        for y in members
        if x < y and not graph.links_between(x, y)
    )
    # both endpoints in the trace's subgraph: each insert alone is MEDIUM (k-hop support)
    trace = {"interaction_history": [{"retrieved_subgraph": [{"subject_id": s, "object_id": o}]}]}
    text = (
        f'<refinement>\ninsert_edge("{s}", "calls", "{o}")\n'
        f'insert_edge("{s}", "contains", "{o}")\n</refinement>'
    )
    report = apply_refinement(Layout(project), text, trace=trace, allow_low=allow_low)
    assert [i.effect for i in report.review.items] == ["change", "reject"]
    links = json.loads(path.read_text(encoding="utf-8"))["links"]
    assert _pair_counts(links)[frozenset((s, o))] == (1 if allow_low else 0)
    assert report.written is allow_low
    assert _diagnose(path) == before


def test_the_embedded_models_choice_keeps_one_insert_per_pair() -> None:
    """The small-model grammar lets one pair come back with several relations (an enum per
    field cannot say "each pair once"); the code keeps the first, so review sees one."""
    from agentport.workflows.deeprefine._small import Choices, parse_refinement_choice

    choices = Choices(
        names={"a_fn()": "a", "b_fn()": "b", "c_fn()": "c"},
        relations=("calls", "contains"),
        pairs={"a_fn() -> b_fn()": ("a_fn()", "b_fn()"), "a_fn() -> c_fn()": ("a_fn()", "c_fn()")},
        deletable={},
    )
    answer = {
        "actions": [
            {"action": "insert_edge", "pair": "a_fn() -> b_fn()", "relation": "calls"},
            {"action": "insert_edge", "pair": "a_fn() -> b_fn()", "relation": "contains"},
            {"action": "insert_edge", "pair": "a_fn() -> c_fn()", "relation": "contains"},
        ]
    }
    text = parse_refinement_choice(json.dumps(answer), choices)
    assert text is not None
    assert 'insert_edge("a_fn()", "contains", "b_fn()")' not in text
    assert 'insert_edge("a_fn()", "calls", "b_fn()")' in text
    assert 'insert_edge("a_fn()", "contains", "c_fn()")' in text
