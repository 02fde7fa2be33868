"""`agentport config [--json]` lists every settings table — `[llm]`, `[budget]`, `[web]`,
`[temporal]` — with the file or variable that chose each value and secrets as `***`; and a
config file's unknown top-level table (a typo such as `[lm]`) is a one-line warning naming
the file and the table with "did you mean", never silently ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentport._trust import UntrustedConfigWarning
from agentport.cli import app
from agentport.config import UnknownConfigWarning, load_settings, warn_unknown
from agentport.policies import BudgetSettings
from agentport.web import WebSettings

runner = CliRunner()
KNOWN = frozenset({"llm", "budget", "web", "temporal", "trusted_projects"})


def _user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(body, encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return config


USER = (
    '[llm]\nbackend = "openai_compat"\ntotal_timeout_s = 90\n'
    '[llm.openai_compat]\nbase_url = "http://127.0.0.1:9/v1"\napi_key = "sk-listing-0123456789"\n'
    '[budget]\ncalls = 40\nwall = "10m"\n'
    '[web]\nsearxng_url = "http://alice:hunter2-pass@127.0.0.1:8888"\nmax_results = 5\n'
    '[temporal]\naddress = "127.0.0.1:7233"\n[temporal.concurrency]\ncodex = 2\n'
)


def _rows(output: str) -> dict[str, dict[str, Any]]:
    return {f"{r['table']}.{r['key']}": r for r in json.loads(output)}


def test_config_lists_budget_web_and_temporal_with_their_origins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = _user_file(tmp_path, monkeypatch, USER)
    monkeypatch.setenv("AGENTPORT_BUDGET_USD", "0.5")
    # an untrusted project file: its [budget] applies (it only lowers spending), its [web]
    # is dropped with a warning, so web keys keep coming from the user's file
    project = Path.cwd() / "agentport.toml"
    project.write_text(
        '[budget]\noutput_tokens = 2000\n[web]\nsearxng_url = "http://127.0.0.1:1"\n',
        encoding="utf-8",
    )
    with pytest.warns(UntrustedConfigWarning, match="web ignored: this project folder"):
        text = runner.invoke(app, ["config"])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    for line in (
        f"llm.backend = openai_compat  ({user})",
        f"llm.total_timeout_s = 90.0  ({user})",
        f"llm.openai_compat.api_key = ***  ({user})",
        f"budget.calls = 40  ({user})",
        f"budget.wall = 600.0  ({user})",
        "budget.usd = 0.5  (environment (AGENTPORT_BUDGET_USD))",
        f"budget.output_tokens = 2000  ({project})",
        "budget.input_tokens = None  (defaults)",
        f"web.max_results = 5  ({user})",
        "web.allow_private = False  (defaults)",
        f"temporal.address = 127.0.0.1:7233  ({user})",
        "temporal.namespace = default  (defaults)",
        f"temporal.concurrency.codex = 2  ({user})",
    ):
        assert line in lines, (line, text.stdout)
    web_url = next(line for line in lines if line.startswith("web.searxng_url = "))
    assert web_url.endswith(f"@127.0.0.1:8888  ({user})")
    assert "hunter2-pass" not in text.stdout
    assert "sk-listing" not in text.stdout

    with pytest.warns(UntrustedConfigWarning, match="web ignored: this project folder"):
        listed = runner.invoke(app, ["config", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = _rows(listed.stdout)
    assert rows["budget.calls"] == {
        "table": "budget",
        "key": "calls",
        "value": 40,
        "from": str(user),
    }
    assert rows["budget.usd"]["from"] == "environment (AGENTPORT_BUDGET_USD)"
    assert rows["budget.input_tokens"]["value"] is None
    assert rows["web.allow_private"]["value"] is False
    assert rows["web.searxng_url"]["from"] == str(user)
    assert rows["temporal.concurrency.codex"]["value"] == 2
    assert rows["llm.backend"] == {
        "table": "llm", "key": "backend", "value": "openai_compat", "from": str(user),
    }  # fmt: skip
    assert rows["llm.openai_compat.api_key"]["value"] == "***"
    assert "hunter2-pass" not in listed.stdout
    assert "sk-listing" not in listed.stdout
    # every field of the three tables is listed, whatever sets it
    for table, fields in (
        ("budget", BudgetSettings.model_fields),
        ("web", WebSettings.model_fields),
    ):
        assert {k for k in rows if k.startswith(f"{table}.")} == {f"{table}.{f}" for f in fields}


def test_config_shows_environment_values_of_the_new_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _user_file(tmp_path, monkeypatch, "")
    monkeypatch.setenv("AGENTPORT_WEB_SEARXNG_URL", "http://127.0.0.1:8888")
    monkeypatch.setenv("AGENTPORT_TEMPORAL_NAMESPACE", "research")
    monkeypatch.setenv("AGENTPORT_BUDGET_WALL", "90s")
    rows = _rows(runner.invoke(app, ["config", "--json"]).stdout)
    assert rows["web.searxng_url"] == {
        "table": "web", "key": "searxng_url", "value": "http://127.0.0.1:8888",
        "from": "environment (AGENTPORT_WEB_SEARXNG_URL)",
    }  # fmt: skip
    assert rows["temporal.namespace"]["from"] == "environment (AGENTPORT_TEMPORAL_NAMESPACE)"
    assert rows["budget.wall"]["value"] == 90.0
    assert rows["budget.calls"] == {
        "table": "budget", "key": "calls", "value": None, "from": "defaults",
    }  # fmt: skip


# ── unknown tables ──


def _env() -> dict[str, str]:
    keep = ("PATH", "HOME")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("AGENTPORT_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return env


def test_a_typo_table_is_one_warning_line_naming_the_file_and_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console script prints it once as `agentport: warning: ...`, and the command runs."""
    user = _user_file(tmp_path, monkeypatch, '[lm]\nbackend = "codex"\n[budget]\ncalls = 3\n')
    (Path.cwd() / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.agentport.webb]\nsearxng_url = "http://127.0.0.1:1"\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "agentport", "config"],
        capture_output=True, text=True, timeout=60, env=_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"agentport: warning: {Path.cwd() / 'pyproject.toml'}: unknown table "
        "[tool.agentport.webb] ignored; did you mean [tool.agentport.web]?",
        f"agentport: warning: {user}: unknown table [lm] ignored; did you mean [llm]?",
    ]
    assert f"budget.calls = 3  ({user})" in done.stdout  # the rest of the file still applies
    assert "llm.backend = auto  (defaults)" in done.stdout  # [lm] was not read as [llm]


