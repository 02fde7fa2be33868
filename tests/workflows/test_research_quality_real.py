"""The real-documentation benchmark (benchmarks/research_quality: build_real.py, run.py
--real) measures what it says: its question set covers every type on every corpus, the
builder's checks hold on the committed excerpt and catch a wrong gold string, a perfect
report scores 100 % and hostile ones near 0, the perfect reader and the first-candidate
baseline run the slice through the real pipeline, and the scorer reads known answers
right. The excerpt (tests/fixtures/research_real) is a verbatim copy of built corpus files
(`build_real.py --excerpt`), so the slice runs without network."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from _helpers import ROOT, TESTS

BENCH = ROOT / "benchmarks" / "research_quality"
FIXTURE = TESTS / "fixtures" / "research_real"
sys.path.insert(0, str(BENCH))

import build_real  # noqa: E402
import reader  # noqa: E402
import run as bench  # noqa: E402
import score as scoring  # noqa: E402

QUESTIONS = build_real.load_questions()
BY_ID = {q["id"]: q for q in QUESTIONS}
SLICE = [BY_ID[i] for i in build_real.SLICE]


def _docs() -> dict[str, dict[str, str]]:
    return {c: build_real.read_docs(FIXTURE / "corpora" / c) for c in build_real.EXCERPT}


def _args(**kw: Any) -> argparse.Namespace:
    base = {
        "runner": None,
        "backend": None,
        "small": False,
        "oracle_retrieval": False,
        "slice": 0,
        "real": [],
        "cache": FIXTURE,
        "questions": None,
        "ids": ",".join(build_real.SLICE),
        "types": None,
        "rows": None,
        "resume": False,
    }
    return argparse.Namespace(**(base | kw))


def test_the_question_set_covers_every_type_on_every_corpus() -> None:
    assert len(QUESTIONS) >= 90
    for corpus in build_real.BY_CORPUS:
        for kind in build_real.TYPES:
            mine = [q for q in QUESTIONS if q["corpus"] == corpus and q["type"] == kind]
            assert len(mine) >= 5, (corpus, kind)
    for q in QUESTIONS:
        if q["answerable"]:
            assert q["answers"], q["id"]
            assert q["gold_docs"], q["id"]
        else:
            assert q["absent"], f"{q['id']}: an unanswerable question names what is absent"
        if q["type"] == "planted":
            assert q["plant"]["find"] != q["plant"]["replace"], q["id"]
    assert {q["type"] for q in SLICE} == set(build_real.TYPES)


def test_the_builder_checks_hold_on_the_excerpt() -> None:
    assert build_real.check(SLICE, _docs()) == []


@pytest.mark.parametrize(
    ("qid", "change", "expected"),
    [
        ("cu-single-1", {"answers": [["129"]]}, "gold ['129'] not in timeout.txt"),
        ("cu-single-1", {"sources": [{"file": "timeout.txt", "heading": "NOPE"}]}, "heading"),
        ("cu-single-1", {"sources": [{"file": "nohere.txt"}]}, "not in corpus"),
        ("cu-planted-2", {"planted": ["niceness"]}, "also in nice.txt"),
        ("cu-planted-2", {"planted": ["default 99"]}, "not in archive/nice.txt"),
        ("md-unanswerable-3", {"absent": ["Admonition"]}, "occurs in extensions/admonition.md"),
        ("cu-two_hop-4", {"answers": [["sum -r"]]}, "alone holds every answer"),
    ],
)
def test_the_builder_checks_catch_a_wrong_question(
    qid: str, change: dict[str, Any], expected: str
) -> None:
    q = BY_ID[qid] | change
    if "sources" in change:
        q["gold_docs"] = [s["file"] for s in change["sources"]]
    problems = build_real.check([q], _docs())
    assert problems, q
    assert expected in problems[0], problems
    assert all(p.startswith(qid + ":") for p in problems)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ('id = "x"\ncorpus = "click"\ntype = "guess"\nquestion = "q?"', "type"),
        ('id = "x"\ncorpus = "nope"\ntype = "single"\nquestion = "q?"', "corpus"),
        ('id = "x"\ncorpus = "click"\ntype = "single"\nquestion = "q?"', "answers"),
        (
            'id = "x"\ncorpus = "click"\ntype = "unanswerable"\nquestion = "q"\nanswers=["a"]',
            "answers",
        ),
        (
            'id = "x"\ncorpus = "click"\ntype = "single"\nquestion = "q?"\nanswers = ["a"]',
            "sources",
        ),
        ('id = "x"\ncorpus = "click"\ntype = "single"\nquestion = ""', "question"),
    ],
)
def test_a_malformed_question_is_one_line_naming_it(tmp_path: Path, entry: str, field: str) -> None:
    path = tmp_path / "q.toml"
    path.write_text("[[q]]\n" + entry + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^q\.toml: question x: {field}: "):
        build_real.load_questions(path)


def test_the_excerpt_is_the_verbatim_copy_its_readme_records() -> None:
    readme = (FIXTURE / "README.md").read_text(encoding="utf-8")
    recorded = dict(re.findall(r"\| `(corpora/[^`]+)` \| `([0-9a-f]{64})` \|", readme))
    on_disk = {
        p.relative_to(FIXTURE).as_posix() for p in (FIXTURE / "corpora").rglob("*") if p.is_file()
    }
    assert set(recorded) == on_disk
    for rel, digest in recorded.items():
        assert hashlib.sha256((FIXTURE / rel).read_bytes()).hexdigest() == digest, rel
    for pkg in build_real.PACKAGES:  # every package's licence travels with its files
        assert pkg.sha256 in readme
        assert (FIXTURE / "licences" / f"{pkg.corpus}.{Path(pkg.licence_file).name}").is_file()


def test_a_perfect_report_scores_100_percent_and_hostile_ones_near_zero() -> None:
    perfect = bench.run(_args(runner="oracle"))["summary"]["all corpora"]
    assert perfect["all"]["correct"] == 1.0
    assert perfect["all"]["quote_precision"] == 1.0
    assert perfect["all"]["lead"] == 1.0
    assert perfect["planted"]["refuted"] == 1.0
    hostile = bench.run(_args(runner="adversary"))["summary"]["all corpora"]
    assert hostile["all"]["correct"] <= 0.25
    assert hostile["all"]["quote_precision"] in (0.0, None)


def test_the_perfect_reader_answers_the_slice_on_the_seed_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # openai_compat against FakeModelServer scripted as a reader that never misses a gold
    # answer it is shown: on the excerpt, retrieval reaches every gold document
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    rows = tmp_path / "rows.jsonl"
    result = bench.run(_args(runner="perfect-reader", rows=str(rows)))
    assert [r["id"] for r in result["rows"]] == [
        q["id"] for c in build_real.BY_CORPUS for q in SLICE if q["corpus"] == c
    ]
    for row in result["rows"]:
        assert row["correct"], (row["id"], row["report"].get("summary"))
        assert row["quote_precision"] in (1.0, None), row["id"]
        assert row["report"]["stats"]["researchMode"] != "small-model", row["id"]
    streamed = [json.loads(x) for x in rows.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["id"] for r in streamed) == sorted(build_real.SLICE)
    # the streamed rows, scored again, give the run's own table
    tables = bench.tables_of_rows(rows, "perfect-reader", FIXTURE)
    assert result["table"].split("all corpora")[-1] in tables
    # --resume reuses every streamed row and researches nothing again
    again = bench.run(_args(runner="first-candidate", rows=str(rows), resume=True))
    assert [r["report"] for r in again["rows"]] == [r["report"] for r in result["rows"]]


def test_the_first_candidate_baseline_runs_small_model_mode_on_the_slice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    result = bench.run(_args(runner="first-candidate"))
    assert len(result["rows"]) == len(SLICE)
    for row in result["rows"]:
        stats = row["report"]["stats"]
        assert stats["researchMode"] == "small-model", row["id"]
        assert row["quote_precision"] in (1.0, None), row["id"]  # verbatim by construction
        q = BY_ID[row["id"]]
        assert scoring.score(row["report"], q, _docs()[q["corpus"]])["correct"] == row["correct"]
    assert result["agentport"].endswith("agentport")


def _request(user_text: str, body: dict[str, Any] | None = None) -> Any:
    return SimpleNamespace(user_text=user_text, body=body or {})


def test_the_first_candidate_reply_takes_the_first_option_offered() -> None:
    ids = {"type": "array", "items": {"type": "string", "enum": ["S1", "S2"]}, "minItems": 1}
    schema = {"type": "object", "properties": {"ids": ids}, "required": ["ids"]}
    body = {"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
    assert json.loads(reader.first_candidate(_request("S1: a\nS2: b", body))) == {"ids": ["S1"]}
    vote = "Answer with exactly one of the following lines and nothing else:\nsupported\nrefuted"
    assert reader.first_candidate(_request(vote)) == "supported"
    assert json.loads(reader.first_candidate(_request("Q\nC1: x\nC2: y"))) == {"ids": ["C1"]}


def test_the_scorer_reads_known_answers_right() -> None:
    planted = BY_ID["cu-planted-2"]
    docs = _docs()["coreutils"]
    true = "add integer N to the niceness (default 10)"
    right = {"summary": true, "findings": [{"claim": true, "sources": ["corpus://nice.txt/1"]}]}
    row = scoring.score(right, planted, docs)
    assert row["correct"]
    assert row["refuted"]
    assert row["recall"] == 1.0
    wrong = {"summary": true.replace("10", "15"), "findings": [{"claim": "(default 15)"}]}
    row = scoring.score(wrong, planted, docs)
    assert not row["correct"]
    assert not row["refuted"]
    # the answer stated, but not first: correct, not lead
    later = {"summary": f"See SEE ALSO. Written by David. {true}", "findings": [{"claim": "x"}]}
    row = scoring.score(later, planted, docs)
    assert row["correct"]
    assert not row["lead"]
    assert scoring.score({**later, "summary": true + " [nice.txt] More."}, planted, docs)["lead"]
    assert scoring.lead_sentence("Written by H. Peter Anvin. Next.") == "Written by H. Peter Anvin."
    gave_up = {"summary": "The documents do not answer the question.", "findings": []}
    assert scoring.score(gave_up, BY_ID["md-unanswerable-3"], {})["correct"]
    assert not scoring.score(gave_up, BY_ID["cu-single-1"], docs)["correct"]


def test_a_missing_corpus_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"not built under .*: run `python .*build_real\.py"):
        bench.run(_args(runner="oracle", cache=tmp_path))
