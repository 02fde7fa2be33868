"""Review rules R1-R10 on a tiny graph with real source files (docs/deeprefine.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _deeprefine_util import write_tiny
from agentport.workflows.deeprefine import ReviewContext, ReviewItem, load_graph, review


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_tiny(tmp_path)


def _one(tiny: Path, action: str, trace_ids: set[str] | None = None) -> ReviewItem:
    graph = load_graph(tiny)
    ctx = ReviewContext(trace_ids or set(), tiny.parent.parent)
    (item,) = review(f"<refinement>{action}</refinement>", graph, ctx).items
    return item


def test_r9_code_evidence_inside_the_subject_body_is_high(tiny: Path) -> None:
    item = _one(
        tiny, 'insert_edge(".go()", "calls", "helper()")', {"app_util_runner_go", "app_util_helper"}
    )
    assert item.confidence == "HIGH"
    assert item.ids == ["app_util_runner_go", None, "app_util_helper"]
    assert "R9 direct code evidence in app/util.py (direct call)" in item.evidence


def test_r8_cross_community_without_k_hop_support_is_low(tiny: Path) -> None:
    item = _one(tiny, 'insert_edge(".go()", "calls", "helper()")')
    assert item.confidence == "LOW"
    assert any(w.startswith("R8 cross-community") for w in item.warnings)


def test_r10_k_hop_support_without_code_evidence_is_medium(tiny: Path) -> None:
    item = _one(tiny, 'insert_edge("app/cli.py::main()", "uses", "cli.py")', {"app_cli_main"})
    assert item.confidence == "MEDIUM"
    assert _one(tiny, 'insert_edge("app/cli.py::main()", "uses", "cli.py")').confidence == "LOW"


def test_r3_bare_name_is_low_even_with_a_single_match(tiny: Path) -> None:
    item = _one(tiny, 'insert_edge("run()", "uses", "cli.py")', {"app_cli_run"})
    assert item.confidence == "LOW"
    assert item.effect == "change"  # unique: appliable with --allow-low-confidence
    assert item.suggested_replacement == 'insert_edge("app/cli.py::run()", "uses", "cli.py")'


def test_r3_multi_match_is_rejected_with_suggestions_ranked_by_closeness(tiny: Path) -> None:
    near_cli = _one(tiny, 'insert_edge("main()", "uses", "cli.py")', {"app_cli_run"})
    assert near_cli.effect == "reject"
    assert near_cli.suggested_replacement == 'insert_edge("app/cli.py::main()", "uses", "cli.py")'
    near_util = _one(tiny, 'insert_edge("main()", "uses", "cli.py")', {"app_util_runner"})
    assert near_util.suggested_replacement == 'insert_edge("app/util.py::main()", "uses", "cli.py")'


def test_r2_unknown_endpoint_is_rejected_never_created(tiny: Path) -> None:
    item = _one(tiny, 'insert_edge("helper()", "calls", "_LLM_FACTORIES")', {"app_util_helper"})
    assert item.effect == "reject"
    assert item.confidence == "LOW"
    assert any(w.startswith("R2 '_LLM_FACTORIES' is not a node") for w in item.warnings)


def test_r3_unmatched_function_with_qualified_candidates(tiny: Path) -> None:
    item = _one(tiny, 'insert_edge("go()", "calls", "helper()")')
    assert item.effect == "reject"
    assert item.suggested_replacement == 'insert_edge("app/util.py::.go()", "calls", "helper()")'


def test_r4_relabel_onto_existing_label_or_qualified_name_is_rejected(tiny: Path) -> None:
    assert _one(tiny, 'replace_node("helper()", "cli.py")').effect == "reject"
    assert _one(tiny, 'replace_node("helper()", "app/cli.py::run()")').effect == "reject"
    ok = _one(tiny, 'replace_node("helper()", "helper_v2()")', {"app_util_helper"})
    assert (ok.confidence, ok.effect) == ("MEDIUM", "change")


def test_r5_self_loop_is_low(tiny: Path) -> None:
    item = _one(tiny, 'insert_edge("helper()", "calls", "helper()")', {"app_util_helper"})
    assert item.confidence == "LOW"
    assert any(w.startswith("R5") for w in item.warnings)


def test_r6_existing_edge_is_a_skip_and_parallel_link_is_rejected(tiny: Path) -> None:
    dup = _one(tiny, 'insert_edge("cli.py", "imports_from", "helper()")', {"app_cli"})
    assert (dup.confidence, dup.effect) == ("MEDIUM", "skip")
    parallel = _one(
        tiny, 'insert_edge("app/cli.py::main()", "uses", "app/cli.py::run()")', {"app_cli_main"}
    )
    assert (parallel.confidence, parallel.effect) == ("LOW", "reject")
    assert any(
        w.startswith("R6 the pair is already linked (calls, EXTRACTED)") for w in parallel.warnings
    )


def test_r7_delete_rules(tiny: Path) -> None:
    extracted = _one(
        tiny, 'delete_edge("app/cli.py::main()", "calls", "app/cli.py::run()")', {"app_cli_main"}
    )
    assert extracted.confidence == "LOW"
    assert any(w.startswith("R7 deletes an EXTRACTED") for w in extracted.warnings)
    reversed_ = _one(tiny, 'delete_edge("helper()", "calls", "app/cli.py::run()")')
    assert reversed_.effect == "reject"
    assert "only the reversed edge exists" in reversed_.warnings[0]
    # run() calls helper() in app/cli.py: deleting that INFERRED link removes a true one
    # (the embedded model proposed such a delete of loads() -> JSONDecoder at MEDIUM)
    shown = _one(tiny, 'delete_edge("app/cli.py::run()", "calls", "helper()")', {"app_cli_run"})
    assert shown.confidence == "LOW"
    assert any(w.startswith("R7 the code shows this edge") for w in shown.warnings)


def test_r7_a_delete_the_code_backs_is_medium_and_one_it_cannot_check_is_low(
    tiny: Path,
) -> None:
    raw = json.loads(tiny.read_text())
    raw["links"] += [  # main() calls run() only: these two are not in the code
        {"source": "app_cli_main", "target": "app_util_helper", "relation": "calls",
         "confidence": "INFERRED"},
        {"source": "app_cli_main", "target": "app_util_runner", "relation": "related_to",
         "confidence": "INFERRED"},
    ]  # fmt: skip
    tiny.write_text(json.dumps(raw))
    absent = _one(tiny, 'delete_edge("app/cli.py::main()", "calls", "helper()")', {"app_cli_main"})
    assert (absent.confidence, absent.effect) == ("MEDIUM", "change")
    assert any(e.startswith("R7 code evidence") for e in absent.evidence)
    unknown = _one(
        tiny, 'delete_edge("app/cli.py::main()", "related_to", "Runner")', {"app_cli_main"}
    )
    assert unknown.confidence == "LOW"
    assert any("no code evidence that the edge is absent" in w for w in unknown.warnings)


def test_r1_malformed_items_are_rejected_at_review_time(tiny: Path) -> None:
    graph = load_graph(tiny)
    items = review(
        '<refinement>INSERT_EDGE("a","r","b")|insert_edge("a")</refinement>', graph
    ).items
    assert [i.effect for i in items] == ["reject", "reject"]
    assert items[0].warnings[0].startswith("R1 rejected: unknown action 'INSERT_EDGE'")
    assert items[1].warnings[0] == "R1 rejected: insert_edge takes 3 arguments, got 1"


def test_review_is_deterministic(tiny: Path) -> None:
    graph = load_graph(tiny)
    text = (
        '<refinement>insert_edge("main()", "uses", "cli.py")|replace_node("run()", "x")'
        "</refinement>"
    )
    ctx = ReviewContext({"app_cli_run"}, tiny.parent.parent)
    assert review(text, graph, ctx).as_json() == review(text, graph, ctx).as_json()
