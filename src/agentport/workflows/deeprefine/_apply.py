"""Apply reviewed actions to graph.json: resolve once, by node id, atomically, under a lock.

Sequence (deeprefine-cli 0.2.0's `apply`, with F-01, F-02, F-04, F-05, F-07 fixed): take the
lock; read
graph.json (the pre-image); review against exactly these bytes; refuse when a LOW action is
left and `allow_low` is off; apply each `change` item by the node ids the review resolved;
if nothing changed, leave every file untouched; else write the pre-image to
`.deeprefine/graph.json.bak` and the new graph, both atomically (the backup first, so a kill
between the two leaves the graph at its pre-image). Two refinements at once serialise on the
lock, and the second is reviewed against the first one's result.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core import redact
from ._files import (
    InputError,
    Layout,
    append_text,
    atomic_write,
    ensure_state,
    graph_lock,
    open_input,
)
from ._graph import Graph, dump_graph_text, graphify_norm, load_graph_from
from ._history import jsonl_line
from ._review import Review, ReviewContext, ReviewItem, review

__all__ = ["ApplyReport", "apply_refinement", "apply_reviewed", "new_link"]


@dataclass
class ApplyReport:
    """What happened: the review, one `(item, outcome, reason)` per action (outcome
    `applied`, `skipped` or `rejected`), whether graph.json was written, and refusal."""

    review: Review
    outcomes: list[tuple[ReviewItem, str, str]] = field(default_factory=list)
    written: bool = False
    refused: bool = False
    graph_path: Path | None = None
    backup_path: Path | None = None

    @property
    def applied(self) -> int:
        return sum(1 for _, outcome, _ in self.outcomes if outcome == "applied")


def new_link(source: str, target: str, relation: str) -> dict[str, Any]:
    """A link in graphify's key order; provenance marks it as DeepRefine's (reference 2.9)."""
    return {
        "source": source,
        "target": target,
        "relation": relation,
        "confidence": "INFERRED",
        "confidence_score": 0.9,
        "source_file": "deeprefine",
        "source_location": "agent-loop",
        "weight": 1.0,
    }


def _relabel(node: dict[str, Any], new: str) -> dict[str, Any]:
    old = node["label"]
    aliases = list(node.get("aliases") or [])
    if old not in aliases:
        aliases.append(old)
    updated = {**node, "label": new, "aliases": aliases}
    if "norm_label" in node:
        updated["norm_label"] = graphify_norm(new)
    head = {"id": updated.pop("id"), "label": updated.pop("label")}
    return {**head, **dict(sorted(updated.items()))}


def apply_reviewed(graph: Graph, reviewed: Review, allow_low: bool) -> ApplyReport:
    """Apply `reviewed` to `graph.raw` in memory (no I/O). Ambiguous and rejected items are
    never applied; LOW items only with `allow_low` (else the whole apply is refused)."""
    report = ApplyReport(reviewed)
    if reviewed.low and not allow_low:
        report.refused = True
        return report
    links = graph.links
    changed = False
    for item in reviewed.items:
        if item.effect == "reject":
            report.outcomes.append((item, "rejected", (item.warnings or ["rejected"])[0]))
            continue
        if item.effect == "skip":
            report.outcomes.append((item, "skipped", (item.reasons or ["no-op"])[0]))
            continue
        assert item.action is not None
        name = item.action.name
        if name == "insert_edge":
            s, o = item.ids[0], item.ids[2]
            assert s is not None
            assert o is not None
            relation = item.action.args[1]
            if graph.has_link(s, relation, o):
                report.outcomes.append((item, "skipped", "edge already exists"))
                continue
            if graph.links_between(s, o):  # never a second link on a pair (review's R6)
                report.outcomes.append((item, "rejected", "R6 the pair is already linked"))
                continue
            links.append(new_link(s, o, relation))
            graph._adjacent = None
        elif name == "delete_edge":
            s, o = item.ids[0], item.ids[2]
            relation = item.action.args[1]
            keep = [
                link
                for link in links
                if not (
                    link["source"] == s and link["target"] == o and link["relation"] == relation
                )
            ]
            if len(keep) == len(links):
                report.outcomes.append((item, "skipped", "edge no longer exists"))
                continue
            links[:] = keep
            graph._adjacent = None
        else:
            old = item.ids[0]
            assert old is not None
            nodes = graph.raw["nodes"]
            index = next(i for i, n in enumerate(nodes) if n["id"] == old)
            nodes[index] = _relabel(nodes[index], item.action.args[1])
            graph.reindex()
        changed = True
        report.outcomes.append((item, "applied", ""))
    report.written = changed
    return report


def apply_refinement(
    layout: Layout,
    text: str,
    *,
    graph_path: Path | None = None,
    trace: dict[str, Any] | None = None,
    allow_low: bool = False,
    refinement_file: Path | None = None,
) -> ApplyReport:
    """Review and apply under the lock, writing atomically with an exact pre-image backup.

    Raises `InputError` for a bad graph.json; everything else is in the report.
    """
    path = graph_path or layout.graph
    with graph_lock(layout.state), open_input(path) as source:
        graph = load_graph_from(source, path)
        ctx = ReviewContext.from_trace(trace, graph, layout.root)
        report = apply_reviewed(graph, review(text, graph, ctx), allow_low)
        report.graph_path = path
        if report.written:
            # the open handle still reads the exact bytes parsed above (same inode); the
            # backup and the new graph keep the graph's mode (a 0600 graph stays private)
            mode = stat.S_IMODE(os.fstat(source.fileno()).st_mode)
            try:
                new_graph = dump_graph_text(graph.raw)
            except RecursionError:  # parsed, but too deep to write back
                raise InputError(path, "", "nested too deeply to rewrite; not modified") from None
            atomic_write(layout.backup, source, mode=mode)
            atomic_write(path, new_graph, mode=mode)
            report.backup_path = layout.backup
        if not report.refused:
            _log(layout, text, trace, report, refinement_file)
    return report


def _log(
    layout: Layout,
    text: str,
    trace: dict[str, Any] | None,
    report: ApplyReport,
    refinement_file: Path | None,
) -> None:
    """Append to `.deeprefine/apply_log.jsonl` (what `loop finish` checks for an apply)."""
    row = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "query_id": (trace or {}).get("query_id"),
        "refinement_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "refinement_file": str(refinement_file) if refinement_file else None,
        "applied": report.applied,
        "written": report.written,
        "outcomes": [[item.text, outcome, reason] for item, outcome, reason in report.outcomes],
    }
    ensure_state(layout.state)
    line = redact(jsonl_line(row)) + "\n"
    append_text(layout.state / "apply_log.jsonl", line, mode=layout.graph_mode())
