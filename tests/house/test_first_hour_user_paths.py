"""A new user's first hour, each step the command as a user types it: no traceback, no silent
substitute, a message that says what to do.

Regressions: a refine batch on Temporal with the embedded model failed every question inside
the workflow sandbox; a read-only (or not-a-folder) `.deeprefine/` or batch `--out` ended in
a PermissionError traceback after the model calls; `refine` with a missing graph exited 1
where the docs say 2; `config --help` read "(, , , )"; there was no `--version`;
`research --plan` without a corpus said "mode: corpus"; the local web refusal suggested
`--full-model`, which is refused too; a missing codex read "Scope agent returned no result".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _deeprefine_util import write_tiny
from agentport import __version__
from agentport.cli import app

runner = CliRunner()
Q = "How does run() call helper()?"


def _lines(result: object) -> list[str]:
    stderr = getattr(result, "stderr", "")
    assert "Traceback" not in getattr(result, "output", "")
    return [ln for ln in stderr.strip().splitlines() if ln]


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"agentport {__version__}"


def test_config_help_names_its_tables() -> None:
    result = runner.invoke(app, ["config", "--help"], env={"COLUMNS": "200"})
    assert "[llm], [budget], [web], [temporal]" in result.stdout


def test_refine_with_a_missing_graph_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["refine", Q, "--graph", str(tmp_path / "graph.json")])
    assert result.exit_code == 2
    assert len(_lines(result)) == 1


def test_refine_stops_before_any_call_when_its_state_folder_is_unusable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = write_tiny(tmp_path)
    (graph.parent / ".deeprefine").write_text("not a folder")  # read-only works the same
    called: list[str] = []

    def no_calls(*_: object, **__: object) -> object:
        called.append("adapter")
        raise AssertionError("a model call was set up")

    monkeypatch.setattr("agentport.factory.create_llm_adapter", no_calls)
    result = runner.invoke(app, ["refine", Q, "--graph", str(graph), "--backend", "scripted"])
    assert result.exit_code == 2
    (line,) = _lines(result)
    assert ".deeprefine" in line
    assert called == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_batch_folder_is_one_line_before_any_call(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o500)
    questions = tmp_path / "q.txt"
    questions.write_text("What?\n")
    result = runner.invoke(
        app, ["research", "--batch", str(questions), "--out", str(out), "-b", "scripted"]
    )
    assert result.exit_code == 2
    assert len(_lines(result)) == 1


def test_a_batch_folder_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text("x")
    questions = tmp_path / "q.txt"
    questions.write_text("What?\n")
    result = runner.invoke(
        app, ["research", "--batch", str(questions), "--out", str(out), "-b", "scripted"]
    )
    assert result.exit_code == 2
    assert len(_lines(result)) == 1


def test_refine_batch_with_the_embedded_model_on_temporal_is_submitted(
    tmp_path: Path,
) -> None:
    """Small-model mode runs on Temporal (each question whole on the model's worker): the
    command gets as far as the cluster (here: none listening), and a budget it cannot
    meter there is refused up front."""
    pytest.importorskip("temporalio")
    graph = write_tiny(tmp_path)
    questions = tmp_path / "q.txt"
    questions.write_text(Q + "\n")
    argv = ["refine", "--batch", str(questions), "--out", str(tmp_path / "o"),
            "--graph", str(graph), "--backend", "local", "--temporal", "127.0.0.1:1"]  # fmt: skip
    result = runner.invoke(app, argv)
    assert result.exit_code == 2
    (line,) = _lines(result)
    assert "cannot reach the Temporal server" in line
    result = runner.invoke(app, [*argv, "--budget", "calls=5"])
    (line,) = _lines(result)
    assert "--budget cannot meter small-model mode" in line


def test_plan_without_a_corpus_says_web() -> None:
    result = runner.invoke(app, ["research", "What?", "--plan", "--backend", "local"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("mode: web")


def test_the_local_web_refusal_does_not_suggest_a_mode_that_is_refused_too() -> None:
    result = runner.invoke(app, ["research", "What?", "--backend", "local"])
    assert result.exit_code == 2
    (line,) = _lines(result)
    assert "--corpus" in line
    assert "--full-model" not in line


def test_a_missing_cli_says_it_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no codex anywhere
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nRetries wait with back-off.\n")
    result = runner.invoke(app, ["research", "How?", "--backend", "codex", "--corpus", str(docs)])
    assert result.exit_code != 0
    said = " ".join(_lines(result))
    assert "not_installed" in said
    assert "codex" in said
