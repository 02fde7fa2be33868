"""`agentport research`: plan, outputs, resume, and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agentport.factory
from _deep_research_util import PASS, scope
from agentport.cli import app
from agentport.testing import ScriptedAdapter

runner = CliRunner()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "retry.md").write_text(
        "# Retry\n\nThe retry policy waits with exponential backoff and full jitter.",
        encoding="utf-8",
    )
    (folder / "cache.txt").write_text("The cache writes atomically with fsync.", encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def _cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = tmp_path / "agentport-config.toml"
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))


def _model() -> ScriptedAdapter:
    llm = ScriptedAdapter()
    llm.add(scope(3), label="scope")
    llm.add({"results": [{"url": "[1]", "title": "t", "relevance": "high"}]}, label="search")
    llm.add(
        {
            "sourceQuality": "primary",
            "claims": [
                {
                    "claim": "Retries back off exponentially.",
                    "quote": "waits with exponential backoff",
                    "importance": "central",
                }
            ],
        },
        label="extract",
    )
    llm.add(PASS, label="verify")
    llm.add(
        {
            "summary": "cli done: retries back off exponentially",
            "findings": [
                {
                    "claim": "Retries back off exponentially.",
                    "confidence": "medium",
                    "sources": ["corpus://retry.md/0", "corpus://cache.txt/0"],
                    "evidence": "quoted",
                }
            ],
            "caveats": "c",
            "openQuestions": [],
        },
        label="synthesis",
    )
    return llm


def _use(monkeypatch: pytest.MonkeyPatch, *adapters: ScriptedAdapter) -> list[Any]:
    queue = list(adapters)
    made: list[Any] = []

    def create(backend: str | None = None, **_: Any) -> ScriptedAdapter:
        made.append(backend)
        return queue.pop(0)

    monkeypatch.setattr(agentport.factory, "create_llm_adapter", create)
    return made


def _one_line_error(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    assert lines[0].startswith("agentport: ")
    return str(lines[0])


def test_empty_question_is_one_line_exit_2() -> None:
    result = runner.invoke(app, ["research", "   "])
    assert result.exit_code == 2
    assert "question is empty" in _one_line_error(result)


def test_missing_corpus_folder_is_named(tmp_path: Path) -> None:
    result = runner.invoke(app, ["research", "Q", "--corpus", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "nope" in _one_line_error(result)


def test_corpus_without_readable_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.pdf").write_text("x", encoding="utf-8")
    result = runner.invoke(app, ["research", "Q", "--corpus", str(tmp_path)])
    assert result.exit_code == 2
    assert "no readable document" in _one_line_error(result)


def test_plan_prints_the_call_bound_without_creating_an_adapter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTPORT_LLM_BACKEND", "scripted")
    made = _use(monkeypatch)
    result = runner.invoke(app, ["research", "Q", "--plan"])
    assert result.exit_code == 0
    assert "at most 120" in result.stdout
    assert "typical 97" in result.stdout
    assert made == []


def test_plan_uses_the_configured_backend_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    # llm.backend = "local" from configuration: the plan shows the small-model budget the
    # run would use, exactly as `--backend local` does, and never loads the model.
    made = _use(monkeypatch)
    explicit = runner.invoke(app, ["research", "Q", "--plan", "--backend", "local"])
    monkeypatch.setenv("AGENTPORT_LLM_BACKEND", "local")
    configured = runner.invoke(app, ["research", "Q", "--plan"])
    monkeypatch.setenv("AGENTPORT_LLM_BACKEND", "scripted")
    default = runner.invoke(app, ["research", "Q", "--plan"])
    assert explicit.exit_code == configured.exit_code == default.exit_code == 0
    assert configured.stdout == explicit.stdout
    assert configured.stdout != default.stdout
    assert "at most 120" not in configured.stdout
    assert made == []


def test_plan_warns_when_web_mode_would_be_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch)
    result = runner.invoke(app, ["research", "Q", "--plan", "--backend", "echo"])
    assert result.exit_code == 0
    assert "note: backend 'echo' cannot search the web" in result.stdout


def test_web_mode_on_a_backend_without_web_tools_suggests_corpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _use(monkeypatch, ScriptedAdapter())
    result = runner.invoke(app, ["research", "Q", "--backend", "scripted"])
    assert result.exit_code == 2
    assert "--corpus" in _one_line_error(result)


def test_model_returning_invalid_json_ends_with_one_line(
    monkeypatch: pytest.MonkeyPatch, docs: Path
) -> None:
    _use(monkeypatch, ScriptedAdapter(default="not json at all"))
    result = runner.invoke(app, ["research", "Q", "--corpus", str(docs), "-q"])
    assert result.exit_code == 1
    assert "the scope call returned no result" in _one_line_error(result)


def test_corpus_run_writes_markdown_report_atomically(
    monkeypatch: pytest.MonkeyPatch, docs: Path, tmp_path: Path
) -> None:
    _use(monkeypatch, _model())
    out = tmp_path / "report.md"
    result = runner.invoke(
        app, ["research", "How do retries work?", "--corpus", str(docs), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "cli done" in text
    assert "waits with exponential backoff" in text
    assert "## Stats" in text
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".report")] == []


def test_json_output_is_valid_and_camel_case(monkeypatch: pytest.MonkeyPatch, docs: Path) -> None:
    _use(monkeypatch, _model())
    result = runner.invoke(app, ["research", "retry backoff", "--corpus", str(docs), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["summary"].startswith("cli done")
    assert data["stats"]["agentCalls"] >= data["stats"]["agentCallsMade"] - 1
    assert "openQuestions" in data


def test_early_quorum_and_concurrency_flags_reach_the_run(
    monkeypatch: pytest.MonkeyPatch, docs: Path
) -> None:
    llm = _model()
    _use(monkeypatch, llm)
    result = runner.invoke(
        app,
        [
            "research",
            "retry backoff",
            "--corpus",
            str(docs),
            "--json",
            "--early-quorum",
            "--concurrency",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["stats"]["verifyCallsSkipped"] > 0
    assert data["stats"]["maxInFlight"] == 1


def test_resume_replays_an_earlier_runs_calls(monkeypatch: pytest.MonkeyPatch, docs: Path) -> None:
    first, second = _model(), _model()
    _use(monkeypatch, first, second)
    args = ["research", "retry backoff", "--corpus", str(docs), "--json"]
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, [*args, "--resume"])
    assert result.exit_code == 0, result.output
    assert second.calls == []
    assert "resumed" in result.stderr


def test_without_resume_an_old_cache_is_not_replayed(
    monkeypatch: pytest.MonkeyPatch, docs: Path
) -> None:
    first, second = _model(), _model()
    _use(monkeypatch, first, second)
    args = ["research", "retry backoff", "--corpus", str(docs), "--json"]
    assert runner.invoke(app, args).exit_code == 0
    assert runner.invoke(app, args).exit_code == 0
    assert len(second.calls) == len(first.calls)


def test_unwritable_out_path_is_one_line(
    monkeypatch: pytest.MonkeyPatch, docs: Path, tmp_path: Path
) -> None:
    llm = _model()
    _use(monkeypatch, llm)
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    result = runner.invoke(
        app, ["research", "Q", "--corpus", str(docs), "--out", str(blocker / "r.md")]
    )
    assert result.exit_code == 2
    assert "cannot write the report" in result.stderr
    assert "is not a folder" in result.stderr
    assert llm.calls == []  # checked before the first model call
    assert "Traceback" not in result.output
