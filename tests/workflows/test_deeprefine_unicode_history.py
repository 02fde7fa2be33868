"""Any Unicode question survives the history and memory files.

`str.splitlines()` also splits at U+2028, U+2029, U+0085 and a few control characters, and
graphify leaves U+0085 raw inside its memory files: a question holding one used to come back
cut in two, or to corrupt history.jsonl on `loop finish`. The question goes in through
graphify's own writer (`graphify save-result`'s function), then through `history
sync-memory`, `history list`, `loop init` and `loop finish`.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentport.cli._deeprefine import main
from agentport.core import printable
from agentport.workflows.deeprefine import query_id, trace_template

graphify_ingest = pytest.importorskip("graphify.ingest")

BREAKERS = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\r\n"


def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert not err.getvalue(), err.getvalue()
    return code, out.getvalue()


def _rows(history: Path) -> list[dict[str, object]]:
    # every line a reader might split on still holds exactly one JSON row
    lines = [line for line in history.read_text(encoding="utf-8").splitlines() if line]
    return [json.loads(line) for line in lines]


def _answered_trace(question: str) -> dict[str, object]:
    trace = trace_template(question)
    trace["interaction_history"] = [
        {
            "step": 1, "query": question.strip(), "num_hops": 0, "base_top_k": 10,
            "retrieved_subgraph": [{"subject": "a", "relation": "r", "object": "b"}],
            "answerable": True, "judgement_raw": "<judge>Yes</judge>",
            "retrieval": {"method": "graphify_query", "evidence": "a | r | b"},
        }
    ]  # fmt: skip
    trace["early_exit"] = True
    return trace


questions = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1).filter(
    lambda q: bool(q.strip())
)


@settings(max_examples=40, deadline=None)
@given(question=questions, mix=st.text(alphabet=BREAKERS, max_size=3))
@example(question="Why\u2028does it\u2029fail?", mix="\x85")
@example(question="a\x85b", mix="")
@example(question="-0 is a dash-led question", mix="")
@example(question='quote " and \\ back\u2028slash', mix="\u2029")
def test_any_question_round_trips_through_memory_history_and_the_loop(
    question: str, mix: str
) -> None:
    question = f"{question[:1]}{mix}{question[1:]}"
    if not question.strip():
        return
    with tempfile.TemporaryDirectory(prefix="unicode-history-") as folder:
        _round_trip(question, Path(folder))


def _round_trip(question: str, root: Path) -> None:
    expected = question.strip()
    out_dir = root / "graphify-out"
    graphify_ingest.save_query_result(question, "answer", out_dir / "memory")
    project = ("--project-root", str(root))

    code, out = _run("history", "sync-memory", *project)
    assert code == 0
    assert "Added: 1" in out
    history = out_dir / ".deeprefine" / "history.jsonl"
    assert [r["query"] for r in _rows(history)] == [expected]

    code, out = _run("history", "list", "--pending", *project)
    assert code == 0
    # printed terminal-safe (C1 controls, bidi and line separators shown escaped); the
    # stored query above is the exact text
    assert f"[pending] {query_id(expected)}: {printable(expected)}\n" in out

    # `--query=VALUE`: a question may start with "-" (argparse would read it as an option)
    code, _ = _run("loop", "init", f"--query={question}", *project)
    assert code == 0
    trace_file = out_dir / ".deeprefine" / f"loop_trace_{query_id(expected)}.json"
    assert json.loads(trace_file.read_text(encoding="utf-8"))["query"] == expected

    trace_file.write_text(json.dumps(_answered_trace(question), ensure_ascii=False), "utf-8")
    code, out = _run("loop", "finish", "--trace-file", str(trace_file), *project)
    assert code == 0, out
    rows = _rows(history)
    assert [(r["query"], r["refined"]) for r in rows] == [(expected, True)]
    results = next((out_dir / ".deeprefine").glob("refinement_results_*.jsonl"))
    assert [r["query"] for r in _rows(results)] == [expected]

    code, out = _run("history", "sync-memory", *project)  # nothing new: same id
    assert "Added: 0" in out
    code, out = _run("history", "list", *project)
    assert out == f"[refined] {query_id(expected)}: {printable(expected)}\n"
