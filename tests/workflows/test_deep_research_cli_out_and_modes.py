"""`agentport research`: `--out` checked before any model call, a failed write keeps the
report (stdout) and names `--resume`, small-model mode chosen for `local` and selectable,
`--debug` shows raw answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_deep_research_small_model import chooser
from typer.testing import CliRunner

import agentport.factory
from agentport.catalog import all_backends
from agentport.cli import app
from agentport.cli._run_config import research_config as _config
from agentport.testing import ScriptedAdapter
from agentport.workflows.deep_research import research_config_for

runner = CliRunner()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "retry.md").write_text(
        "# Retry\n\nThe retry policy retries failed calls with exponential backoff and full "
        "jitter.\n\nIt never retries a cancelled call.",
        encoding="utf-8",
    )
    return folder


@pytest.fixture(autouse=True)
def _cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _use(monkeypatch: pytest.MonkeyPatch, adapter: ScriptedAdapter) -> None:
    def create(backend: str | None = None, **_: Any) -> ScriptedAdapter:
        return adapter

    monkeypatch.setattr(agentport.factory, "create_llm_adapter", create)


def _lines(text: str) -> list[str]:
    return [line for line in text.strip().splitlines() if line]


@pytest.mark.parametrize("bad", ["missing-folder/report.md", "is-a-folder"])
def test_unwritable_out_fails_before_any_model_call(
    monkeypatch: pytest.MonkeyPatch, docs: Path, tmp_path: Path, bad: str
) -> None:
    llm = chooser()
    _use(monkeypatch, llm)
    (tmp_path / "is-a-folder").mkdir()
    result = runner.invoke(
        app,
        ["research", "How are calls retried?", "--corpus", str(docs), "--small-model",
         "--out", str(tmp_path / bad)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert llm.calls == []
    assert len(_lines(result.stderr)) == 1
    assert "Traceback" not in result.output


def test_failed_write_prints_the_report_and_names_resume(
    monkeypatch: pytest.MonkeyPatch, docs: Path, tmp_path: Path
) -> None:
    _use(monkeypatch, chooser())

    def refuse(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("agentport.cli._research.atomic_write_text", refuse)
    out = tmp_path / "report.md"
    result = runner.invoke(
        app,
        ["research", "How are calls retried?", "--corpus", str(docs), "--small-model",
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "# Deep Research" in result.stdout
    assert "retry policy" in result.stdout
    last = _lines(result.stderr)[-1]
    assert "--resume" in last
    assert "No space left on device" in last
    assert not out.exists()


def test_small_model_mode_is_automatic_for_local_and_selectable() -> None:
    assert _config("local", False, None).small_model is True
    assert _config("local", False, None, False).small_model is False
    assert _config("local", False, None, False).MAX_FETCH == 5  # caps kept
    assert _config("codex", False, None).small_model is False
    assert _config("codex", False, None, True).small_model is True


@pytest.mark.parametrize("backend", [c.name for c in all_backends()] + ["no-such-backend", None])
def test_the_command_line_and_the_mcp_server_choose_the_same_settings(
    backend: str | None,
) -> None:
    """One rule (`research_config_for`): the MCP server's `research_start` (no flags) gets
    what `agentport research` gets without flags. The two had their own copies."""
    assert research_config_for(backend) == _config(backend, False, None)


def test_small_model_mode_without_corpus_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm = chooser()
    _use(monkeypatch, llm)
    result = runner.invoke(app, ["research", "Q", "--backend", "scripted", "--small-model"])
    assert result.exit_code == 2
    assert "--corpus" in _lines(result.stderr)[0]
    assert llm.calls == []


def test_small_model_flag_runs_choices_only_on_any_backend(
    monkeypatch: pytest.MonkeyPatch, docs: Path
) -> None:
    llm = chooser()
    _use(monkeypatch, llm)
    result = runner.invoke(
        app, ["research", "How are calls retried?", "--corpus", str(docs), "--small-model"]
    )
    assert result.exit_code == 0, result.output
    assert "**Status:** " in result.stdout
    assert all(
        c.config.choices is not None or isinstance(c.config.output_schema, dict) for c in llm.calls
    )


def test_debug_shows_each_calls_raw_answer(monkeypatch: pytest.MonkeyPatch, docs: Path) -> None:
    llm = chooser()
    _use(monkeypatch, llm)
    result = runner.invoke(
        app,
        ["research", "How are calls retried?", "--corpus", str(docs), "--small-model", "--debug"],
    )
    assert result.exit_code == 0, result.output
    assert "agentport: debug: extract call ok" in result.stderr
    assert 'raw answer: \'{"ids": ["S1"]}\'' in result.stderr
    assert "raw answer: 'supported'" in result.stderr
