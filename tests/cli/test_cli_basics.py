"""The `agentport` console script: backends table, complete, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentport.catalog import all_backends
from agentport.core import Param


def _run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentport", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_backends_json_lists_every_backend_with_full_grid(tmp_path: Path) -> None:
    out = _run("backends", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["name"] for r in rows] == [c.name for c in all_backends()]
    for row in rows:
        assert set(row["params"]) == {p.value for p in Param}
        assert set(row["params"].values()) <= {"native", "translated", "ignored"}
        assert {"aliases", "kind", "installed", "version", "verified_against"} <= set(row)


def test_backends_table_shows_letters(tmp_path: Path) -> None:
    out = _run("backends", cwd=tmp_path)
    assert out.returncode == 0
    assert "echo" in out.stdout
    assert "N native" in out.stdout


def test_complete_prints_the_answer(tmp_path: Path) -> None:
    out = _run("complete", "hello world", "--backend", "echo", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello world"


def test_complete_json_and_schema(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object", "required": ["a"]}')
    out = _run(
        "complete", '{"a": 1}', "-b", "echo", "--schema", str(schema), "--json", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["parsed"] == {"a": 1}


def _one_line_error(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


def test_unknown_backend_is_one_line_with_suggestion(tmp_path: Path) -> None:
    line = _one_line_error(_run("complete", "x", "--backend", "ecko", cwd=tmp_path))
    assert "did you mean 'echo'?" in line
    assert line.startswith("agentport: ")


def test_malformed_agentport_toml_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "agentport.toml").write_text("[llm\n")
    line = _one_line_error(_run("complete", "x", cwd=tmp_path))
    assert "agentport.toml: invalid TOML" in line


def test_wrong_type_in_config_is_one_line_naming_field(tmp_path: Path) -> None:
    (tmp_path / "agentport.toml").write_text('[llm]\nmodel = "m"\ntotal_timeout_s = "x"\n')
    line = _one_line_error(_run("complete", "x", cwd=tmp_path))
    assert "agentport.toml: llm.total_timeout_s" in line


def test_bad_schema_file_is_one_line_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    line = _one_line_error(
        _run("complete", "x", "-b", "echo", "--schema", "bad.json", cwd=tmp_path)
    )
    assert "bad.json: invalid JSON" in line
    missing = _one_line_error(
        _run("complete", "x", "-b", "echo", "--schema", "missing.json", cwd=tmp_path)
    )
    assert "missing.json: cannot read schema" in missing


def test_schema_mismatch_is_one_line(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object", "required": ["a"]}')
    line = _one_line_error(
        _run("complete", "plain", "-b", "echo", "--schema", "s.json", cwd=tmp_path)
    )
    assert "schema_mismatch" in line


def test_environment_switches_backend(tmp_path: Path) -> None:
    out = _run("complete", "hi", cwd=tmp_path, env={"AGENTPORT_LLM_BACKEND": "scripted"})
    assert out.stdout.strip() == "ok"


def test_schema_file_that_is_not_a_json_schema_is_one_line(tmp_path: Path) -> None:
    # Regression: `{"type": "nonsense"}` crashed with jsonschema's UnknownType traceback.
    (tmp_path / "ns.json").write_text('{"type": "nonsense"}')
    line = _one_line_error(
        _run("complete", "{}", "-b", "echo", "--schema", "ns.json", cwd=tmp_path)
    )
    assert "ns.json: not a valid JSON schema" in line


# -- polish ----------------------------------------------------------------------


def test_duplicate_choice_is_a_one_line_usage_error(tmp_path: Path) -> None:
    out = _run("complete", "x", "-b", "echo", "--choice", "yes", "--choice", "yes", cwd=tmp_path)
    line = _one_line_error(out)
    assert out.returncode == 2
    assert line == "agentport: --choice: 'yes' is given twice; each allowed answer once"


def test_empty_choice_is_a_usage_error(tmp_path: Path) -> None:
    for value in ("", "  "):
        out = _run("complete", "x", "-b", "echo", "--choice", value, cwd=tmp_path)
        assert _one_line_error(out) == "agentport: --choice: an allowed answer cannot be empty"
        assert out.returncode == 2


def _lines_fit(text: str, width: int) -> None:
    assert text.strip()
    assert max(len(line) for line in text.splitlines()) <= width, text


@pytest.mark.parametrize("width", [60, 80, 120])
def test_backends_table_fits_the_terminal_width(tmp_path: Path, width: int) -> None:
    out = _run("backends", cwd=tmp_path, env={"COLUMNS": str(width)})
    assert out.returncode == 0, out.stderr
    _lines_fit(out.stdout, width)
    names = {line.split()[0] for line in out.stdout.splitlines() if line.strip()}
    assert {c.name for c in all_backends()} <= names  # every name in full, grid included
    assert "sys system_prompt" in out.stdout.replace("\n", " ")  # the grid's legend
    if width >= 80:  # nothing cut: every header whole, no ellipsis in any cell
        assert "…" not in out.stdout, out.stdout
        header = next(line for line in out.stdout.splitlines() if line.startswith("name"))
        for col in ("kind", "paid by", "installed", "version", "verified", "cooldown"):
            assert col in header, header


def test_backends_table_is_one_table_when_wide_enough(tmp_path: Path) -> None:
    out = _run("backends", cwd=tmp_path, env={"COLUMNS": "400"})
    assert out.returncode == 0, out.stderr
    _lines_fit(out.stdout, 400)
    assert "params:" not in out.stdout
    assert "N native" in out.stdout


def _user_config(tmp_path: Path, text: str) -> dict[str, str]:
    config = tmp_path / "user-config.toml"
    config.write_text(text, encoding="utf-8")
    return {"AGENTPORT_CONFIG_FILE": str(config)}


@pytest.mark.parametrize(
    "command",
    [
        ["backends"],
        ["backends", "--json"],
        ["complete", "x", "-b", "echo"],
        ["refine", "How?", "--graph", "graph.json", "-b", "echo"],
    ],
)
def test_a_config_typo_is_reported_by_every_command(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "graph.json").write_text('{"nodes": [], "links": []}', encoding="utf-8")
    env = _user_config(tmp_path, '[llm]\nbackend = "echo"\nbackned = "x"\n')
    out = _run(*command, cwd=tmp_path, env=env)
    line = _one_line_error(out)
    assert out.returncode == 2
    assert "llm.backned" in line or "'backned'" in line


def _acp_installed(tmp_path: Path, config: str) -> object:
    out = _run("backends", "--json", cwd=tmp_path, env=_user_config(tmp_path, config))
    assert out.returncode == 0, out.stderr
    return next(r for r in json.loads(out.stdout) if r["name"] == "acp")["installed"]


def test_acp_is_not_installed_until_a_command_is_configured(tmp_path: Path) -> None:
    assert _acp_installed(tmp_path, "") is False
    assert _acp_installed(tmp_path, '[llm.acp]\ncommand = ["no-such-agent-xyz", "acp"]\n') is False
    assert _acp_installed(tmp_path, f'[llm.acp]\ncommand = ["{sys.executable}", "-V"]\n') is True
    assert _acp_installed(tmp_path, '[llm.acp]\ncommand = "sh -c true"\n') is True
