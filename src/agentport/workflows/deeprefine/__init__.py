"""agentport.workflows.deeprefine: the DeepRefine loop over graphify's graph.json.

Constants, control flow, verbatim prompts and the dry-run safety policy follow the DeepRefine
skill (the SKILL.md of deeprefine-cli 0.2.0). Files and commands are compatible with
deeprefine-cli 0.2.0; that reference's defects are fixed (docs/deeprefine.md lists them).

- `load_graph` / `dump_graph` / `Graph`: graph.json with graphify fidelity.
- `match_question` / `expand` / `Triple`: hop 1 and k-hop retrieval.
- `GraphSource` / `InMemoryGraph`: what the loop reads of a graph (Temporal reads it by
  activities, the graph staying on the workers' disk).
- `run_loop(adapter, graph, question)`: judge -> abduction -> refinement on any `LLMAdapter`,
  `Result[LoopResult, ProviderError]`; calls are labelled `judge`, `abduction`, `refinement`.
  The judge answers by `choices`; on the embedded backend abduction and refinement are
  choices among what was retrieved (`LoopSettings.small_model`, see `_small`).
- `parse_refinement` / `render_action` / `Action`: the action grammar.
- `validate_trace`, `review`, `apply_refinement`, `sync_memory`, `pending`, `finish`.
- `run_loop(..., budget=Budget(...))`: a ceiling ends the loop with the trace so far
  (`LoopResult.budget_reached`, `save_partial`), never applied; `plan_refine`: the worst case.
"""

from ._actions import Action, Parsed, Rejected, parse_refinement, render_action, render_refinement
from ._apply import ApplyReport, apply_refinement, apply_reviewed
from ._budget import RefinePlan, plan_refine
from ._constants import (
    BASE_TOP_K,
    HISTORY_HORIZON,
    INCREMENT_HOP,
    MAX_ACTIONS,
    MAX_HOPS,
    MAX_TRIPLE_NUM_BY_STEP,
)
from ._files import InputError, Layout, atomic_write, find_layout
from ._files import ensure_state as ensure_state  # for agentport's interfaces, not public
from ._files import read_bytes as read_bytes  # for agentport's interfaces, not public
from ._graph import Graph, Resolution, dump_graph, load_graph, parse_graph
from ._history import add_query, memory_question, pending, read_history, sync_memory
from ._loop import LoopResult, LoopSettings, format_history, parse_judge, run_loop
from ._retrieval import Triple, expand, match_question, render_triples, source_hints
from ._review import Review, ReviewContext, ReviewItem, review
from ._source import GraphSource, InMemoryGraph, triple_from_row, triple_row
from ._trace import load_trace, query_id, trace_template, validate_trace
from ._workflow import dump_trace as dump_trace  # for agentport's interfaces, not public
from ._workflow import finish, save_loop, save_partial
from ._workflow import partial_trace_path as partial_trace_path  # for agentport's interfaces

__all__ = [
    "BASE_TOP_K",
    "HISTORY_HORIZON",
    "INCREMENT_HOP",
    "MAX_ACTIONS",
    "MAX_HOPS",
    "MAX_TRIPLE_NUM_BY_STEP",
    "Action",
    "ApplyReport",
    "Graph",
    "GraphSource",
    "InMemoryGraph",
    "InputError",
    "Layout",
    "LoopResult",
    "LoopSettings",
    "Parsed",
    "RefinePlan",
    "Rejected",
    "Resolution",
    "Review",
    "ReviewContext",
    "ReviewItem",
    "Triple",
    "add_query",
    "apply_refinement",
    "apply_reviewed",
    "atomic_write",
    "dump_graph",
    "expand",
    "find_layout",
    "finish",
    "format_history",
    "load_graph",
    "load_trace",
    "match_question",
    "memory_question",
    "parse_graph",
    "parse_judge",
    "parse_refinement",
    "pending",
    "plan_refine",
    "query_id",
    "read_history",
    "render_action",
    "render_refinement",
    "render_triples",
    "review",
    "run_loop",
    "save_loop",
    "save_partial",
    "source_hints",
    "sync_memory",
    "trace_template",
    "triple_from_row",
    "triple_row",
    "validate_trace",
]
