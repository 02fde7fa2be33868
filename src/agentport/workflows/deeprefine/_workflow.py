"""Loop artefacts on disk and `loop finish`."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from ...core import bounded, redact
from ._files import (
    InputError,
    Layout,
    append_text,
    atomic_write,
    ensure_state,
    graph_lock,
    read_bytes,
)
from ._history import jsonl_line, jsonl_lines, mark_refined
from ._loop import LoopResult
from ._trace import check_query_id, load_trace, query_id, refinement_path, validate_trace

__all__ = ["dump_trace", "finish", "partial_trace_path", "save_loop", "save_partial"]


def dump_trace(trace: dict[str, Any]) -> bytes:
    """The trace as UTF-8 JSON, secrets redacted (a model may echo a key into its answer)."""
    return redact(json.dumps(trace, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def partial_trace_path(layout: Layout, query_id: str) -> Path:
    """`loop_trace_<id>.partial.json`: beside the regular trace, so a complete trace of an
    earlier run is never overwritten by a partial one, and `loop validate` / `finish` /
    `apply` never take it for a finished loop."""
    return layout.state / f"loop_trace_{check_query_id(query_id, 'trace')}.partial.json"


def save_partial(layout: Layout, result: LoopResult) -> Path:
    """Write the trace of a loop its budget stopped (`LoopResult.budget_reached`: the steps
    it finished), atomically; no action file, nothing applied. Returns its path."""
    ensure_state(layout.state)
    path = partial_trace_path(layout, result.query_id)
    atomic_write(path, dump_trace(result.trace), mode=layout.graph_mode())
    return path


def save_loop(layout: Layout, result: LoopResult) -> tuple[Path, Path | None]:
    """Write `loop_trace_<id>.json` and, on the refinement path,
    `refinement_actions_<id>.txt` (named in the trace, root-relative). Atomic writes. A loop
    its budget stopped writes only its partial trace (`save_partial`), no actions."""
    if result.budget_reached is not None:
        return save_partial(layout, result), None
    qid = check_query_id(result.query_id, "trace")
    trace_path = layout.trace_path(qid)
    actions: Path | None = None
    ensure_state(layout.state)
    mode = layout.graph_mode()
    if not result.early_exit:
        actions = layout.actions_path(qid)
        atomic_write(actions, result.refinement_text().encode("utf-8"), mode=mode)
        result.trace["refinement_action_file"] = str(actions.relative_to(layout.root))
    atomic_write(trace_path, dump_trace(result.trace), mode=mode)
    return trace_path, actions


def _applied(layout: Layout, text: str) -> bool:
    log = layout.state / "apply_log.jsonl"
    if not log.exists():
        return False
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    for line in jsonl_lines(log.read_bytes()):
        try:
            row = bounded.loads(line, max_depth=32)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and row.get("refinement_sha256") == digest:
            return True
    return False


def finish(layout: Layout, trace_path: Path, refinement_file: Path | None) -> list[str]:
    """`loop finish`: the trace must validate; a refinement-path query must have been applied
    (an `apply` of this exact refinement text is in `apply_log.jsonl`, F-18); then append the
    results log (UTC date, F-21) and mark the query refined. Returns the lines to print;
    raises `InputError` with every problem."""
    trace = load_trace(trace_path)
    errors = validate_trace(trace, trace_path, layout, refinement_file)
    if errors:
        raise InputError(trace_path, "", "trace invalid: " + "; ".join(errors))
    history = trace["interaction_history"]
    early = len(history) <= 1
    text: str | None = None
    if not early:
        chosen = refinement_file or refinement_path(trace, layout, trace_path)
        assert chosen is not None  # validate_trace checked it
        text = read_bytes(chosen).decode("utf-8")
        if not _applied(layout, text):
            raise InputError(
                chosen,
                "",
                "not applied yet; run `deeprefine apply` first (loop finish marks a "
                "query refined only after an apply or an early exit)",
            )
    qid = query_id(trace["query"])
    log = layout.state / f"refinement_results_{time.strftime('%Y%m%d', time.gmtime())}.jsonl"
    row = {
        "query": trace["query"],
        "query_id": qid,
        "interaction_history": history,
        "error_abduction_reason": trace.get("error_abduction_reason"),
        "refinement_action_raw": text,
        "early_exit": early,
        "mode": "agent-loop",
        "trace_file": str(trace_path),
    }
    with graph_lock(layout.state):
        line = redact(jsonl_line(row)) + "\n"
        append_text(log, line, mode=layout.graph_mode())
        mark_refined(layout, qid, trace["query"], str(trace_path))
    return [f"Logged → {log}", f"Marked refined: {qid}"]
