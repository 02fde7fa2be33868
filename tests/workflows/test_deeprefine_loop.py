"""The loop's control flow on any LLMAdapter (ScriptedAdapter scripted by label)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.result import Failure

from _deeprefine_util import real_copy, write_tiny
from agentport.core import ErrorKind, ProviderError
from agentport.testing import ScriptedAdapter
from agentport.workflows.deeprefine import (
    MAX_HOPS,
    MAX_TRIPLE_NUM_BY_STEP,
    Layout,
    LoopSettings,
    format_history,
    load_graph,
    parse_judge,
    run_loop,
    save_loop,
    validate_trace,
)
from agentport.workflows.deeprefine._constants import (
    ABDUCTION_SYSTEM,
    JUDGE_SYSTEM,
    REFINEMENT_SYSTEM,
)


@pytest.fixture
def real_project(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    return real_copy(tmp_path_factory, tmp_path)


Q = "How does with_retry retry a ProviderError?"
ACTIONS = '<refinement>insert_edge("with_retry()", "calls", "RetryPolicy")</refinement>'


def _graph(project: Path):  # type: ignore[no-untyped-def]
    return load_graph(project / "graphify-out" / "graph.json")


@pytest.mark.anyio
async def test_first_hop_yes_is_an_early_exit_without_abduction(real_project: Path) -> None:
    llm = ScriptedAdapter().add("<judge>Yes</judge>", label="judge")
    result = (await run_loop(llm, _graph(real_project), Q)).unwrap()
    assert result.early_exit
    assert [c.label for c in llm.calls] == ["judge"]
    assert result.trace["early_exit"] is True
    assert result.trace["error_abduction_raw"] is None
    layout = Layout(real_project)
    trace_path, actions = save_loop(layout, result)
    assert actions is None
    assert validate_trace(result.trace, trace_path, layout) == []


@pytest.mark.anyio
async def test_refinement_runs_when_history_has_two_steps_even_if_last_is_yes(
    real_project: Path,
) -> None:
    llm = (
        ScriptedAdapter()
        .add("<judge>No</judge>", "<judge>Yes</judge>", label="judge")
        .add("<abduction>missing edge</abduction>", label="abduction")
        .add(ACTIONS, label="refinement")
    )
    result = (await run_loop(llm, _graph(real_project), Q)).unwrap()
    assert not result.early_exit
    assert [c.label for c in llm.calls] == ["judge", "judge", "abduction", "refinement"]
    history = result.trace["interaction_history"]
    assert [s["answerable"] for s in history] == [False, True]
    assert [s["retrieval"]["method"] for s in history] == [
        "graphify_query+graph_read",
        "k_hop_expansion",
    ]
    assert len(history[0]["retrieved_subgraph"]) <= MAX_TRIPLE_NUM_BY_STEP[0]
    assert len(history[1]["retrieved_subgraph"]) <= MAX_TRIPLE_NUM_BY_STEP[1]
    assert result.trace["error_abduction_reason"] == "missing edge"
    layout = Layout(real_project)
    trace_path, actions = save_loop(layout, result)
    assert actions is not None
    assert actions.read_text(encoding="utf-8").strip() == ACTIONS
    assert validate_trace(result.trace, trace_path, layout, actions) == []


@pytest.mark.anyio
async def test_all_no_runs_exactly_max_hops_then_refines(real_project: Path) -> None:
    llm = (
        ScriptedAdapter()
        .add("<judge>No</judge>", label="judge")
        .add("<abduction>x</abduction>", label="abduction")
        .add("<refinement></refinement>", label="refinement")
    )
    result = (await run_loop(llm, _graph(real_project), Q)).unwrap()
    assert len(result.trace["interaction_history"]) == MAX_HOPS
    caps = [len(s["retrieved_subgraph"]) for s in result.trace["interaction_history"]]
    assert all(n <= cap for n, cap in zip(caps, MAX_TRIPLE_NUM_BY_STEP, strict=True))


@pytest.mark.anyio
async def test_prompts_are_the_seed_verbatim_with_pipe_triples(real_project: Path) -> None:
    llm = (
        ScriptedAdapter()
        .add("<judge>No</judge>", "<judge>Yes</judge>", label="judge")
        .add("<abduction>r</abduction>", label="abduction")
        .add(ACTIONS, label="refinement")
    )
    await run_loop(llm, _graph(real_project), Q)
    judge, _, abduction, refinement = llm.calls
    assert judge.messages[0].content == JUDGE_SYSTEM
    assert judge.messages[1].content.startswith(f"Question: {Q}\nKnowledge Graph (KG) context: ")
    assert " | " in judge.messages[1].content
    assert abduction.messages[0].content == ABDUCTION_SYSTEM
    assert abduction.messages[1].content.startswith("Interaction history: Step1:\n['Query': ")
    assert refinement.messages[0].content == REFINEMENT_SYSTEM
    user = refinement.messages[1].content
    assert user.startswith("Original Text: ")
    assert "\nError reasons: r" in user
    assert all(c.config.max_tokens for c in llm.calls)  # caps for small models


@pytest.mark.anyio
async def test_unparsable_judge_is_reprompted_then_accepted(real_project: Path) -> None:
    llm = ScriptedAdapter().add("hmm, maybe", "<judge>Yes</judge>", label="judge")
    result = (await run_loop(llm, _graph(real_project), Q)).unwrap()
    assert result.early_exit
    assert len(llm.calls) == 2
    assert llm.calls[1].messages[-1].content.startswith("Reply with exactly <judge>")


@pytest.mark.anyio
async def test_judge_that_never_parses_is_a_bad_output_failure(real_project: Path) -> None:
    llm = ScriptedAdapter().add("maybe", label="judge")
    result = await run_loop(llm, _graph(real_project), Q)
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.bad_output
    assert len(llm.calls) == 3  # bounded: 1 + 2 re-prompts


@pytest.mark.anyio
async def test_backend_failure_is_returned_as_value(real_project: Path) -> None:
    llm = ScriptedAdapter().add(ProviderError(ErrorKind.rate_limited, "slow"), label="judge")
    result = await run_loop(llm, _graph(real_project), Q)
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.rate_limited


@pytest.mark.anyio
async def test_question_matching_nothing_fails_clearly(real_project: Path) -> None:
    llm = ScriptedAdapter().add("<judge>Yes</judge>", label="judge")
    result = await run_loop(llm, _graph(real_project), "zzqx wvvy")
    assert isinstance(result, Failure)
    assert "no node matches" in str(result.failure())
    assert llm.calls == []


def test_parse_judge_is_robust_but_refuses_to_guess() -> None:
    assert parse_judge("<judge> yes </judge>") is True
    assert parse_judge("blah <JUDGE>No</JUDGE>") is False
    assert parse_judge("<judge>Yes") is True
    assert parse_judge("No, the context lacks it.") is False
    assert parse_judge("yes or no? unclear") is None
    assert parse_judge("") is None


def test_history_format_is_deeprefines() -> None:
    step = {
        "query": "q", "num_hops": 1, "answerable": False,
        "retrieved_subgraph": [{"subject": "a", "relation": "r", "object": "b", "subject_id": "x"}],
    }  # fmt: skip
    assert format_history([step, step]) == (
        "Step1:\n['Query': q, 'Subgraph_hop': 1, 'Subgraph_content': "
        "[{'subject': 'a', 'relation': 'r', 'object': 'b'}], 'Answerable': False]\n\nStep2:\n"
        "['Query': q, 'Subgraph_hop': 1, 'Subgraph_content': "
        "[{'subject': 'a', 'relation': 'r', 'object': 'b'}], 'Answerable': False]"
    )


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    answers=st.lists(st.sampled_from(["<judge>Yes</judge>", "<judge>No</judge>", "No.", "yes"]),
                     min_size=MAX_HOPS, max_size=MAX_HOPS),
    actions=st.sampled_from(["<refinement></refinement>", ACTIONS, 'insert_edge("a", "r", "b")']),
)  # fmt: skip
def test_any_judge_sequence_yields_a_trace_that_validates(
    tmp_path_factory: pytest.TempPathFactory, answers: list[str], actions: str
) -> None:
    root = tmp_path_factory.mktemp("prop")
    graph = load_graph(write_tiny(root))
    llm = (
        ScriptedAdapter()
        .add(*answers, label="judge")
        .add("<abduction>gap</abduction>", label="abduction")
        .add(actions, label="refinement")
    )
    free_text = LoopSettings(constrain_judge=False)  # the seed's parsing of free-text answers
    result = anyio.run(run_loop, llm, graph, "How does run() call helper()?", free_text).unwrap()
    layout = Layout(root)
    trace_path, actions_path = save_loop(layout, result)
    assert validate_trace(result.trace, trace_path, layout, actions_path) == []
    assert result.early_exit == (parse_judge(answers[0]) is True)
