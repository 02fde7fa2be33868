"""Small-model mode of the loop: the model chooses, the code checks.

A 270M model cannot be trusted to write `<abduction>` prose or the action grammar, but it can
pick from lists. In this mode abduction and refinement are asked as JSON whose every string
is an enum the code built from what was actually retrieved:

- abduction: one of the skill's three perspectives (incompleteness, incorrectness,
  redundancy) and one retrieved node; the code writes the `<abduction>` sentence;
- refinement: up to `SMALL_MAX_ACTIONS` actions, each an `insert_edge` on a candidate pair
  with a relation from the graph, or a `delete_edge` of a retrieved link that graphify did
  not extract from the AST. Candidate pairs are two retrieved nodes that are NOT linked yet
  (a second link on a linked pair is refused by review, R6), those with a common neighbour
  first (a missing shortcut), oriented along a stored path when there is one. Node names
  are ones the shared resolver maps to exactly that node (the label, else
  `source_file::label`, else the id) and hold no `"` or `\\`; docstring (`rationale`) nodes
  are left out. `replace_node` needs a new name the code cannot check, so it is not
  offered. The code renders the chosen actions with the action grammar
  (`render_refinement`), dropping repeats.

llama.cpp turns the schema into a grammar, so on the embedded backend decoding can only
produce these choices; on any other backend the schema is enforced like every other one.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

from ._actions import Action, render_refinement
from ._graph import Graph
from ._retrieval import Triple

__all__ = [
    "PERSPECTIVES",
    "SMALL_MAX_ACTIONS",
    "Choices",
    "abduction_schema",
    "build_choices",
    "parse_abduction_choice",
    "parse_refinement_choice",
    "refinement_schema",
]

PERSPECTIVES: Final = ("incompleteness", "incorrectness", "redundancy")
#: relations review can find code evidence for (R9); offered besides the retrieved ones
CODE_RELATIONS: Final = ("calls", "uses", "imports", "contains", "method", "inherits")
#: a small model's list is short; the skill's cap (10) still bounds the file
SMALL_MAX_ACTIONS: Final = 3
_MAX_RELATIONS: Final = 12
_MAX_PAIRS: Final = 20

ABDUCTION_HINT: Final = (
    "Choose the perspective that best explains why the question was not answerable, and the "
    "entity of the interaction history it concerns."
)
REFINEMENT_HINT: Final = (
    "Choose up to {n} actions from the lists: insert_edge adds a link with a relation between "
    "two retrieved nodes that are not linked yet (pair), delete_edge removes a retrieved link."
)

_REASONS: Final = {
    "incompleteness": "a link the question needs is missing around {entity}",
    "incorrectness": "a link or a name around {entity} is wrong",
    "redundancy": "links around {entity} that do not help the question crowd the subgraph",
}


@dataclass(frozen=True)
class Choices:
    """What the model may choose from: node names (name -> node id, in retrieval order),
    relations, candidate pairs (`"s -> o"` -> (s name, o name)) and deletable links
    (`"s | r | o"` -> (s name, r, o name))."""

    names: dict[str, str]
    relations: tuple[str, ...]
    pairs: dict[str, tuple[str, str]]
    deletable: dict[str, tuple[str, str, str]]

    @property
    def empty(self) -> bool:
        """Nothing to propose: no entity to blame, or no unlinked pair and no deletable
        link."""
        return not self.names or (not self.pairs and not self.deletable)


def _grammar_safe(text: str) -> bool:
    """Whether *text* can be an enum value: llama-cpp-python 0.3's JSON-schema converter
    mis-escapes `"` and `\\` inside enum strings, and the broken grammar crashes llama.cpp."""
    return bool(text) and not any(c in '"\\' or ord(c) < 0x20 for c in text)


def _name(graph: Graph, node_id: str) -> str | None:
    """The shortest name that resolves to exactly this node and is safe in a grammar."""
    label = graph.label(node_id)
    for name in (label, graph.qualified(node_id), node_id):
        if _grammar_safe(name) and graph.resolve(name).unique == node_id:
            return name
    return None


def _neighbours(graph: Graph, node_id: str) -> tuple[set[str], set[str]]:
    """(targets of links from node_id, sources of links to node_id)."""
    out, into = set(), set()
    for i in graph.adjacent(node_id):
        link = graph.links[i]
        if link["source"] == node_id:
            out.add(link["target"])
        if link["target"] == node_id:
            into.add(link["source"])
    return out, into


def _pairs(graph: Graph, ids: list[str], limit: int) -> list[tuple[str, str]]:
    """Unlinked pairs of *ids*: pairs with a common neighbour first (oriented a -> c along a
    stored a -> b -> c path when there is one), then the rest in retrieval order."""
    near: dict[str, tuple[set[str], set[str]]] = {i: _neighbours(graph, i) for i in ids}
    shortcut: list[tuple[str, str]] = []
    other: list[tuple[str, str]] = []
    for k, a in enumerate(ids):
        for c in ids[k + 1 :]:
            if graph.links_between(a, c):
                continue
            (a_out, a_in), (c_out, c_in) = near[a], near[c]
            if a_out & c_in:
                shortcut.append((a, c))
            elif c_out & a_in:
                shortcut.append((c, a))
            elif (a_out | a_in) & (c_out | c_in):
                shortcut.append((a, c))
            else:
                other.append((a, c))
    return (shortcut + other)[:limit]


def build_choices(graph: Graph, history: list[list[Triple]], last: list[Triple]) -> Choices:
    """The enums for one question: nodes of every hop (the last hop's first), relations of
    the last hop then `CODE_RELATIONS` then the graph's by frequency, unlinked pairs of the
    last hop's nodes, and the last hop's links whose `confidence` is not EXTRACTED."""
    names: dict[str, str] = {}
    seen: set[str] = set()
    for triples in (last, *reversed(history)):
        for t in triples:
            for node_id in (t.subject_id, t.object_id):
                if node_id in seen:
                    continue
                seen.add(node_id)
                name = _name(graph, node_id)
                # docstring (`rationale`) nodes are neither an entity nor an endpoint
                if name is not None and graph.nodes[node_id].get("file_type") != "rationale":
                    names[name] = node_id
    counts = Counter(str(link["relation"]) for link in graph.links)
    relations = list(dict.fromkeys(t.relation for t in last if _grammar_safe(t.relation)))
    for relation in [*CODE_RELATIONS, *(r for r, _ in counts.most_common())]:
        if len(relations) >= _MAX_RELATIONS:
            break
        if relation not in relations and _grammar_safe(relation):
            relations.append(relation)
    by_id = {node_id: name for name, node_id in names.items()}
    last_ids = [
        i for i in dict.fromkeys(i for t in last for i in (t.subject_id, t.object_id)) if i in by_id
    ]
    pairs = {
        f"{by_id[a]} -> {by_id[c]}": (by_id[a], by_id[c])
        for a, c in _pairs(graph, last_ids, _MAX_PAIRS)
    }
    deletable: dict[str, tuple[str, str, str]] = {}
    for t in last:
        extracted = any(
            link.get("confidence") == "EXTRACTED"
            for link in graph.links_between(t.subject_id, t.object_id)
            if link["source"] == t.subject_id and link["relation"] == t.relation
        )
        ends = t.subject_id in by_id and t.object_id in by_id and _grammar_safe(t.relation)
        if not extracted and ends:
            s, o = by_id[t.subject_id], by_id[t.object_id]
            deletable[f"{s} | {t.relation} | {o}"] = (s, t.relation, o)
    return Choices(names, tuple(relations), pairs, deletable)


def abduction_schema(choices: Choices) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "perspective": {"enum": list(PERSPECTIVES)},
            "entity": {"enum": list(choices.names)},
        },
        "required": ["perspective", "entity"],
        "additionalProperties": False,
    }


def refinement_schema(choices: Choices, max_actions: int = SMALL_MAX_ACTIONS) -> dict[str, Any]:
    """The JSON schema of a refinement answer; `choices` must not be `empty`."""
    alternatives: list[dict[str, Any]] = []
    if choices.pairs:
        alternatives.append(
            {
                "type": "object",
                "properties": {
                    "action": {"const": "insert_edge"},
                    "pair": {"enum": list(choices.pairs)},
                    "relation": {"enum": list(choices.relations)},
                },
                "required": ["action", "pair", "relation"],
                "additionalProperties": False,
            }
        )
    if choices.deletable:
        alternatives.append(
            {
                "type": "object",
                "properties": {
                    "action": {"const": "delete_edge"},
                    "link": {"enum": list(choices.deletable)},
                },
                "required": ["action", "link"],
                "additionalProperties": False,
            }
        )
    items = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    return {
        "type": "object",
        "properties": {
            "actions": {"type": "array", "items": items, "minItems": 1, "maxItems": max_actions}
        },
        "required": ["actions"],
        "additionalProperties": False,
    }


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def parse_abduction_choice(text: str, choices: Choices) -> str | None:
    """The `<abduction>` reason for a chosen `{"perspective", "entity"}`, or None."""
    value = _json(text)
    if not isinstance(value, dict):
        return None
    perspective, entity = value.get("perspective"), value.get("entity")
    if perspective not in _REASONS or entity not in choices.names:
        return None
    return f"{perspective}: " + _REASONS[perspective].format(entity=entity)


def parse_refinement_choice(text: str, choices: Choices) -> str | None:
    """The `<refinement>` text for chosen actions (repeats dropped, and a second insert on a
    pair already chosen: the grammar cannot say "each pair once", and graphify keeps one
    link per pair, review's R6), or None when no usable action was chosen."""
    value = _json(text)
    items = value.get("actions") if isinstance(value, dict) else None
    if not isinstance(items, list):
        return None
    actions: list[Action] = []
    chosen: set[str] = set()  # candidate pairs already inserted on
    for item in items:
        if not isinstance(item, dict):
            continue
        action: Action | None = None
        pair, relation, link = item.get("pair"), item.get("relation"), item.get("link")
        if item.get("action") == "insert_edge" and pair in choices.pairs:
            if relation in choices.relations and pair not in chosen:
                chosen.add(str(pair))
                s, o = choices.pairs[str(pair)]
                action = Action("insert_edge", (s, str(relation), o))
        elif item.get("action") == "delete_edge" and link in choices.deletable:
            action = Action("delete_edge", choices.deletable[str(link)])
        if action is not None and action not in actions:
            actions.append(action)
    return render_refinement(actions) if actions else None
