"""Constants and verbatim prompts of the DeepRefine agent loop.

Source: the DeepRefine skill (the SKILL.md of deeprefine-cli 0.2.0), sections "Constants" and
"LLM prompts (verbatim)". The skill text is cut off inside the refinement *user* template
("Original Te..."); its four labelled lines (`Original Text`, `KG`, `Question`, `Error
reasons`) follow the reference CLI's own prompts (deeprefine-cli 0.2.0, `agent_prompts.py`,
the `REAFINER_*` strings).
"""

from __future__ import annotations

from typing import Final

MAX_HOPS: Final = 4
INCREMENT_HOP: Final = 1
BASE_TOP_K: Final = 10
MAX_TRIPLE_NUM_BY_STEP: Final = (5, 10, 15, 20)
HISTORY_HORIZON: Final = 4
#: "within 10 actions" (the skill's refinement prompt); the reference applied any number (F-15).
MAX_ACTIONS: Final = 10
#: Bare names the skill calls ambiguous even with a single match ("Evidence-aware review rules").
BARE_AMBIGUOUS_NAMES: Final = frozenset({"main", "run", "train", "test", "setup"})

SCHEMA_VERSION: Final = 1
MODE: Final = "agent-loop"
OUT_DIR: Final = "graphify-out"
STATE_DIR: Final = ".deeprefine"

CONSTANTS: Final = {
    "max_hops": MAX_HOPS,
    "increment_hop": INCREMENT_HOP,
    "base_top_k": BASE_TOP_K,
    "max_triple_num_by_step": list(MAX_TRIPLE_NUM_BY_STEP),
    "history_horizon_size": HISTORY_HORIZON,
}

JUDGE_SYSTEM: Final = """\
As an advanced judgement assistant, your task is to judge whether the given question is \
answerable based on the provided KG context.

Evaluate whether the given question is answerable based on the provided KG context. Output your \
judgment in the following format:
<judge>Yes</judge> or <judge>No</judge>

**Important:** You must think carefully about the question and the KG context before making \
your judgment. And output your judgment result directly in the specified format."""

JUDGE_USER: Final = """\
Question: {question}
Knowledge Graph (KG) context: {triples_string}"""

ABDUCTION_SYSTEM: Final = """\
As an advanced error abduction assistant, your task is to analyze the error reasons based on \
the given interaction history.

Analyze the reasons of the unanswerable questions based on the given interaction history from \
the incompleteness, incorrectness, and redundancy perspectives. Output your analysis in the \
following format:
<abduction>...</abduction>

**Important:** You must think carefully about the interaction history before making your \
analysis. And output your analysis result directly in the specified format."""

ABDUCTION_USER: Final = "Interaction history: {interaction_history}"

REFINEMENT_SYSTEM: Final = """\
As an advanced knowledge graph refinement assistant, your task is to generate a series of \
actions (**within 10 actions**) to refine the given KG to make it more suitable for answering \
the given question.

Based on the given KG and the analysed error reasons, refine the given KG to make it more \
easily for retrieval and answering the given question. You have the following three types of \
actions to conduct:

- insert_edge(subject, relation, object): Insert a new edge into the KG to complete the missing \
information.
- delete_edge(subject, relation, object): Delete an edge from the KG to remove the redundant \
information or conflicting information.
- replace_node(old_entity, new_entity): Replace an entity in the KG to correct the errors or \
deal with disambiguation.

Output a series of actions (**within 10 actions**) in the following format:
<refinement>insert_edge("...", "...", "...")|delete_edge("...", "...", "...")|\
replace_node("...", "...")|...</refinement>

**Important:** You must think carefully about the given KG and the analysed error reasons \
before making your refinement. DO NOT DELETE ANY IRRELEVANT TRIPLES FROM THE ORIGINAL KG. TRY \
TO KEEP THE ORIGINAL KG AS MUCH AS POSSIBLE. DO NOT GENERATE TOO MANY ACTIONS. And output your \
refinement result directly in the specified format."""

REFINEMENT_USER: Final = """\
Original Text: {original_text}
KG: {triples_string}
Question: {question}
Error reasons: {error_reasons}"""

#: Bounded re-prompts (agentport addition; the Reafiner flow aborted on a format error).
JUDGE_RETRY: Final = "Reply with exactly <judge>Yes</judge> or <judge>No</judge> and nothing else."
ABDUCTION_RETRY: Final = "Reply with your analysis inside <abduction>...</abduction>."
REFINEMENT_RETRY: Final = (
    "Reply with the actions inside <refinement>...</refinement>, e.g. "
    '<refinement>insert_edge("a", "calls", "b")</refinement>.'
)
