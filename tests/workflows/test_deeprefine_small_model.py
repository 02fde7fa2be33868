"""Refine on a small model only makes choices the code can check.

The judge is asked with `choices` on every backend that supports output constraints (the
CLI path too); an answer with both tags, or the instruction echoed back, is never Yes. On
the embedded backend (catalog kind `local`), abduction and refinement are JSON whose strings
are enums of what was retrieved, so any answer the grammar admits becomes a refinement file
that `loop validate` accepts and whose every name resolves to exactly one retrieved node.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _deeprefine_util import real_copy, write_tiny
from agentport.catalog import all_backends
from agentport.core import CompletionConfig, Param, ParamSupport
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deeprefine import (
    Layout,
    LoopSettings,
    ReviewContext,
    Triple,
    expand,
    load_graph,
    match_question,
    parse_judge,
    parse_refinement,
    review,
    run_loop,
    save_loop,
    validate_trace,
)
from agentport.workflows.deeprefine._loop import JUDGE_CHOICES
from agentport.workflows.deeprefine._retrieval import uncovered_terms
from agentport.workflows.deeprefine._small import (
    abduction_schema,
    build_choices,
    parse_abduction_choice,
    parse_refinement_choice,
    refinement_schema,
)

Q = "How does with_retry retry a ProviderError?"
TINY_Q = "How does run() call helper()?"

ECHOES = [
    "<judge>Yes</judge> or <judge>No</judge>",
    "Output your judgment in the following format:\n<judge>Yes</judge> or <judge>No</judge>",
    "<judge>No</judge><judge>Yes</judge>",
    "<judge>Yes or <judge>No",
]


@pytest.mark.parametrize("answer", ECHOES)
def test_an_answer_with_both_tags_is_undecidable(answer: str) -> None:
    assert parse_judge(answer) is None


def test_one_tag_still_decides() -> None:
    assert parse_judge("<judge>Yes</judge>") is True
    assert parse_judge("<judge>Yes</judge> (yes)") is True
    assert parse_judge("I think <judge>No</judge>") is False


CONSTRAINED = [
    c.name for c in all_backends() if c.support(Param.output_schema) is not ParamSupport.IGNORED
]


@pytest.mark.parametrize("backend", CONSTRAINED)
def test_judge_is_asked_with_choices_on_every_backend_that_supports_them(
    backend: str, tmp_path: Path
) -> None:
    graph = load_graph(write_tiny(tmp_path))
    llm = ScriptedAdapter(backend=backend).add("<judge>Yes</judge>", label="judge")
    result = anyio.run(run_loop, llm, graph, TINY_Q)
    assert result.unwrap().early_exit
    assert [c.config.choices for c in llm.calls] == [JUDGE_CHOICES]


@pytest.mark.parametrize("echo", ECHOES)
def test_echoed_instruction_is_reprompted_never_yes(echo: str, tmp_path: Path) -> None:
    graph = load_graph(write_tiny(tmp_path))
    llm = ScriptedAdapter().add(echo, "<judge>No</judge>", label="judge")
    llm.add("<abduction>gap</abduction>", label="abduction")
    llm.add(
        '<refinement>insert_edge("run()", "calls", "helper()")</refinement>', label="refinement"
    )
    loop = anyio.run(run_loop, llm, graph, TINY_Q).unwrap()
    first = loop.trace["interaction_history"][0]
    assert first["answerable"] is False
    assert first["judgement_raw"] == "<judge>No</judge>"
    assert llm.calls[1].messages[-1].content.startswith("Reply with exactly <judge>")


def test_an_unconstrained_echo_is_never_yes_either(tmp_path: Path) -> None:
    graph = load_graph(write_tiny(tmp_path))
    llm = ScriptedAdapter().add(ECHOES[0], label="judge")
    result = anyio.run(run_loop, llm, graph, TINY_Q, LoopSettings(constrain_judge=False))
    assert "judge: no parsable answer after 3 attempts" in str(result.failure())


def test_the_cli_path_constrains_the_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentport import factory
    from agentport.cli._refine import run_refine

    graph = write_tiny(tmp_path)
    llm = ScriptedAdapter(backend="openai_compat").add("<judge>Yes</judge>", label="judge")
    monkeypatch.setattr(factory, "create_llm_adapter", lambda *a, **k: llm)
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(tmp_path / "none.toml"))
    lines: list[str] = []
    code = run_refine(TINY_Q, graph, "openai_compat", False, lines.append, lines.append)
    assert code == 0, lines
    assert llm.calls
    assert all(c.config.choices == JUDGE_CHOICES for c in llm.calls)


# -- the embedded path: choices only ---------------------------------------------------------


def _schema_of(call: Call) -> dict[str, Any]:
    schema = call.config.output_schema
    assert isinstance(schema, dict)
    return schema


def _pick(schema: dict[str, Any], data: st.DataObject | None = None) -> dict[str, Any]:
    """An answer the schema (as a grammar) admits: every enum value drawn by hypothesis, or
    (without *data*) the first value."""

    def choose(options: list[Any]) -> Any:
        return data.draw(st.sampled_from(options)) if data is not None else options[0]

    props = schema["properties"]
    if "actions" not in props:
        return {k: choose(v["enum"]) for k, v in props.items()}
    items = props["actions"]["items"]
    alternatives = items.get("anyOf", [items])
    count = data.draw(st.integers(1, props["actions"]["maxItems"])) if data else 1
    actions = []
    for _ in range(count):
        alt = choose(alternatives)
        actions.append(
            {
                k: v["const"] if "const" in v else choose(v["enum"])
                for k, v in alt["properties"].items()
            }
        )
    return {"actions": actions}


def _small_llm(backend: str = "local") -> ScriptedAdapter:
    llm = ScriptedAdapter(backend=backend)
    llm.add("<judge>No</judge>", label="judge")
    llm.add(lambda call: _pick(_schema_of(call)), label="abduction")
    llm.add(lambda call: _pick(_schema_of(call)), label="refinement")
    return llm


@pytest.fixture
def real_project(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    return real_copy(tmp_path_factory, tmp_path)


def test_embedded_backend_chooses_abduction_and_actions_from_retrieved_nodes(
    real_project: Path,
) -> None:
    graph = load_graph(real_project / "graphify-out" / "graph.json")
    llm = _small_llm()
    loop = anyio.run(run_loop, llm, graph, Q).unwrap()
    labels = [c.label for c in llm.calls]
    assert labels == ["judge"] * 4 + ["abduction", "refinement"]
    abduction, refinement = llm.calls[-2:]
    retrieved = {
        node_id
        for step in loop.trace["interaction_history"]
        for t in step["retrieved_subgraph"]
        for node_id in (t["subject_id"], t["object_id"])
    }
    code = {i for i in retrieved if graph.nodes[i].get("file_type") != "rationale"}
    names = _schema_of(abduction)["properties"]["entity"]["enum"]
    assert {graph.resolve(n).unique for n in names} == code  # each name: one node
    items = _schema_of(refinement)["properties"]["actions"]["items"]
    insert = items.get("anyOf", [items])[0]
    for pair in insert["properties"]["pair"]["enum"]:
        s, o = (graph.resolve(n).unique for n in pair.split(" -> "))
        assert {s, o} <= retrieved
        assert not graph.links_between(s, o)  # never a parallel link (R6)
    assert loop.trace["error_abduction_raw"].startswith("<abduction>incompleteness: ")
    assert json.loads(loop.trace["refinement_model_output"])["actions"]
    layout = Layout(real_project)
    trace_path, actions = save_loop(layout, loop)
    assert actions is not None
    assert validate_trace(loop.trace, trace_path, layout, actions) == []


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiny")
    write_tiny(root)
    return root


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_answer_the_grammar_admits_is_grounded_or_reprompted(
    tiny_root: Path, data: st.DataObject
) -> None:
    root = tiny_root
    graph = load_graph(root / "graphify-out" / "graph.json")
    steps = [match_question(graph, TINY_Q, 5)[0]]
    steps.append(expand(graph, TINY_Q, steps[0], 10)[0])
    choices = build_choices(graph, steps[:-1], steps[-1])
    abduction = _pick(abduction_schema(choices), data)
    reason = parse_abduction_choice(json.dumps(abduction), choices)
    assert reason is not None
    assert reason.startswith(abduction["perspective"])
    answer = _pick(refinement_schema(choices), data)
    text = parse_refinement_choice(json.dumps(answer), choices)
    assert text is not None
    parsed = parse_refinement(text)
    assert parsed.actions
    assert len(parsed.actions) == len(parsed.items)  # nothing rejected, no repeats
    reviewed = review(text, graph, ReviewContext({i for t in steps[-1] for i in t.key}, root))
    for item in reviewed.items:
        assert item.effect == "change", item.warnings
        assert not any(w.startswith(("R1", "R2", "R3", "R5", "R6")) for w in item.warnings)


def test_small_mode_is_selectable_and_off_for_capable_backends(tmp_path: Path) -> None:
    graph = load_graph(write_tiny(tmp_path))
    capable = (
        ScriptedAdapter(backend="openai_compat")
        .add("<judge>No</judge>", label="judge")
        .add("<abduction>gap</abduction>", label="abduction")
        .add(
            '<refinement>insert_edge("run()", "calls", "helper()")</refinement>', label="refinement"
        )
    )
    anyio.run(run_loop, capable, graph, TINY_Q).unwrap()
    assert all(c.config.output_schema is None for c in capable.calls)  # the seed path
    forced = _small_llm(backend="openai_compat")
    anyio.run(run_loop, forced, graph, TINY_Q, LoopSettings(small_model=True)).unwrap()
    assert forced.calls[-1].config.output_schema is not None


def test_an_override_config_is_used_as_given(tmp_path: Path) -> None:
    graph = load_graph(write_tiny(tmp_path))
    own = CompletionConfig(max_tokens=8)
    llm = ScriptedAdapter().add("<judge>Yes</judge>", label="judge")
    anyio.run(run_loop, llm, graph, TINY_Q, LoopSettings(configs={"judge": own})).unwrap()
    assert llm.calls[0].config.choices is None
    assert llm.calls[0].config.max_tokens == 8


# -- the code's check on a small model's Yes ---------------------------------------------------


def _triple(s: str, r: str, o: str) -> Triple:
    return Triple(s, r, o, s, o)


def test_uncovered_terms_match_labels_compactly_and_by_stem() -> None:
    triples = [_triple("with_retry()", "references", "ProviderError"), _triple("a", "r", "params")]
    assert uncovered_terms("How does with_retry retry a ProviderError?", triples) == []
    assert uncovered_terms("Which parameter is ignored?", triples) == ["ignored"]
    assert uncovered_terms("What is the default total_timeout_s?", triples) == [
        "default",
        "total_timeout_s",
    ]


def test_a_small_models_yes_counts_only_when_the_context_mentions_the_question(
    tmp_path: Path,
) -> None:
    graph = load_graph(write_tiny(tmp_path))
    question = "How does run() call helper() via zzyzx?"
    small = _small_llm()
    small.rules[0].replies = ["<judge>Yes</judge>"]
    loop = anyio.run(run_loop, small, graph, question).unwrap()
    history = loop.trace["interaction_history"]
    assert len(history) == 4  # "zzyzx" is in no triple: every Yes is overruled
    for step in history:
        assert step["answerable"] is False
        assert step["judgement_raw"] == "<judge>No</judge>"
        assert step["judgement_model_output"] == "<judge>Yes</judge>"
        assert step["judgement_check"] == "not in the retrieved triples: zzyzx"
    layout = Layout(tmp_path)
    trace_path, actions = save_loop(layout, loop)
    assert validate_trace(loop.trace, trace_path, layout, actions) == []
    capable = ScriptedAdapter(backend="openai_compat").add("<judge>Yes</judge>", label="judge")
    assert anyio.run(run_loop, capable, graph, question).unwrap().early_exit  # seed path
    covered = _small_llm()
    covered.rules[0].replies = ["<judge>Yes</judge>"]
    assert anyio.run(run_loop, covered, graph, "How does run() call helper()?").unwrap().early_exit


def _enum_values(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        found = [v for v in schema.get("enum", []) if isinstance(v, str)]
        if isinstance(schema.get("const"), str):
            found.append(schema["const"])
        return found + [x for v in schema.values() for x in _enum_values(v)]
    if isinstance(schema, list):
        return [x for v in schema for x in _enum_values(v)]
    return []


@settings(max_examples=40, deadline=None)
@given(labels=st.lists(st.text(min_size=1, max_size=12), min_size=3, max_size=6, unique=True))
def test_enum_values_never_hold_a_quote_or_backslash(labels: list[str]) -> None:
    # llama-cpp-python 0.3 mis-escapes `"` and `\` in enum strings; the broken grammar
    # crashed llama.cpp (SIGSEGV) on a graphify docstring label like `means "the default"`
    from agentport.workflows.deeprefine import parse_graph

    nodes = [{"id": f"n{i}", "label": label} for i, label in enumerate(labels)]
    nodes.append({"id": "doc", "label": 'Docstring "quoted" \\ text', "file_type": "rationale"})
    links = [
        {"source": f"n{i}", "target": f"n{i + 1}", "relation": 'rel"x' if i else "calls"}
        for i in range(len(labels) - 1)
    ] + [{"source": "doc", "target": "n0", "relation": "rationale_for"}]
    raw = {"directed": False, "multigraph": False, "nodes": nodes, "links": links}
    graph = parse_graph(json.dumps(raw).encode(), Path("graph.json"))
    steps = [[Triple(lk["source"], lk["relation"], lk["target"], "", "") for lk in links]]
    choices = build_choices(graph, [], steps[0])
    assert "doc" not in choices.names.values()  # docstrings are no entity
    for schema in (abduction_schema(choices), refinement_schema(choices)):
        for value in _enum_values(schema):
            assert '"' not in value
            assert "\\" not in value
    for name, node_id in choices.names.items():
        assert graph.resolve(name).unique == node_id
