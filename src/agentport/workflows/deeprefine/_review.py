"""Evidence-aware review: every action gets HIGH / MEDIUM / LOW and a planned effect.

Rules, evaluated in this order (codes appear in evidence/warning lines; docs/deeprefine.md):

R1 grammar   — unparsable, unknown action, wrong arity, duplicate, over the 10-action cap:
               LOW, effect `reject`.
R2 grounding — every endpoint (insert/delete: subject and object; replace: old) must resolve
               to exactly one node with the shared resolver (`Graph.resolve`); no match: LOW,
               `reject` (agentport never creates a node implicitly, F-05).
R3 ambiguity — a bare skill-listed name (main, run, train, test, setup; with or without `()`): LOW;
               several matches: LOW and `reject` (never bound to "the first", F-07). Both
               list file-qualified suggestions ranked by hop distance to the question's
               subgraph, then same community, then file and label.
R4 relabel   — replace_node: a `path::` new name, or a new name that is another node's label:
               `reject` (F-09); the same label: `skip`.
R5 self-loop — insert_edge from a node to itself: LOW.
R6 existing  — insert_edge of an existing (s, r, o): `skip` (no-op, MEDIUM); a link already on
               the same node pair (any relation or direction), in graph.json or from an
               earlier insert of the same action set: LOW and `reject`, even with
               --allow-low-confidence: graphify's undirected simple graph collapses parallel
               links and `graphify update` keeps one (F-06), which would hide an AST link.
R7 delete    — no such (s, r, o) in the stored direction: `reject` (reversed one named);
               deleting an EXTRACTED (AST) link: LOW; a delete needs code evidence that the
               edge is absent (the subject's Python source checked as in R9): the code
               showing it, or a source that cannot tell, gives LOW.
R8 community — endpoints in different communities, not both in the trace's subgraphs: LOW.
R9 code      — insert_edge whose relation is visible in the subject's Python syntax tree
               (`_code`: calls/uses: a call of obj inside the subject, direct or through a
               table, getattr or a callback; imports: an import naming obj;
               method/contains/defines: `def|class obj` inside the subject; inherits: obj
               among the class bases): HIGH. Comments and strings never count.
R10 k-hop    — an endpoint (or the renamed node) is in the trace's retrieved subgraphs:
               MEDIUM; otherwise LOW ("too broad").

Label: R1-R8 warnings give LOW; else R9 gives HIGH; else R10 gives MEDIUM or LOW.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._actions import Action, Rejected, parse_refinement, render_action
from ._code import Sources, can_check, code_evidence, defines_name
from ._graph import Graph, Resolution, name_key

__all__ = ["Review", "ReviewContext", "ReviewItem", "review"]

Confidence = Literal["HIGH", "MEDIUM", "LOW"]
Effect = Literal["change", "skip", "reject"]


@dataclass
class ReviewContext:
    """What the review knows beyond graph.json: the trace's node ids (k-hop context), the
    project root (for source files), the question text."""

    trace_ids: set[str] = field(default_factory=set)
    root: Path | None = None
    question: str = ""

    @classmethod
    def from_trace(
        cls, trace: dict[str, Any] | None, graph: Graph, root: Path | None
    ) -> ReviewContext:
        ids: set[str] = set()
        steps = (trace or {}).get("interaction_history") or []
        for step in steps if isinstance(steps, list) else []:
            triples = step.get("retrieved_subgraph") if isinstance(step, dict) else None
            for t in triples if isinstance(triples, list) else []:
                if not isinstance(t, dict):
                    continue
                for id_key, name_key_ in (("subject_id", "subject"), ("object_id", "object")):
                    node_id = t.get(id_key)
                    if isinstance(node_id, str) and node_id in graph.nodes:
                        ids.add(node_id)
                    elif isinstance(t.get(name_key_), str):
                        unique = graph.resolve(t[name_key_]).unique
                        if unique:
                            ids.add(unique)
        question = (trace or {}).get("query")
        return cls(ids, root, question if isinstance(question, str) else "")


@dataclass
class ReviewItem:
    """One action's review. `ids` holds the resolved node id per argument (None for a new
    name or an unresolved one); apply uses exactly these ids (resolve once, F-07/F-08)."""

    index: int
    text: str
    action: Action | None
    confidence: Confidence = "LOW"
    effect: Effect = "change"
    evidence: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    suggested_replacement: str | None = None
    ids: list[str | None] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.text,
            "confidence": self.confidence,
            "effect": self.effect,
            "evidence": self.evidence,
            "warnings": self.warnings,
            "suggested_replacement": self.suggested_replacement,
            "node_ids": self.ids,
        }


@dataclass
class Review:
    items: list[ReviewItem]

    @property
    def low(self) -> list[ReviewItem]:
        return [i for i in self.items if i.confidence == "LOW"]

    def as_json(self) -> list[dict[str, Any]]:
        return [i.as_json() for i in self.items]

    def markdown(
        self,
        trace_file: str = "<trace>",
        actions_file: str = "<actions>",
        *,
        next_step: bool = True,
    ) -> str:
        """The review as the reference `deeprefine review` prints it; *next_step* False drops
        its closing `deeprefine apply ...` line (for callers that name their own next step)."""
        lines = [f"DeepRefine proposed {len(self.items)} refinement action(s).", ""]
        for item in self.items:
            tag = "" if item.effect == "change" else f" ({item.effect})"
            lines.append(f"[{item.confidence}]{tag} {item.text}")
            for title, entries in (
                ("Evidence", item.evidence),
                ("Warning", item.warnings),
                ("Reason", item.reasons),
            ):
                if entries:
                    lines.append(f"{title}:")
                    lines += [f"- {e}" for e in entries]
            if item.suggested_replacement:
                lines += ["Suggested replacement:", f"- {item.suggested_replacement}"]
            lines.append("")
        if next_step:
            lines.append(
                f"Apply only after review: deeprefine apply --trace-file {trace_file} "
                f"--refinement-file {actions_file}"
            )
        return "\n".join(lines)


def _suggest(graph: Graph, ids: list[str], ctx: ReviewContext, limit: int = 3) -> list[str]:
    dist = graph.distances(ctx.trace_ids) if ctx.trace_ids else {}
    communities = {graph.nodes[i].get("community") for i in ctx.trace_ids if i in graph.nodes}

    def rank(node_id: str) -> tuple[int, int, str, str]:
        node = graph.nodes[node_id]
        return (
            dist.get(node_id, 99),
            0 if node.get("community") in communities else 1,
            str(node.get("source_file") or ""),
            str(node["label"]),
        )

    return [graph.qualified(i) for i in sorted(ids, key=rank)[:limit]]


def _ground(
    graph: Graph, name: str, ctx: ReviewContext, item: ReviewItem
) -> tuple[str | None, str | None]:
    """R2/R3 for one endpoint: (node id or None, suggested replacement name or None)."""
    res: Resolution = graph.resolve(name)
    if not res.ids:
        candidates = graph.suffix_candidates(name)
        if candidates:
            best = _suggest(graph, candidates, ctx)
            item.warnings.append(
                f"R3 ambiguous function name {name!r}: {len(candidates)} qualified candidates: "
                + "; ".join(best)
            )
            item.effect = "reject"
            return None, best[0]
        item.warnings.append(f"R2 {name!r} is not a node of graph.json (nodes are never created)")
        item.effect = "reject"
        return None, None
    files = sorted({str(graph.nodes[i].get("source_file") or "") for i in res.ids})[:3]
    item.evidence.append(f"Node exists: {name} ({', '.join(f for f in files if f) or 'no file'})")
    if len(res.ids) > 1:
        best = _suggest(graph, list(res.ids), ctx)
        item.warnings.append(
            f"R3 ambiguous node name {name!r} matches {len(res.ids)} nodes; candidates: "
            + "; ".join(best)
        )
        item.effect = "reject"
        return None, best[0]
    if res.bare:
        item.warnings.append(f"R3 ambiguous bare node name {name!r}; use a file-qualified name")
        return res.ids[0], graph.qualified(res.ids[0])
    return res.ids[0], None


def _review_edge(
    graph: Graph,
    item: ReviewItem,
    ctx: ReviewContext,
    sources: Sources,
    claimed: dict[frozenset[str], str],
) -> None:
    assert item.action is not None
    s_name, relation, o_name = item.action.args
    s, s_sug = _ground(graph, s_name, ctx, item)
    o, o_sug = _ground(graph, o_name, ctx, item)
    item.ids = [s, None, o]
    if s_sug or o_sug:
        args = (s_sug or s_name, relation, o_sug or o_name)
        item.suggested_replacement = render_action(Action(item.action.name, args))
    if s is None or o is None:
        return
    insert = item.action.name == "insert_edge"
    if insert:
        if s == o:
            item.warnings.append("R5 self-loop: subject and object are the same node")
        if graph.has_link(s, relation, o):
            item.effect = "skip"
            item.reasons.append("R6 exact edge already exists in graph.json; apply skips it")
        elif graph.links_between(s, o):
            # graphify's graphs are undirected and simple: a second link on the pair would
            # hide or overwrite the first (an AST link included), and `graphify update`
            # keeps only one of them (graphify 0.9.96, F-06); no storage keeps both, so refuse
            existing = graph.links_between(s, o)
            rels = sorted({str(link["relation"]) for link in existing})
            extracted = any(link.get("confidence") == "EXTRACTED" for link in existing)
            item.effect = "reject"
            item.warnings.append(
                f"R6 the pair is already linked ({', '.join(rels)}"
                + (", EXTRACTED" if extracted else "")
                + "); graphify's undirected simple graph would hide that link and drop one of "
                "the two on `graphify update`, so a parallel link is refused"
            )
        elif (earlier := claimed.get(frozenset((s, o)))) is not None:
            # the graph as this set would leave it: an earlier insert already links the pair
            item.effect = "reject"
            item.warnings.append(
                f"R6 an earlier action of this set already links the pair ({earlier}); "
                "graphify's undirected simple graph keeps one of two links on a pair, so a "
                "parallel link is refused"
            )
    else:
        exact = [
            link
            for link in graph.links_between(s, o)
            if link["source"] == s and link["target"] == o and link["relation"] == relation
        ]
        if not exact:
            reversed_ = graph.has_link(o, relation, s)
            item.effect = "reject"
            item.warnings.append(
                "R7 no such edge in the stored direction"
                + ("; only the reversed edge exists" if reversed_ else "")
            )
            return
        item.evidence.append("Exact edge exists in graph.json.")
        if any(link.get("confidence") == "EXTRACTED" for link in exact):
            item.warnings.append("R7 deletes an EXTRACTED (AST) edge")
        _delete_evidence(graph, item, sources, s, relation, o)
    c_s, c_o = graph.nodes[s].get("community"), graph.nodes[o].get("community")
    in_trace = {s, o} <= ctx.trace_ids
    if c_s is not None and c_o is not None and c_s != c_o and not in_trace:
        item.warnings.append(f"R8 cross-community ({c_s} vs {c_o}) without k-hop support")
    if insert and s != o:
        code = code_evidence(sources, graph.nodes[s], relation, graph.nodes[o])
        if code:
            item.evidence.append(code)
    if s in ctx.trace_ids or o in ctx.trace_ids:
        item.evidence.append("R10 k-hop context of the trace contains an endpoint")


def _delete_evidence(
    graph: Graph, item: ReviewItem, sources: Sources, s: str, relation: str, o: str
) -> None:
    """R7: a delete needs code evidence that the edge is absent. The subject's source showing
    the edge (`loads()` calling `JSONDecoder`) makes it LOW, and so does a source that cannot
    tell (a relation the code check does not know, no readable Python file)."""
    subject, obj = graph.nodes[s], graph.nodes[o]
    shown = code_evidence(sources, subject, relation, obj)
    if shown is not None:
        where = shown.removeprefix("R9 direct code evidence in ")
        item.warnings.append(
            f"R7 the code shows this edge ({where}): deleting it removes a true link"
        )
    elif can_check(sources, subject, relation, obj):
        item.evidence.append(
            f"R7 code evidence: the subject's source has no {relation} of the object"
        )
    else:
        item.warnings.append("R7 no code evidence that the edge is absent (the code cannot tell)")


def _review_replace(graph: Graph, item: ReviewItem, ctx: ReviewContext, sources: Sources) -> None:
    assert item.action is not None
    old_name, new_name = item.action.args
    old, sug = _ground(graph, old_name, ctx, item)
    item.ids = [old, None]
    if sug:
        item.suggested_replacement = render_action(Action("replace_node", (sug, new_name)))
    if old is None:
        return
    if "::" in new_name:
        item.effect = "reject"
        item.warnings.append("R4 a qualified name is lookup-only, not a label")
        return
    others = [i for i in graph.resolve(new_name).ids if i != old]
    if graph.resolve(new_name).how == "id" and new_name != old:
        others = [new_name]
    if others:
        item.effect = "reject"
        item.warnings.append(
            f"R4 {new_name!r} is already the label of {graph.qualified(others[0])}; "
            "relabelling would duplicate it"
        )
        return
    if name_key(str(graph.nodes[old]["label"])) == name_key(new_name):
        item.effect = "skip"
        item.reasons.append("R4 the node already has this label")
        return
    if defines_name(sources, str(graph.nodes[old].get("source_file") or ""), new_name):
        item.evidence.append("R9 direct code evidence: the new name is defined in the node's file")
    if old in ctx.trace_ids:
        item.evidence.append("R10 k-hop context of the trace contains the node")


def _label(item: ReviewItem) -> Confidence:
    if item.effect == "reject" or item.warnings:
        return "LOW"
    if item.effect == "skip":
        return "MEDIUM"
    if any(e.startswith("R9") for e in item.evidence):
        return "HIGH"
    if any(e.startswith("R10") for e in item.evidence):
        return "MEDIUM"
    item.warnings.append("R10 no k-hop or code evidence for this action (too broad)")
    return "LOW"


def review(text: str, graph: Graph, ctx: ReviewContext | None = None) -> Review:
    """Review a refinement text against `graph` (pure apart from reading source files under
    `ctx.root`). Deterministic: same graph, text and context give the same review."""
    ctx = ctx or ReviewContext()
    sources = Sources(ctx.root)
    items: list[ReviewItem] = []
    # unordered node pair -> the insert of this set that may link it (graphify's graph is
    # undirected): a later insert on the pair is checked against it as against graph.json
    claimed: dict[frozenset[str], str] = {}
    for index, parsed in enumerate(parse_refinement(text).items):
        if isinstance(parsed, Rejected):
            item = ReviewItem(index, parsed.text, None, effect="reject")
            item.warnings.append(f"R1 rejected: {parsed.reason}")
        else:
            item = ReviewItem(index, render_action(parsed), parsed)
            if parsed.name == "replace_node":
                _review_replace(graph, item, ctx, sources)
            else:
                _review_edge(graph, item, ctx, sources, claimed)
        item.confidence = _label(item)
        if parsed_insert(item) and item.effect == "change":
            s, _, o = item.ids
            assert s is not None
            assert o is not None
            claimed.setdefault(frozenset((s, o)), item.text)
        items.append(item)
    return Review(items)


def parsed_insert(item: ReviewItem) -> bool:
    """Whether *item* is an `insert_edge` whose two endpoints resolved."""
    return (
        item.action is not None
        and item.action.name == "insert_edge"
        and len(item.ids) == 3
        and item.ids[0] is not None
        and item.ids[2] is not None
    )


def review_json(r: Review) -> str:
    return json.dumps(r.as_json(), indent=2, ensure_ascii=False)
