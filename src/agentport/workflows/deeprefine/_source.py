"""What the DeepRefine loop reads of a graph, as a seam: `GraphSource`.

The loop reads a graph in three ways (hop-1 match, k-hop expansion, the refinement prompt's
source-file hints), so it takes any object doing those three. In one process that is
`InMemoryGraph` over a loaded `Graph`. On Temporal the graph stays on the workers' disk
and each read is an activity (`agentport.temporal`): workflow history carries the
triples a hop kept, never graph.json (a 20 MB graph cannot be a 2 MB payload).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from ._graph import Graph
from ._retrieval import Triple, expand, match_question, source_hints

__all__ = ["GraphSource", "InMemoryGraph", "triple_from_row", "triple_row"]


@runtime_checkable
class GraphSource(Protocol):
    """The graph reads of one loop. `path` names graph.json in messages; `graph` is the
    loaded `Graph` when this process holds it (the embedded-model tail needs it), else None."""

    @property
    def path(self) -> Path: ...

    @property
    def graph(self) -> Graph | None: ...

    async def match(self, question: str, cap: int) -> tuple[list[Triple], str]:
        """Hop 1: `match_question`'s triples (at most *cap*) and evidence text."""
        ...

    async def expand(
        self, question: str, previous: list[Triple], cap: int
    ) -> tuple[list[Triple], str]:
        """Hop k >= 2 from *previous*: `expand`'s triples and evidence text."""
        ...

    async def source_hints(self, triples: list[Triple]) -> str:
        """The refinement prompt's `original_text` for *triples* (`source_hints`)."""
        ...


@dataclass(frozen=True)
class InMemoryGraph:
    """`GraphSource` over a `Graph` this process loaded."""

    loaded: Graph

    @property
    def path(self) -> Path:
        return self.loaded.path

    @property
    def graph(self) -> Graph | None:
        return self.loaded

    async def match(self, question: str, cap: int) -> tuple[list[Triple], str]:
        return match_question(self.loaded, question, cap)

    async def expand(
        self, question: str, previous: list[Triple], cap: int
    ) -> tuple[list[Triple], str]:
        return expand(self.loaded, question, previous, cap)

    async def source_hints(self, triples: list[Triple]) -> str:
        return source_hints(self.loaded, triples)


def triple_row(triple: Triple) -> list[str]:
    """*triple* as five strings (subject id, relation, object id, subject, object): the
    form a triple crosses a wire in."""
    return [triple.subject_id, triple.relation, triple.object_id, triple.subject, triple.object]


def triple_from_row(row: list[str]) -> Triple:
    """`triple_row`'s inverse; `ValueError` unless *row* is five strings."""
    if len(row) != 5 or not all(isinstance(v, str) for v in row):
        raise ValueError(f"a triple is five strings, got {row!r}")
    return Triple(*row)
