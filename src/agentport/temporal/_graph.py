"""graph.json by reference: the DeepRefine loop's graph reads as one activity.

A refine question on Temporal never carries graph.json in a payload (Temporal refuses a
payload over 2 MB, and a real graphify graph of a mid-size repository is 4 to 20 MB). The
workflow sends the graph's path (under the worker's `--root`s) and what to read; the worker
serving the workflow queue parses the file once and keeps it (`Parsed`: keyed by path and
the file's size, mtime and inode, so an applied refinement is read again), and answers with
the few triples a hop keeps. History per question is then the triples and prompts, not the
graph. Each hop reads graph.json as it is at that hop, as review does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import Field
from temporalio import activity
from temporalio.common import RawValue

from ..workflows.deeprefine import (
    Graph,
    InputError,
    expand,
    load_graph,
    match_question,
    source_hints,
    triple_from_row,
    triple_row,
)
from ._batch import _in_thread, _inside
from ._inputs import Closed, PathText, parse

__all__ = ["GRAPH_OPS", "GraphRead", "GraphReadResult", "Parsed", "file_stamp", "read_graph"]

T = TypeVar("T")

READ_GRAPH_ACTIVITY = "agentport.refine.read_graph"
#: what `GraphRead.op` may name
GRAPH_OPS = ("open", "match", "expand", "hints")


class GraphRead(Closed):
    """One read of graph.json at `graph`: `open` (parse and count), `match` (hop 1 for
    `question`, at most `cap` triples), `expand` (hop k from the `previous` hop's triples),
    `hints` (source-file hints of `previous`). Triples travel as `triple_row` lists."""

    graph: PathText
    op: Literal["open", "match", "expand", "hints"]
    question: Annotated[str, Field(max_length=100_000)] = ""
    previous: list[list[str]] = Field(default_factory=list, max_length=10_000)
    cap: Annotated[int, Field(ge=0, le=100_000)] = 0


@dataclass(frozen=True)
class GraphReadResult:
    """`triples` (rows) and `text` (evidence, hints, or `open`'s counts); `error`: the one
    line of a graph.json that does not load (the question fails with it, never retried)."""

    triples: list[list[str]] = field(default_factory=list)
    text: str = ""
    error: str = ""


class Parsed(Generic[T]):
    """What this worker process has parsed (a graph, a corpus): at most `keep`, newest
    kept. `get` parses again when the file's `stamp` (size, mtime, inode) changed; one
    parse at a time (a 20 MB graph parsed by every waiting activity at once would hold
    many copies)."""

    def __init__(self, keep: int = 2) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._held: dict[Hashable, tuple[Hashable, T]] = {}

    def get(self, key: Hashable, stamp: Callable[[], Hashable], parse: Callable[[], T]) -> T:
        with self._lock:
            now = stamp()
            held = self._held.pop(key, None)
            if held is None or held[0] != now:
                held = (now, parse())
            self._held[key] = held
            while len(self._held) > self._keep:
                self._held.pop(next(iter(self._held)))
            return held[1]


def file_stamp(real: str) -> tuple[int, int, int]:
    """*real*'s size, mtime (ns) and inode: a rewrite (atomic replace or in place) changes it."""
    st = os.stat(real)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


_GRAPHS: Parsed[Graph] = Parsed()


def _read(data: GraphRead, path: Path) -> GraphReadResult:
    try:
        real = str(path)
        graph = _GRAPHS.get(real, lambda: file_stamp(real), lambda: load_graph(path, lean=True))
        previous = [triple_from_row(row) for row in data.previous]
    except (InputError, ValueError) as exc:
        return GraphReadResult(error=str(exc).split("\n")[0])
    except OSError as exc:
        return GraphReadResult(error=f"{data.graph}: {exc.strerror or exc}")
    if data.op == "open":
        return GraphReadResult(text=f"{len(graph.nodes)} nodes, {len(graph.links)} links")
    if data.op == "hints":
        return GraphReadResult(text=source_hints(graph, previous))
    if data.op == "match":
        triples, text = match_question(graph, data.question, data.cap)
    else:
        triples, text = expand(graph, data.question, previous, data.cap)
    return GraphReadResult([triple_row(t) for t in triples], text)


@activity.defn(name=READ_GRAPH_ACTIVITY)
async def read_graph(raw: RawValue) -> GraphReadResult:
    """One `GraphRead` of a graph.json under this worker's roots (input that is not a
    `GraphRead`, or a path outside the roots or through a link, is a non-retryable
    `ApplicationError`); a file that does not load is `error`, not a raise."""
    data = parse(GraphRead, raw, "read_graph")
    path = _inside(data.graph, "graph", "file")
    return await _in_thread(lambda: _read(data, path))
