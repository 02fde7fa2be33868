"""`loop validate`: the reference's rules with its holes closed (F-11, F-13)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentport.cli._deeprefine import main
from agentport.workflows.deeprefine import Layout, query_id, trace_template, validate_trace

Q = "How does run() reach helper()?"


def _step(k: int, yes: bool) -> dict[str, Any]:
    return {
        "step": k, "num_hops": k - 1, "base_top_k": 10, "query": Q,
        "retrieved_subgraph": [{"subject": "run()", "relation": "calls", "object": "helper()"}],
        "answerable": yes, "judgement_raw": f"<judge>{'Yes' if yes else 'No'}</judge>",
        "retrieval": {"method": "graphify_query" if k == 1 else "k_hop_expansion",
                      "evidence": "EDGE run() --calls--> helper()"},
    }  # fmt: skip


def _refine_trace(root: Path) -> tuple[dict[str, Any], Path, Path]:
    trace = trace_template(Q)
    trace["interaction_history"] = [_step(1, False), _step(2, True)]
    trace["error_abduction_raw"] = "<abduction>x</abduction>"
    trace["error_abduction_reason"] = "x"
    state = root / "graphify-out" / ".deeprefine"
    state.mkdir(parents=True, exist_ok=True)
    actions = state / f"refinement_actions_{query_id(Q)}.txt"
    actions.write_text('<refinement>insert_edge("a", "r", "b")</refinement>', encoding="utf-8")
    trace["refinement_action_file"] = str(actions.relative_to(root))
    return trace, state / f"loop_trace_{query_id(Q)}.json", actions


def _errors(trace: dict[str, Any], root: Path, refinement: Path | None = None) -> list[str]:
    return validate_trace(trace, root / "t.json", Layout(root), refinement)


def test_valid_refinement_trace_passes(tmp_path: Path) -> None:
    trace, _, actions = _refine_trace(tmp_path)
    assert _errors(trace, tmp_path) == []
    assert _errors(trace, tmp_path, actions) == []


def test_constants_raised_by_the_trace_itself_are_rejected(tmp_path: Path) -> None:
    trace, _, _ = _refine_trace(tmp_path)
    trace["constants"]["max_hops"] = 99
    assert any(e.startswith("constants.max_hops: 99 differs") for e in _errors(trace, tmp_path))
    trace["constants"]["max_hops"] = "four"  # non-numeric: a message, not a ValueError (T08)
    assert any(e.startswith("constants.max_hops:") for e in _errors(trace, tmp_path))


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda t: t.update(query_id="../../../etc/evil"), "query_id: must be 16 lower-case hex"),
        (lambda t: t.update(query_id="0" * 16), "query_id: 0000000000000000 is not the id"),
        (lambda t: t["interaction_history"][0].update(retrieval="graphify"), "[0].retrieval: must"),
        (lambda t: t["interaction_history"][1].update(step=5), "[1].step: expected 2"),
        (lambda t: t["interaction_history"][1].update(num_hops=3), "[1].num_hops: expected 1"),
        (lambda t: t["interaction_history"][0].update(retrieved_subgraph=["a b c"]),
         "[0].retrieved_subgraph[0]: needs"),
        (lambda t: t["interaction_history"][0].update(answerable="false"), "[0].answerable: must"),
        (lambda t: t["interaction_history"][0].update(judgement_raw="no"), "[0].judgement_raw"),
        (lambda t: t["interaction_history"].pop(), "stopped at step 1 after <judge>No</judge>"),
        (lambda t: t["interaction_history"][1].update(answerable=False, judgement_raw="<judge>No"
                                                      "</judge>"), "stopped at step 2"),
        (lambda t: t.update(refinement_action_file="../../x.txt"), "refinement_action_file: "),
        (lambda t: t.update(refinement_action_file="graphify-out/.deeprefine/missing.txt"),
         "refinement_action_file: "),
        (lambda t: t.update(error_abduction_raw="x"), "error_abduction_raw: missing"),
        (lambda t: t.update(schema_version="1"), "schema_version: must be 1"),
        (lambda t: t.update(mode="x"), "mode: must be"),
    ],
)  # fmt: skip
def test_shallow_reference_checks_are_now_errors_naming_the_field(
    tmp_path: Path, mutate: Any, field: str
) -> None:
    trace, _, _ = _refine_trace(tmp_path)
    mutate(trace)
    errors = _errors(trace, tmp_path)
    assert any(field in e for e in errors), errors


def test_refinement_file_must_belong_to_the_trace(tmp_path: Path) -> None:
    trace, _, _ = _refine_trace(tmp_path)
    other = tmp_path / "graphify-out" / ".deeprefine" / "other.txt"
    other.write_text("<refinement></refinement>", encoding="utf-8")
    assert any("names" in e for e in _errors(trace, tmp_path, other))
    trace["refinement_action_file"] = None
    assert any("must be refinement_actions_" in e for e in _errors(trace, tmp_path, other))


def test_early_exit_rules(tmp_path: Path) -> None:
    trace = trace_template(Q)
    trace["interaction_history"] = [_step(1, True)]
    assert _errors(trace, tmp_path) == []
    trace["error_abduction_raw"] = "<abduction>x</abduction>"
    assert any("early exit must not run error abduction" in e for e in _errors(trace, tmp_path))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),  # T01
        ("[1, 2]", "a trace must be a JSON object, got list"),  # T02
    ],
)
def test_cli_validate_bad_trace_file_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    path = tmp_path / "trace.json"
    path.write_text(content, encoding="utf-8")
    assert (
        main(["loop", "validate", "--trace-file", str(path), "--project-root", str(tmp_path)]) == 1
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith(f"deeprefine: {path}: ")
    assert expected in err


def test_cli_validate_retrieval_as_string_names_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # T03
    trace, path, _ = _refine_trace(tmp_path)
    trace["interaction_history"][0]["retrieval"] = "graphify query"
    path.write_text(json.dumps(trace), encoding="utf-8")
    assert (
        main(["loop", "validate", "--trace-file", str(path), "--project-root", str(tmp_path)]) == 1
    )
    out = capsys.readouterr().out
    assert f"{path}: interaction_history[0].retrieval: must be an object" in out


def test_loop_init_refuses_to_overwrite_a_filled_trace(tmp_path: Path) -> None:  # T11
    trace, path, _ = _refine_trace(tmp_path)
    path.write_text(json.dumps(trace), encoding="utf-8")
    args = ["loop", "init", "--query", Q, "--project-root", str(tmp_path)]
    assert main(args) == 1
    assert json.loads(path.read_text(encoding="utf-8"))["interaction_history"]
    assert main([*args, "--force"]) == 0
