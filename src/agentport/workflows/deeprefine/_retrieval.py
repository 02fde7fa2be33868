"""Retrieval over graph.json: hop 1 keyword match, hops 2+ k-hop expansion.

Seed "Control flow": step 1 is the `graphify query` equivalent on the whole question, capped
at `MAX_TRIPLE_NUM_BY_STEP[0]`; step k >= 2 expands one hop from the entities of step k-1
(not a new search), capped at `MAX_TRIPLE_NUM_BY_STEP[k-1]`. agentport reads graph.json in
process instead of parsing `graphify query` output, whose truncated answers carry no EDGE
lines and whose labels are ambiguous (reference F-22); triples keep node ids and the stored
link direction, and render as `subject | relation | object`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ._constants import MAX_TRIPLE_NUM_BY_STEP
from ._graph import Graph, graphify_norm

__all__ = [
    "Triple",
    "expand",
    "match_question",
    "question_terms",
    "render_triples",
    "source_hints",
    "step_cap",
    "uncovered_terms",
]

_WORD = re.compile(r"\w+")
_STOP_WORDS = (
    "a an and are as at be by can do does for from how in is it its of on or the that this "
    "to what when where which who why with did into via use used using"
)
_STOP = frozenset(_STOP_WORDS.split(" "))


@dataclass(frozen=True, slots=True)
class Triple:
    """One link of the graph as a triple: node ids (internal) and labels (shown)."""

    subject_id: str
    relation: str
    object_id: str
    subject: str
    object: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.subject_id, self.relation, self.object_id)

    def line(self) -> str:
        return f"{self.subject} | {self.relation} | {self.object}"

    def as_trace(self) -> dict[str, str]:
        """Trace form: the reference's three keys plus the ids (extra keys are ignored there)."""
        return {
            "subject": self.subject,
            "relation": self.relation,
            "object": self.object,
            "subject_id": self.subject_id,
            "object_id": self.object_id,
        }


def step_cap(step: int) -> int:
    """`MAX_TRIPLE_NUM_BY_STEP[step-1]`, the last value repeating."""
    return MAX_TRIPLE_NUM_BY_STEP[min(step, len(MAX_TRIPLE_NUM_BY_STEP)) - 1]


def render_triples(triples: Iterable[Triple]) -> str:
    """The skill's `{triples_string}`: one `subject | relation | object` per line."""
    return "\n".join(t.line() for t in triples)


def question_terms(question: str) -> list[str]:
    words = [w for w in _WORD.findall(graphify_norm(question)) if len(w) > 1]
    kept = [w for w in words if w not in _STOP]
    return list(dict.fromkeys(kept or words))


def _label_words(label: str) -> list[str]:
    # split snake_case and CamelCase so "create_llm_adapter()" matches "adapter"
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", label)
    return [w for w in _WORD.findall(graphify_norm(spaced).replace("_", " ")) if w]


def _compact(text: str) -> str:
    return "".join(c for c in graphify_norm(text) if c.isalnum())


def uncovered_terms(question: str, triples: Iterable[Triple]) -> list[str]:
    """The question's content terms (`question_terms`) that no triple mentions: a term is
    mentioned when it is in a label or relation once both are lower-cased and stripped of
    everything but letters and digits (`with_retry` in `with_retry()`, `providererror` in
    `ProviderError`), or when a word of a label starts with its first five letters
    (`parameter` / `params`, `default` / `defaults`)."""
    texts: list[str] = []
    words: set[str] = set()
    for t in triples:
        for text in (t.subject, t.relation, t.object):
            texts.append(_compact(text))
            words.update(_label_words(text))
    missing = []
    for term in question_terms(question):
        compact = _compact(term)
        if not compact or any(compact in text for text in texts):
            continue
        if len(term) >= 5 and any(w.startswith(term[:5]) for w in words):
            continue
        missing.append(term)
    return missing


def _score(graph: Graph, node_id: str, terms: list[str], whole: str) -> float:
    node = graph.nodes[node_id]
    label = str(node["label"])
    norm = graphify_norm(label).strip("().")
    if norm and norm == whole:
        return 10000.0
    words = _label_words(label)
    compact = norm.replace("_", "")
    source = str(node.get("source_file") or "").lower()
    score = 0.0
    for term in terms:
        if term in (norm, compact):
            score += 100.0
        elif term in words:
            score += 10.0
        elif any(w.startswith(term) for w in words):
            score += 3.0
        elif term in norm:
            score += 1.0
        if term in source:
            score += 0.5
    if node.get("file_type") == "rationale":
        score *= 0.5  # docstring nodes echo words; prefer code entities
    return score


