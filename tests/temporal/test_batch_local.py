"""The local batch (`agentport research|refine --batch FILE --out DIR`, no Temporal):
questions-file errors, resume without redoing finished questions, refine reviews before
any apply and one writer per graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import agentport.factory
from _batch_model import refine_answer, refine_questions
from _deep_research_util import PASS, scope
from _deeprefine_util import write_tiny
from agentport.cli import app
from agentport.core import ErrorKind, ProviderError
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.batch import BatchInputError, question_id, read_questions

runner = CliRunner()


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = tmp_path / "agentport-config.toml"
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))


def _use(monkeypatch: pytest.MonkeyPatch, adapter: ScriptedAdapter) -> None:
    monkeypatch.setattr(agentport.factory, "create_llm_adapter", lambda *_a, **_k: adapter)


# ── the questions file ──


def test_blank_lines_are_skipped_and_duplicates_reported(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("\ufeffFirst?\n\n   \nSecond?\n  First?  \nThird?", encoding="utf-8")
    parsed = read_questions(path)
    assert [(q.line, q.text) for q in parsed.questions] == [
        (1, "First?"),
        (4, "Second?"),
        (6, "Third?"),
    ]
    assert parsed.duplicates == [(5, 1)]


def test_a_non_utf8_byte_is_one_line_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_bytes(b"ok?\nfine?\nbad \xff here\n")
    with pytest.raises(BatchInputError) as info:
        read_questions(path)
    assert str(info.value).startswith(f"{path}:3: not UTF-8 (byte 0xff")
    result = runner.invoke(app, ["research", "--batch", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"{path}:3: not UTF-8" in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"\n \n", "has no question"), (None, "cannot read the questions file")],
)
def test_an_empty_or_missing_questions_file_is_one_line(
    tmp_path: Path, content: bytes | None, needle: str
) -> None:
    path = tmp_path / "q.txt"
    if content is not None:
        path.write_bytes(content)
    result = runner.invoke(app, ["refine", "--batch", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), max_size=12))
def test_questions_are_the_unique_non_blank_lines_in_order(lines: list[str]) -> None:
    # a pure property of the parser: no file needed beyond the bytes
    import tempfile

    text = "\n".join(lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "q.txt"
        path.write_text(text, encoding="utf-8")
        try:
            parsed = read_questions(path)
        except BatchInputError:
            assert not any(q.strip() for q in text.lstrip("\ufeff").split("\n"))
            return
    texts = [q.text for q in parsed.questions]
    assert len(set(texts)) == len(texts)
    assert all(t and t == t.strip() for t in texts)
    assert len({question_id(t) for t in texts}) == len(texts)


# ── research ──


def _research_model(fail_on: str | None = None) -> ScriptedAdapter:
    llm = ScriptedAdapter()
    if fail_on is not None:
        llm.add(ProviderError(ErrorKind.server_error, "down"), label="scope", contains=fail_on)
    llm.add(scope(3), label="scope")
    llm.add({"results": [{"url": "[1]", "title": "t", "relevance": "high"}]}, label="search")
    llm.add(
        {
            "sourceQuality": "primary",
            "claims": [
                {
                    "claim": "Retries back off.",
                    "quote": "exponential backoff",
                    "importance": "central",
                }
            ],
        },
        label="extract",
    )
    llm.add(PASS, label="verify")
    llm.add(
        {"summary": "retries back off exponentially", "findings": [], "caveats": "c",
         "openQuestions": []},
        label="synthesis",
    )  # fmt: skip
    return llm


def test_research_batch_resumes_without_redoing_finished_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "retry.md").write_text("The retry waits with exponential backoff.", encoding="utf-8")
    questions = tmp_path / "q.txt"
    questions.write_text("How do retries wait?\nWhy back off?\nWhat breaks here?\n", "utf-8")
    out = tmp_path / "reports"
    argv = [
        "research",
        "--batch",
        str(questions),
        "--out",
        str(out),
        "--corpus",
        str(docs),
        "-b",
        "scripted",
    ]

    first = _research_model(fail_on="What breaks here?")
    _use(monkeypatch, first)
    result = runner.invoke(app, [*argv, "--jobs", "2"])
    assert result.exit_code == 1, result.output  # one question failed
    assert "2 done, 1 failed of 3" in result.stderr
    state = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    assert [i["status"] for i in state["items"]] == ["done", "done", "failed"]
    assert "the scope call returned no result" in state["items"][2]["error"]
    done = sorted(p.name for p in out.glob("*.md") if p.name != "summary.md")
    assert done == sorted(f"{question_id(q)}.md" for q in ("How do retries wait?", "Why back off?"))

    second = _research_model()
    _use(monkeypatch, second)
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert "3 done (2 already done), 0 failed of 3" in result.stderr
    # only the failed question ran again
    assert {
        c.prompt.split("## Question\n")[1].split("\n")[0] for c in second.calls_with("scope")
    } == {"What breaks here?"}
    assert (out / f"{question_id('What breaks here?')}.md").exists()
    assert "| 3 | done |" in (out / "summary.md").read_text(encoding="utf-8")


def test_batch_needs_an_out_folder(tmp_path: Path) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("Q?\n", encoding="utf-8")
    result = runner.invoke(app, ["research", "--batch", str(questions)])
    assert result.exit_code == 2
    assert "--batch needs --out DIR" in result.stderr


# ── refine ──


def _refine_model() -> ScriptedAdapter:
    def answer(call: Call) -> str:
        system = " ".join(m.content for m in call.messages if m.role == "system")
        return refine_answer(system, call.prompt)

    return ScriptedAdapter(default=answer)


def test_refine_batch_reviews_first_then_applies_each_once_without_lost_updates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = write_tiny(tmp_path)
    before = json.loads(graph.read_text(encoding="utf-8"))
    questions = tmp_path / "q.txt"
    questions.write_text("\n".join(refine_questions(4)) + "\n", encoding="utf-8")
    out = tmp_path / "reviews"
    argv = ["refine", "--batch", str(questions), "--out", str(out), "--graph", str(graph)]

    llm = _refine_model()
    _use(monkeypatch, llm)
    result = runner.invoke(app, [*argv, "--jobs", "3"])
    assert result.exit_code == 0, result.output
    assert json.loads(graph.read_text(encoding="utf-8")) == before  # dry run: reviews only
    reviews = sorted(out.glob("how-*.md"))
    assert len(reviews) == 4
    assert all("insert_edge" in r.read_text(encoding="utf-8") for r in reviews)
    loop_calls = len(llm.calls)

    result = runner.invoke(app, [*argv, "--apply", "--yes", "--allow-low-confidence"])
    assert result.exit_code == 0, result.output
    assert len(llm.calls) == loop_calls  # applied from the saved reviews, no loop rerun
    after = json.loads(graph.read_text(encoding="utf-8"))
    added = [link for link in after["links"] if link["relation"] == "uses"]
    assert len(added) == 4  # every apply saw the previous one's graph: no lost update
    log = (graph.parent / ".deeprefine" / "apply_log.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in log.splitlines()]
    assert [(r["applied"], r["written"]) for r in rows] == [(1, True)] * 4
    backup = json.loads((graph.parent / ".deeprefine" / "graph.json.bak").read_text("utf-8"))
    assert len(backup["links"]) == len(after["links"]) - 1  # the last apply's exact pre-image
    state = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    assert all(i["applied"] is True for i in state["items"])


def test_refine_batch_apply_needs_yes(tmp_path: Path) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("Q?\n", encoding="utf-8")
    argv = ["refine", "--batch", str(questions), "--out", str(tmp_path / "o"), "--apply"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 2
    assert "add --yes" in result.stderr


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["research", "--plan", "--json"], "--plan, --json"),
        (["refine", "--plan"], "--plan"),
    ],
)
def test_one_question_options_are_refused_with_batch(
    tmp_path: Path, argv: list[str], named: str
) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("Q?\n", encoding="utf-8")
    result = runner.invoke(app, [*argv, "--batch", str(questions), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert f"{named} cannot be combined with --batch" in result.stderr
    assert not (tmp_path / "o").exists()  # refused before anything ran