def test_unknown_tables_and_keys_warn_in_the_library_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = _user_file(
        tmp_path,
        monkeypatch,
        'backend = "codex"\ntrusted_project = ["/x"]\n[zzqx]\na = 1\n[llm]\nmodel = "m"\n',
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = load_settings()
    messages = [str(w.message) for w in caught if w.category is UnknownConfigWarning]
    assert settings.llm.model == "m"
    assert messages == [
        f"{user}: unknown key backend ignored; did you mean backend in the [llm] table?",
        f"{user}: unknown key trusted_project ignored; did you mean trusted_projects?",
        f"{user}: unknown table [zzqx] ignored (tables: budget, llm, temporal, web)",
    ]


def test_known_tables_never_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_file(tmp_path, monkeypatch, 'trusted_projects = ["/nowhere"]\n' + USER)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownConfigWarning)
        load_settings()


@given(
    st.dictionaries(
        st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=12),
        st.one_of(st.integers(), st.dictionaries(st.just("k"), st.integers(), max_size=1)),
        max_size=6,
    )
)
def test_every_unknown_top_level_name_warns_exactly_once_and_known_ones_never(
    data: dict[str, Any],
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_unknown("cfg.toml", (), data, KNOWN)
    messages = [str(w.message) for w in caught]
    unknown = [k for k in data if k not in KNOWN]
    assert len(messages) == len(unknown)
    for key, message in zip(unknown, messages, strict=True):
        assert message.startswith("cfg.toml: unknown ")
        assert f"[{key}]" in message or f"key {key} " in message
        assert "\n" not in message


def test_a_quoted_key_with_a_newline_stays_on_one_line() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_unknown("cfg.toml", ("tool", "agentport"), {"l\nm": {"a": 1}}, KNOWN)
    assert [str(w.message) for w in caught] == [
        'cfg.toml: unknown table [tool.agentport."l\\nm"] ignored; did you mean '
        "[tool.agentport.llm]?"
    ]