def _triple(graph: Graph, index: int) -> Triple:
    link = graph.links[index]
    return Triple(
        link["source"],
        link["relation"],
        link["target"],
        graph.label(link["source"]),
        graph.label(link["target"]),
    )


def _rank_links(
    graph: Graph, indexes: Iterable[int], weight: dict[str, float], cap: int
) -> list[Triple]:
    scored: dict[tuple[str, str, str], tuple[float, int, Triple]] = {}
    for i in indexes:
        triple = _triple(graph, i)
        rank = weight.get(triple.subject_id, 0.0) + weight.get(triple.object_id, 0.0)
        if triple.key not in scored:
            scored[triple.key] = (-rank, i, triple)
    ordered = sorted(scored.values(), key=lambda x: (x[0], x[1]))
    return [t for _, _, t in ordered[:cap]]


def match_question(graph: Graph, question: str, cap: int) -> tuple[list[Triple], str]:
    """Hop 1: score nodes on label words, normalised labels and source paths; take up to three
    seeds (within 20 % of the best, like graphify) and their best-ranked links.

    Returns the triples (at most `cap`, deduplicated) and an evidence excerpt.
    """
    terms = question_terms(question)
    whole = graphify_norm(question.strip()).strip("().")
    scores = {n: _score(graph, n, terms, whole) for n in graph.nodes}
    ranked = sorted(
        (n for n, s in scores.items() if s > 0),
        key=lambda n: (-scores[n], -len(graph.adjacent(n)), n),
    )
    seeds: list[str] = []
    for node_id in ranked:
        if len(seeds) == 3 or scores[node_id] < 0.2 * scores[ranked[0]]:
            break
        if graph.adjacent(node_id):
            seeds.append(node_id)
    weight = {n: s for n, s in scores.items() if s > 0}
    for seed in seeds:
        weight[seed] = weight.get(seed, 0.0) + 1000.0
    candidates = [i for seed in seeds for i in graph.adjacent(seed)]
    # round-robin over the seeds so one hub cannot crowd out the others
    per_seed = [_rank_links(graph, graph.adjacent(seed), weight, cap) for seed in seeds]
    triples: list[Triple] = []
    seen: set[tuple[str, str, str]] = set()
    for rank in range(cap):
        for ranked_links in per_seed:
            if rank < len(ranked_links) and ranked_links[rank].key not in seen:
                seen.add(ranked_links[rank].key)
                triples.append(ranked_links[rank])
    triples = triples[:cap]
    evidence = (
        f"graph.json keyword match (graphify query equivalent): terms {terms}; start "
        f"{[graph.label(s) for s in seeds]}; {len(set(candidates))} links; kept {len(triples)}\n"
        + render_triples(triples)
    )
    return triples, evidence


def expand(
    graph: Graph, question: str, previous: list[Triple], cap: int
) -> tuple[list[Triple], str]:
    """Hop k >= 2: every link touching an entity of the previous hop (one hop, either
    direction), ranked by the question's terms on the endpoints, deduplicated, capped."""
    entities = list(dict.fromkeys(e for t in previous for e in (t.subject_id, t.object_id)))
    terms = question_terms(question)
    whole = graphify_norm(question.strip()).strip("().")
    weight: dict[str, float] = {}
    candidates: list[int] = []
    for entity in entities:
        candidates.extend(graph.adjacent(entity))
    for i in candidates:
        link = graph.links[i]
        for end in (link["source"], link["target"]):
            if end not in weight:
                weight[end] = _score(graph, end, terms, whole) + (50.0 if end in entities else 0.0)
    triples = _rank_links(graph, candidates, weight, cap)
    evidence = (
        f"k-hop expansion in graph.json from {len(entities)} entities of the previous hop; "
        f"{len(set(candidates))} links; kept {len(triples)}\n" + render_triples(triples)
    )
    return triples, evidence


def source_hints(graph: Graph, triples: list[Triple]) -> str:
    """Source-file hints for the refinement prompt (the skill: "source file hints from triples"):
    `file: label, label` per file, so the model can write file-qualified names; `[]` when
    none. A node the graph no longer holds (changed since the hop) gives no hint."""
    files: dict[str, list[str]] = {}
    for t in triples:
        for node_id in (t.subject_id, t.object_id):
            node = graph.nodes.get(node_id)
            source = str(node.get("source_file") or "") if node else ""
            if node and source and node["label"] not in files.setdefault(source, []):
                files[source].append(str(node["label"]))
    return "; ".join(f"{f}: {', '.join(labels)}" for f, labels in files.items()) or "[]"
